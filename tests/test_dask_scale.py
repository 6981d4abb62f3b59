"""Tracing a dask cluster costs the memory of one trace, not two (issue 19)."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed")

from jupyter_refs.dask import attach, remote  # noqa: E402

pytestmark = pytest.mark.dask


def inc(x: int) -> int:
    return x + 1


def _kept(dask_scheduler) -> int:
    """Events of our topic the scheduler's broker keeps for ``get_events``."""
    return sum(len(msg["events"]) for _, msg in dask_scheduler.get_events(remote.TOPIC))


def test_the_scheduler_keeps_no_copy_of_the_trace(inproc):
    with attach(inproc) as tracer:
        inproc.gather(inproc.map(inc, range(300)))
        tracer.sync()
        assert len(tracer.trace) > 3000  # the batches did arrive ...
        assert inproc.run_on_scheduler(_kept) == 0  # ... and the broker let them go
