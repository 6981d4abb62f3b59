"""What a dask user catches, caught under the switch: dask's exception classes (the model's
are subclasses of them once ``distributed`` is imported), a worker's client that cannot
connect in no time, a collection whose persisted futures were released — each run on real
dask and under the switch, with the same outcome (dask's own synchronous tests found them
apart: they caught nothing, or left a refcount the scheduler no longer shared)."""

from __future__ import annotations

import pytest
from test_dropin import _outcome

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
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    real = _outcome(SNIPPETS[name])
    with jr.model():
        model = _outcome(SNIPPETS[name])
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
