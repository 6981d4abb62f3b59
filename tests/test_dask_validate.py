"""Trace validation: the model following real dask's message orders (jupyter_refs/dask/validate.py).

Small searches only; ``benchmarks/bench_validate.py`` runs the seed and zoo scenarios at size.
"""

from __future__ import annotations

import pytest

pytest.importorskip("distributed")

from jupyter_refs import replay, zoo  # noqa: E402
from jupyter_refs.dask.explore import replay_dask  # noqa: E402
from jupyter_refs.dask.sim import SimCluster  # noqa: E402
from jupyter_refs.dask.validate import Verdict, dask_deliveries, validate  # noqa: E402

pytestmark = pytest.mark.dask


def test_8576_every_order_agrees_and_some_lose_a_future_on_both():
    result = validate(zoo.scatter_drop_scatter, max_schedules=40)
    assert len(result.pairs) >= 30
    assert result.disagreements == [], result.summary()
    lost = [p for p in result.pairs if p.dask.lost]
    assert lost and all(p.model.lost for p in lost)
    assert any(not p.dask.lost for p in result.pairs)  # and some do not: a verdict per order


def test_each_side_replays_to_its_verdict():
    """A pair names two schedules; each replays, on its own side, to the verdict recorded."""
    result = validate(zoo.cancel_then_same_key, max_schedules=25)
    for pair in result.pairs[:: max(1, len(result.pairs) // 6)]:
        assert Verdict.of(replay(zoo.cancel_then_same_key, pair.model_schedule)) == pair.model
        assert Verdict.of(replay_dask(zoo.cancel_then_same_key, pair.dask_schedule)) == pair.dask
    for pair in result.disagreements:  # listed with both outcomes and both schedules
        assert pair.dask_schedule in str(pair) and pair.model_schedule in str(pair)


def test_the_model_follows_dasks_order_of_shared_messages():
    """Where the model followed an order message for message, its deliveries of the messages
    both sides have are dask's, in dask's order."""
    result = validate(zoo.get_then_unpublish, max_schedules=20)
    followed = [p for p in result.pairs if p.parted is None]
    assert followed
    for pair in followed[:3]:
        dask_run = replay_dask(zoo.get_then_unpublish, pair.dask_schedule)
        model_run = replay(zoo.get_then_unpublish, pair.model_schedule)
        theirs = [d[:3] for d in dask_deliveries(dask_run.sim_trace)]
        ours = [(e.op, e.actor) for e in model_run.trace.events(kind="msg.received")]
        shared = [d for d in ours if any(d == (t[0], t[2]) for t in theirs)]
        assert shared == [(t[0], t[2]) for t in theirs][: len(shared)]


def in_process_get_dataset(owner, reader):
    x = owner.submit(zoo.inc, 122, key="x")
    owner.publish_dataset(x=x)
    del x
    return reader.get_dataset("x").result()


@pytest.mark.parametrize("pickled,outcome", [(True, 123), (False, AttributeError)])
def test_messages_travel_pickled_as_over_tcp(pickled, outcome):
    """In-process comms hand the very objects across: the reader's future is the owner's and
    dask's own _gather fails on it (distributed 2026.8.0, two in-process clients).  Over TCP,
    as users' clusters talk, each message is pickled; the simulator does that by default."""
    sim = SimCluster(workers=1, clients=2, pickled=pickled)
    try:
        if isinstance(outcome, type):
            with pytest.raises(outcome):
                sim.play(in_process_get_dataset)
        else:
            assert sim.play(in_process_get_dataset) == outcome
    finally:
        sim.close(fast=True)


def test_explore_on_a_dask_client_searches_distributed_itself(inproc):
    """``explore(scenario, on=client)``: the search over the installed distributed, with the
    client's cluster's shape (one worker here); the model's own options are refused."""
    from jupyter_refs import explore
    from jupyter_refs.errors import ArgumentTypeError, ArgumentValueError

    result = explore(zoo.scatter_drop_scatter, on=inproc, max_schedules=30, first=True)
    assert result.protocol.startswith("distributed-") and "dangling_future" in \
        result.failures[0].names
    assert result.failures[0].schedule.startswith(result.protocol + "@")
    with pytest.raises(ArgumentValueError, match="protocol= is the model's"):
        explore(zoo.scatter_drop_scatter, on=inproc, protocol="fixed")
    with pytest.raises(ArgumentTypeError, match="on must be a distributed.Client"):
        explore(zoo.scatter_drop_scatter, on="dask")
