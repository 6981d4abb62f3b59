"""A retiring worker alone: its heartbeat, the scheduler's "missing", and what its nanny does.

Before PR 8522 (2024.2.1) a worker told "missing" closed without its nanny, which started it
again (``heartbeat_restarts``); since, it closes for good.  A worker without a nanny
(``LocalCluster(processes=False)``) closes in either release.
"""

from __future__ import annotations

import pytest
from sansio import Recorder

from jupyter_refs.protocol import messages as m
from jupyter_refs.protocol.messages import SCHEDULER, Message
from jupyter_refs.protocol.variants import get_variant
from jupyter_refs.protocol.worker import WorkerState


def _retiring(variant: str, nanny: bool) -> tuple[WorkerState, Message, Recorder]:
    rec = Recorder()
    worker = WorkerState("w", get_variant(variant), rec, nanny=nanny)
    [heartbeat] = worker.handle(Message(SCHEDULER, "w", m.WORKER_STATUS_CHANGE, "scheduler->w",
                                        True, (), {"status": "closing_gracefully",
                                                   "stimulus_id": "retire"}))
    assert (heartbeat.op, heartbeat.batched, worker.status) == (
        m.HEARTBEAT_WORKER, False, "closing_gracefully")
    return worker, heartbeat, rec


def _answer(heartbeat: Message, status: str) -> Message:
    return Message(SCHEDULER, "w", m.QUERY_REPLY, heartbeat.channel, False, (), {"status": status})


@pytest.mark.parametrize("variant,nanny,restarts", [("dask-2024.2.0", True, True),
                                                    ("dask-2024.2.0", False, False),
                                                    ("dask-2024.2.1", True, False),
                                                    ("fixed", True, False)])
def test_missing_restarts_the_worker_only_before_2024_2_1_and_with_a_nanny(variant, nanny,
                                                                           restarts):
    worker, heartbeat, rec = _retiring(variant, nanny)
    worker.data["x"], worker.copies["x"] = 1, {1: 1}
    out = worker.handle(_answer(heartbeat, "missing"))
    close = Message(SCHEDULER, "w", m.CLOSE_WORKER, "scheduler->w", True, (),
                    {"reason": "scheduler-remove-worker"})
    if restarts:
        [register] = out
        assert (register.op, register.payload) == (m.REGISTER_WORKER, {"life": 1, "nthreads": 1})
        assert not worker.closed and worker.data == {} and worker.status == "running"
        # The close the scheduler sent to the worker's earlier life does not reach this one.
        assert worker.handle(close) == [] and not worker.closed
        assert rec.of("worker.dropped") == [{"actor": "w", "key": None, "op": m.CLOSE_WORKER,
                                             "msg_id": -1}]
    else:
        assert out == [] and worker.closed and worker.data == {}
        assert rec.of("worker.closed")[0]["reason"] == "worker-heartbeat-missing"


def test_an_ok_heartbeat_changes_nothing_and_the_close_closes():
    worker, heartbeat, rec = _retiring("dask-2024.2.0", True)
    assert worker.handle(_answer(heartbeat, "OK")) == [] and not worker.closed
    worker.handle(Message(SCHEDULER, "w", m.CLOSE_WORKER, "scheduler->w", True, (),
                          {"reason": "scheduler-remove-worker"}))
    assert worker.closed
    # Closed, it reads nothing more: a late "missing" restarts nobody.
    assert worker.handle(_answer(heartbeat, "missing")) == [] and worker.closed
