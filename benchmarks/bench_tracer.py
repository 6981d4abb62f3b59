"""Tracer cost: nanoseconds per recorded event and bytes per retained event.

    python benchmarks/bench_tracer.py

Records the event mix a cluster produces (plain events with two extra fields
and message events) into a fresh trace, timing batches of 10,000 records; the
figure is the median over batches.  Memory is measured with tracemalloc over
100,000 retained events, message objects excluded (they are the network's).
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc

from jupyter_refs.protocol.messages import Message
from jupyter_refs.trace import Trace

BATCH = 10_000
BATCHES = 30


def messages(n: int) -> list[Message]:
    msgs = []
    for i in range(n):
        m = Message("client:1", "scheduler", "update-graph", "client:1->scheduler", True,
                    (f"inc-{i % 1000}",), {})
        m.msg_id = i
        msgs.append(m)
    return msgs


def time_per_event() -> tuple[float, float]:
    keys = [f"inc-{i}" for i in range(BATCH)]
    msgs = messages(BATCH)
    plain, msg = [], []
    for _ in range(BATCHES):
        trace = Trace(capacity=BATCH * 2)
        record, record_msg = trace.record, trace.record_msg
        gc.disable()
        t0 = time.perf_counter_ns()
        for key in keys:
            record("client:1", "refcount.inc", key, 0, 1)
        t1 = time.perf_counter_ns()
        for m in msgs:
            record_msg("scheduler", "msg.received", m)
        t2 = time.perf_counter_ns()
        gc.enable()
        plain.append((t1 - t0) / BATCH)
        msg.append((t2 - t1) / BATCH)
    return statistics.median(plain), statistics.median(msg)


def bytes_per_event(n: int = 100_000) -> float:
    keys = [f"inc-{i}" for i in range(1000)]
    msgs = messages(1000)
    trace = Trace(capacity=n)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(n // 2):
        trace.record("client:1", "refcount.inc", keys[i % 1000], 0, 1)
        trace.record_msg("scheduler", "msg.received", msgs[i % 1000])
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(trace) == n
    return (after - before) / n


def main() -> None:
    plain, msg = time_per_event()
    size = bytes_per_event()
    print(f"tracer: record (plain event)    median {plain:7.1f} ns/event  (target <= 1000)")
    print(f"tracer: record (message event)  median {msg:7.1f} ns/event  (target <= 1000)")
    print(f"tracer: retained event          {size:7.1f} bytes/event     (target <= 250)")


if __name__ == "__main__":
    main()
