"""Chrome trace event JSON (opens in Perfetto and chrome://tracing): an export of the log.

It lives beside the log, not among the views: ``Trace.to_chrome_trace`` writes it,
and the log must not depend on a view.

Layout, one process per family of tracks:

* pid 1 "actors": a track per client, the scheduler, each worker and the
  checks; every event is a 1 µs slice there, messages carry flow arrows from
  the sender's slice to the receiver's, violations are global instants;
* pid 2 "channels": a track per batched stream and per RPC call, a slice per
  message spanning its time in flight;
* pid 3 "keys": a track per key, a slice per scheduler state of its life;
* refcounts are counters (``refcount <key>``, one series per client).

Simulated clocks give many events the same nanosecond, so timestamps are
nudged forward by 1 ns where needed to keep the log's order on screen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class Event(Protocol):
    """What an export reads of a trace event (``jupyter_refs.trace.Event`` has it): declared
    here, so that the log, which exports itself, and its export do not import each other."""

    t_ns: int
    actor: str
    kind: str
    key: str | None
    msg_id: int | None
    channel: str | None
    op: str | None

    def as_dict(self) -> dict[str, Any]: ...

    def describe(self) -> str: ...

    def get(self, name: str, default: Any = None) -> Any: ...

ACTORS, CHANNELS, KEYS = 1, 2, 3
_PROCESS_NAMES = {ACTORS: "actors", CHANNELS: "channels", KEYS: "keys"}


def chrome_trace(events: Iterable[Event], dropped: int = 0, lost: int = 0) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    tids: dict[tuple[int, str], int] = {}

    def tid(pid: int, name: str) -> int:
        t = tids.get((pid, name))
        if t is None:
            t = tids[(pid, name)] = len(tids) + 1
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": t,
                        "args": {"name": name}})
        return t

    sent: dict[int, tuple[float, str]] = {}
    key_state: dict[str, tuple[float, str]] = {}
    last_ts = -1.0
    ts = 0.0
    for e in events:
        ts = max(e.t_ns / 1000.0, last_ts + 0.001)
        last_ts = ts
        args = e.as_dict()
        actor_tid = tid(ACTORS, e.actor)
        if e.kind == "violation":
            out.append({"ph": "i", "s": "g", "name": f"VIOLATION {e.get('name')}", "ts": ts,
                        "pid": ACTORS, "tid": actor_tid, "cat": "violation", "args": args})
            continue
        slice_ = {"ph": "X", "name": e.describe(), "cat": e.kind, "ts": ts, "dur": 0.001,
                  "pid": ACTORS, "tid": actor_tid, "args": args}
        out.append(slice_)
        if e.kind == "msg.sent":
            sent[e.msg_id] = (ts, e.op)
            out.append({"ph": "s", "id": e.msg_id, "name": e.op, "cat": "msg", "ts": ts,
                        "pid": ACTORS, "tid": actor_tid})
        elif e.kind == "msg.received":
            out.append({"ph": "f", "bp": "e", "id": e.msg_id, "name": e.op, "cat": "msg",
                        "ts": ts, "pid": ACTORS, "tid": actor_tid})
            start = sent.pop(e.msg_id, None)
            if start is not None:
                out.append({"ph": "X", "name": f"#{e.msg_id} {e.op}", "cat": "channel",
                            "ts": start[0], "dur": max(ts - start[0], 0.001), "pid": CHANNELS,
                            "tid": tid(CHANNELS, e.channel), "args": {"keys": e.get("keys")}})
        elif e.kind in ("refcount.inc", "refcount.dec"):
            out.append({"ph": "C", "name": f"refcount {e.key}", "ts": ts, "pid": ACTORS,
                        "args": {e.actor: e.get("after")}})
        elif e.kind in ("transition", "scatter.registered"):
            state = "memory" if e.kind == "scatter.registered" else e.get("finish")
            _close_key(out, key_state, tid, e.key, ts)
            if state != "forgotten":
                key_state[e.key] = (ts, state)
    for key in list(key_state):
        _close_key(out, key_state, tid, key, ts)
    return {
        "traceEvents": [
            *({"ph": "M", "name": "process_name", "pid": p, "args": {"name": n}}
              for p, n in _PROCESS_NAMES.items()),
            *out,
        ],
        "displayTimeUnit": "ns",
        "otherData": {"producer": "jupyter_refs", "dropped_events": dropped,
                      "lost_events": lost},
    }


def _close_key(out: list[dict[str, Any]], key_state: dict[str, tuple[float, str]], tid: Any,
               key: str, ts: float) -> None:
    prev = key_state.pop(key, None)
    if prev is not None:
        out.append({"ph": "X", "name": prev[1], "cat": "key", "ts": prev[0],
                    "dur": max(ts - prev[0], 0.001), "pid": KEYS, "tid": tid(KEYS, key),
                    "args": {"key": key, "state": prev[1]}})
