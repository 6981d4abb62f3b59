"""A long session's memory is bounded by what the user chose (issue 47, "Long sessions").

Each test runs a loop far past the trace's cap and measures, with ``tracemalloc``, what
``jupyter_refs`` allocated and still holds: once past the cap it must level off.  The
caps that bound what is kept of keys long gone are lowered (the constants the defaults are
made of), so that a few seconds of loop pass them many times over.
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from jupyter_refs import checks

OURS = "/jupyter_refs/"


def inc(v: int) -> int:
    return v + 1


def held_by_us() -> int:
    """Bytes allocated by jupyter_refs' code since tracing started, and still alive."""
    gc.collect()
    return sum(stat.size for stat in tracemalloc.take_snapshot().statistics("filename")
               if OURS in stat.traceback[0].filename)


@pytest.mark.dask
def test_a_traced_dask_session_levels_off(monkeypatch):
    """``attach(client, max_events=N)``, nobody looking: once the trace is full, what waits
    for the merge is all that comes and goes.  It was allowed to grow to N events (~150 B
    each, a second trace's worth, held beside the full trace) before a background merge;
    now to N // 16 (at least 1,000)."""
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    from jupyter_refs.dask import attach, remote

    monkeypatch.setattr(checks, "QUIET_KEPT", 0, raising=False)  # quiet keys: N // 50
    events = 8_000
    # dask's own logs keep the last batches of each stream, ours among them: 10, not 1,000,
    # so that they are full from the start and only what N bounds can move.
    with dask.config.set({"distributed.admin.low-level-log-length": 10}), \
            distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        tracemalloc.start()
        try:
            # So is the cache of shared extras (4,096: a session's first 2,000 tasks fill it).
            for i in range(4_096):
                remote.shared(("a transition's extra", i))
            with attach(client, max_events=events, lag=0.05) as tracer:
                samples = []
                for i in range(12):  # ~2,000 events a map: a merge every ~4 maps before
                    client.gather(client.map(inc, range(100), pure=False))
                    if i >= 4:  # the trace is full from the fifth map on
                        samples.append(held_by_us())
                assert tracer.trace.dropped > events
        finally:
            tracemalloc.stop()
    # Today: the waiting rows (~1,000 at most) and the reorder buffer, ~0.3 MB.  Before: up
    # to N waiting rows, ~1.5 MB.
    assert max(samples) - min(samples) < events * 80, samples
