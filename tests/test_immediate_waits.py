"""The immediate network, where a run is nested in the delivery that starts it: a task that
waits inside its run (a ``Lock``, an RPC) lets its own messages go first, so a task started
meanwhile does not wait for what the waiter holds; and ``run_on_scheduler`` is a safe point,
as every call is (dask's test_lock_sync said ThreadsExhaustedError there, and
test_worker_clients_do_not_claim_ownership_of_serialize_futures hung)."""

from __future__ import annotations

import time

import pytest

import jupyter_refs as jr

pytest.importorskip("distributed")


def locked_section(i: int) -> int:
    from distributed import Lock, get_client

    with Lock("x"):
        client = get_client()
        assert client.get_metadata("locked") is False
        client.set_metadata("locked", True)
        time.sleep(0.001)
        assert client.get_metadata("locked") is True
        client.set_metadata("locked", False)
    return i


@pytest.mark.parametrize("network", ["immediate", "live"])
def test_tasks_taking_one_lock_in_turn(network):
    with jr.model(network=network):
        from distributed import Client

        with Client(n_workers=2, threads_per_worker=1) as client:
            client.set_metadata("locked", False)
            assert client.gather(client.map(locked_section, range(10))) == list(range(10))
            assert client.cluster.violations == []


def fib(n: int) -> int:
    from distributed import worker_client

    if n < 2:
        return n
    with worker_client() as c:
        return c.submit(fib, n - 1).result() + c.submit(fib, n - 2).result()


def test_a_waiter_still_starts_the_task_it_waits_for():
    with jr.model(network="immediate"):
        from distributed import Client

        with Client(n_workers=1, threads_per_worker=1) as client:
            assert client.submit(fib, 6).result() == 8


@pytest.mark.parametrize("network", ["immediate", "live"])
def test_run_on_scheduler_lets_dropped_futures_go_first(network):
    import dask.array as da

    with jr.model(network=network):
        from distributed import Client, wait

        with Client(n_workers=2, threads_per_worker=1) as client:
            y = da.arange(10, chunks=(4,)).persist()
            wait(y)
            del y
            deadline = time.monotonic() + 10
            while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
                assert time.monotonic() < deadline
                time.sleep(0.01)
