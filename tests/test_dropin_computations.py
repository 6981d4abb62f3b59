"""The scheduler's computations, as a function run on it reads them: one per graph sent to
an idle scheduler, each with the code around the call when
``distributed.diagnostics.computations.nframes`` asks for it — on real dask and under the
switch, the same (dask's test_computation_object_code_dask_compute found them not
modelled)."""

from __future__ import annotations

import inspect

import dask
import pytest

import jupyter_refs as jr

pytest.importorskip("distributed")


def inc(x: int) -> int:
    return x + 1


def computes(client: object) -> int:
    import dask.array as da

    return int(da.ones((10, 10), chunks=(3, 3)).sum().compute())


def history(dask_scheduler: object) -> list[list[list[tuple[str, int, str]]]]:
    """Each computation's code blocks, each frame as (function's first line, line, file)."""
    return [[[(frame.code.splitlines()[0], frame.lineno_relative, frame.filename)
              for frame in block] for block in computation.code]
            for computation in dask_scheduler.computations]


def outcome(nframes: int) -> tuple:
    from distributed import Client

    with Client(n_workers=1, threads_per_worker=1, processes=False,
                dashboard_address=":0") as client:
        with dask.config.set({"distributed.diagnostics.computations.nframes": nframes}):
            total = computes(client)
        later = client.submit(inc, 1).result()
        return total, later, client.run_on_scheduler(history)


@pytest.mark.dask
@pytest.mark.parametrize("nframes", [0, 1, 2])
def test_computations_as_on_dask(nframes):
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    real = outcome(nframes)
    with jr.model():
        model = outcome(nframes)
    assert model == real
    computations = real[2]
    assert len(computations) == 2 and computations[1] == []
    if nframes:
        [block] = computations[0]
        assert len(block) == nframes and block[-1][0] == inspect.getsource(computes).splitlines()[0]
    else:
        assert computations[0] == []


def test_what_a_computation_does_not_have_says_so():
    with jr.Cluster(network="immediate") as cluster:
        client = cluster.client()
        client.submit(inc, 1).result()
        with pytest.raises(jr.NotModelledError, match="Computation.groups"):
            client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.computations[0].groups)
