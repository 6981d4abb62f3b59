"""What a dask user catches, caught under the switch: dask's exception classes (the model's
are subclasses of them once ``distributed`` is imported), a worker's client that cannot
connect in no time, a collection whose persisted futures were released — each run on real
dask and under the switch, with the same outcome (dask's own synchronous tests found them
apart: they caught nothing, or left a refcount the scheduler no longer shared)."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

import jupyter_refs as jr

distributed = pytest.importorskip("distributed")

SNIPPETS = {
    "future_cancelled": ("from distributed.client import FutureCancelledError\n"
                         "f = client.submit(inc, 1)\nf.cancel()\n"
                         "try:\n    f.result()\n"
                         "except FutureCancelledError as e:\n"
                         "    out = ('caught', e.key == f.key, e.reason)"),
    "futures_cancelled_in_wait": ("from distributed.client import FuturesCancelledError\n"
                                  "from distributed import wait\n"
                                  "f = client.submit(inc, 1)\nf.cancel()\n"
                                  "try:\n    wait([f])\n"
                                  "except FuturesCancelledError as e:\n"
                                  "    out = ('caught', [(g.reason, len(g.errors)) "
                                  "for g in e.error_groups])"),
    "closed_client": ("from distributed.client import ClosedClientError\nclient.close()\n"
                      "try:\n    client.submit(inc, 1)\n"
                      "except ClosedClientError as e:\n    out = ('caught', str(e))"),
    # dask's test_release_persisted_collection_sync: the graph is refused, "lost dependencies".
    "released_persisted_collection": (
        "import time\nimport dask.array as da\nfrom distributed import futures_of, wait\n"
        "from distributed.client import FutureCancelledError\n"
        "arr = da.ones((10,), chunks=(10,)).persist()\nwait(arr)\n"
        "[f.release() for f in futures_of(arr)]\n"
        "while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):\n"
        "    time.sleep(0.01)\n"
        "try:\n    arr.compute()\n"
        "except FutureCancelledError as e:\n    out = ('caught', e.reason)"),
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_dasks_exceptions_are_caught_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real and model.startswith("returned ('caught'")


def test_the_models_classes_stay_its_own():
    # Still the model's errors (their text, their %refs --why note), with dask's as bases.
    from distributed.client import FutureCancelledError

    with jr.model(network="immediate"), jr.Client(n_workers=1) as client:
        f = client.submit(inc, 1)
        f.cancel()
        with pytest.raises(FutureCancelledError) as info:
            f.result()
    assert isinstance(info.value, jr.FutureCancelledError)
    assert "%refs --why" in "".join(getattr(info.value, "__notes__", []))
    import pickle

    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is type(info.value) and str(again) == str(info.value)


@pytest.mark.parametrize("network", ["immediate", "live"])
def test_a_released_persisted_collection_computed_leaves_no_refcount(network):
    """dask's ``get`` releases the futures it made once its gather ends, raised or not; and
    a graph refused for lost dependencies is no refcount mismatch: both sides know."""
    import dask.array as da

    with jr.model(network=network), jr.Client(n_workers=2, threads_per_worker=1) as client:
        arr = da.ones((10,), chunks=(10,)).persist()
        jr.wait(arr)
        for f in jr.futures_of(arr):
            f.release()
        with pytest.raises(jr.FutureCancelledError, match="lost dependencies"):
            arr.compute()
        client.cluster.run_until_idle()
        assert dict(client.refcount) == {}
        assert client.cluster.violations == []


def test_a_refused_graph_still_held_is_no_refcount_mismatch():
    with jr.Cluster(protocol="dask", network="immediate") as cluster:
        client = cluster.client()
        x = client.scatter(1)
        x.release()
        f = client.submit(inc, x)  # held: cancelled, "lost dependencies"
        cluster.run_until_idle()
        assert f.status == "cancelled" and client.refcount[f.key] == 1
        assert cluster.violations == []


def inc(x: int) -> int:
    return x + 1


def _worker_client(timeout: object) -> str:
    from distributed import worker_client

    try:
        with worker_client(timeout=timeout) as c:
            return f"got {c.submit(inc, 1).result()}"
    except OSError as e:
        return f"OSError: {str(e).split(' to connect')[0]}"


WORKER_CLIENT = ("from distributed import worker_client\n"
                 "out = (client.submit(f, 0, pure=False).result(), "
                 "client.submit(f, '1s', pure=False).result(), "
                 "client.submit(f, 0, pure=False).result())")


@pytest.mark.dask
@pytest.mark.slow
def test_a_workers_client_made_with_no_time_to_connect_fails_as_on_dask():
    """dask's test_timeout: with worker processes, the first ``worker_client(timeout=0)``
    cannot connect (``OSError``); once the worker has its client, the timeout is moot.  An
    in-process worker uses the user's client, already connected."""
    def outcome(processes: bool) -> tuple[str, ...]:
        from distributed import Client  # the switch's, under it

        with Client(n_workers=1, threads_per_worker=2, processes=processes,
                    dashboard_address=":0") as client:
            env = {"client": client, "f": _worker_client}
            exec(compile(WORKER_CLIENT, "<snippet>", "exec"), env)
            return env["out"]

    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    real = {p: outcome(p) for p in (True, False)}
    with jr.model():
        model = {p: outcome(p) for p in (True, False)}
    assert model == real
    assert real[True][0] == "OSError: Timed out trying" and real[False][0] == "got 2"
