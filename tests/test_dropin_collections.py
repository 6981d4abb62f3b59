"""``client.normalize_collection``: a collection's keys this client holds futures for are
replaced by them, so computing it reuses their results — run on real dask and under the
switch with the same outcome (dask's test_normalize_collection_with_released_futures found
it not modelled)."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

import jupyter_refs as jr

pytest.importorskip("distributed")

SNIPPETS = {
    "array": ("import dask.array as da\nfrom distributed import futures_of, wait\n"
              "x = da.arange(100, chunks=10)\ny = x.persist()\nwait(y)\n"
              "z = client.normalize_collection(x)\n"
              "out = (len(futures_of(x)), len(futures_of(z)), len(z.__dask_graph__()), "
              "int(z.sum().compute()), client.normalize_collection(da.ones(3)) is not None)"),
    "delayed": ("import dask\nfrom distributed import futures_of, wait\n"
                "d = dask.delayed(inc)(1)\ne = dask.delayed(inc)(d)\np = client.persist(d)\n"
                "wait(p)\nn = client.normalize_collection(e)\n"
                "out = (type(n).__name__, len(futures_of(n)), n.compute())"),
    "nothing_held": ("import dask\nd = dask.delayed(inc)(1)\n"
                     "out = client.normalize_collection(d) is d"),
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_normalize_collection_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real and model.startswith("returned")


@pytest.mark.parametrize("network", ["immediate", "live"])
def test_futures_dropped_just_before_are_not_reused(network):
    """``del y`` then ``normalize_collection(x)``: y's keys are let go first, so the
    collection is computed again, not built on futures of released keys (dask's race)."""
    import dask.array as da

    with jr.model(network=network), jr.Client(n_workers=2, threads_per_worker=1) as client:
        x = da.arange(64, chunks=8)
        y = x.persist()
        jr.wait(y)
        held = client.normalize_collection(x)
        assert len(jr.futures_of(held)) == 8
        del y, held
        again = client.normalize_collection(x)
        assert again is x and int(again.sum().compute()) == sum(range(64))
        assert client.cluster.violations == []
