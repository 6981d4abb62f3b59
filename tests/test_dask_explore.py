"""Exploring real distributed itself (jupyter_refs/dask/sim.py, jupyter_refs/dask/explore.py).

Small searches only (each under a second or two): the large ones are
benchmarks/bench_dask_explore.py.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("distributed")

import distributed.metrics  # noqa: E402
from distributed.batched import BatchedSend  # noqa: E402
from distributed.comm import inproc  # noqa: E402

from jupyter_refs import zoo  # noqa: E402
from jupyter_refs.dask import sim as sim_mod  # noqa: E402
from jupyter_refs.dask.explore import (  # noqa: E402
    MESSAGE_NAMES,
    check_determinism,
    explore_dask,
    model_op,
    protocol_label,
    replay_dask,
)
from jupyter_refs.dask.sim import DivergenceError, SimCluster, compare  # noqa: E402
from jupyter_refs.explore import ScheduleError  # noqa: E402


def scatter_drop_scatter_len(client):
    """#8576 as the user meets it: the second scatter's future, used."""
    x = client.scatter(123)
    del x
    y = client.scatter(123)
    return client.submit(len, [y]).result()


def test_a_blocking_call_drives_the_loop_and_everything_is_put_back():
    write, bs_init = inproc.InProc.write, BatchedSend.__init__
    with SimCluster() as sim:
        assert sim.play(lambda c: c.submit(sum, [1, 2]).result()) == 3
        sim.drain()
        ops = [e[4] for e in sim.trace if e[0] in ("delivered", "run")]
        assert "update-graph" in ops and "compute-task" in ops and "execute" in ops
        assert distributed.metrics.time() == sim_mod.EPOCH + sim.loop.now  # virtual
    assert inproc.InProc.write is write and BatchedSend.__init__ is bs_init
    assert distributed.metrics.time is time.time
    assert abs(distributed.metrics.time() - time.time()) < 1


def test_the_same_schedule_twice_gives_the_same_trace():
    result = explore_dask(zoo.scatter_drop_scatter, bound=1, sample=False)
    for failure in result.failures:
        run = check_determinism(zoo.scatter_drop_scatter, failure.schedule)
        assert run.sim_trace
    a = replay_dask(zoo.scatter_drop_scatter, result.failures[0].schedule)
    assert a.violations and a.violations[0].name == "dangling_future"


def test_a_divergence_names_the_first_differing_event():
    a = [("sent", 1, "client:1", "scheduler", "scatter"), ("delivered", 1)]
    b = [("sent", 1, "client:1", "scheduler", "scatter"), ("delivered", 2)]
    with pytest.raises(DivergenceError, match=r"part at event 1: \('delivered', 1\)"):
        compare(a, b)
    with pytest.raises(DivergenceError, match="one run ends"):
        compare(a, a[:1])
    compare(a, list(a))


def test_8576_forms_a_and_b_are_found_from_the_scenario_alone():
    result = explore_dask(zoo.scatter_drop_scatter, bound=1, sample=False)
    assert result.exhaustive and result.protocol == protocol_label()
    texts = [f.violations[0].explanation for f in result.failures]
    assert any("#8576 form A" in t for t in texts), texts
    assert any("#8576 form B" in t for t in texts), texts
    form_a = next(f for f in result.failures if "form A" in f.violations[0].explanation)
    explained = form_a.explain()
    assert "client-releases-keys" in explained and "scheduler: forgotten" in explained


def test_8576_as_the_user_meets_it_the_outcome_depends_on_the_order():
    result = explore_dask(scatter_drop_scatter_len, bound=1, sample=False)
    names = {n for f in result.failures for n in f.names}
    # on real dask the in-order run (the scatter's RPC written before the queued release)
    # already loses the future; an order where the release goes first returns 1
    assert "outcome_differs" in names and "scenario_raised" in names


def test_8215_is_found_from_the_scenario_alone():
    result = explore_dask(zoo.cancel_then_same_key, bound=1, sample=False)
    baseline = next(f for f in result.failures if not f.run.picks or not any(f.run.picks))
    assert "cancelled for reason: unknown" in baseline.raised.message
    differs = [f for f in result.failures if "outcome_differs" in f.names]
    assert differs and differs[0].run.returned == "2"


def test_schedules_belong_to_their_scenario():
    result = explore_dask(zoo.scatter_drop_scatter, max_schedules=3, bound=1, sample=False)
    with pytest.raises(ScheduleError, match="another scenario"):
        replay_dask(zoo.cancel_then_same_key, result.failures[0].schedule)
    with pytest.raises(ScheduleError, match="recorded on"):
        replay_dask(zoo.scatter_drop_scatter, "dask@" + result.failures[0].schedule.split("@")[1])


def test_message_names_map_to_the_models():
    assert model_op("update_data+free-keys") == "update-data+free-keys"
    assert MESSAGE_NAMES["get_data"] == "get-data"


def test_private_api_is_listed_with_the_release_it_was_checked_on():
    assert sim_mod.CHECKED_ON == "2026.8.0"
    assert any("InProc.write" in k for k in sim_mod.PRIVATE_API)
    assert any("_offload_executor" in k for k in sim_mod.PRIVATE_API)


def two_clients(a, b):
    x = a.scatter(7)
    y = b.scatter(7)
    del x
    return b.submit(len, [y]).result()


def test_two_clients_and_two_workers_replay_identically():
    result = explore_dask(two_clients, bound=1, sample=False, workers=2, max_schedules=8)
    assert result.schedules == 8 and not result.failures
    run = check_determinism(two_clients, f"{protocol_label()}@{_fp(two_clients)}/w2c2:1>1")
    assert {e[2] for e in run.sim_trace if e[0] == "sent"} >= {"client:1", "client:2",
                                                               "worker:0", "worker:1"}


def _fp(scenario):
    from jupyter_refs.explore import fingerprint

    return fingerprint(scenario)
