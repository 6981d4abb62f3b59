"""The switch: dask's own lines run on the kernel-side cluster unchanged, and leaving it
restores dask exactly."""

from __future__ import annotations

import contextlib
import io
import textwrap

import pytest

import jupyter_refs as jr
from jupyter_refs.dropin import MODULES, local_shape

distributed = pytest.importorskip("distributed")
import dask.distributed  # noqa: E402 - after the skip

# A program as dask's futures documentation writes it (docs/source/futures.rst, "Submit
# tasks" and "Wait on futures"; dask-tutorial's 05_futures first cells): nothing of ours in it.
DASK_DOCS = textwrap.dedent("""
    from dask.distributed import Client, LocalCluster, wait, as_completed, get_client
    import distributed

    def inc(x):
        return x + 1

    def add(x, y):
        return x + y

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                           dashboard_address=":0")
    client = Client(cluster)
    a = client.submit(inc, 10)
    b = client.submit(inc, 20)
    print(a.result(), b.result())
    L = client.map(inc, range(10))
    wait(L)
    print(sorted(f.result() for f in L), all(f.status == "finished" for f in L))
    total = client.submit(sum, L)
    print(total.result(), client.gather(client.map(add, L, L)))
    print(sorted(f.result() for f in as_completed(client.map(inc, range(5)))))
    print(isinstance(total, distributed.Future), get_client() is client)
    x = client.scatter([1, 2, 3])
    print(type(x).__name__, client.submit(sum, x).result())
    client.close()
    cluster.close()
""")


def _run(source: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<dask docs>", "exec"), {"__name__": "__docs__"})
    return out.getvalue()


def test_leaving_the_switch_restores_dask_exactly():
    before = {name: dict(vars(__import__(name, fromlist=["_"]))) for name in MODULES}
    with jr.model():
        assert distributed.Client is jr.Client and dask.distributed.LocalCluster is jr.LocalCluster
        assert distributed.Future is jr.Future
        with pytest.raises(jr.NotModelledError, match="distributed.Lock"):
            distributed.Lock("x")
    after = {name: dict(vars(__import__(name, fromlist=["_"]))) for name in MODULES}
    assert before.keys() == after.keys()
    for name in MODULES:
        assert before[name].keys() == after[name].keys()
        assert all(after[name][k] is v for k, v in before[name].items()), name


@pytest.mark.dask
def test_a_program_of_dasks_docs_runs_unchanged_and_prints_what_dask_prints():
    real = _run(DASK_DOCS)
    with jr.model(network="live"):
        model = _run(DASK_DOCS)
    assert model == real
    assert "True True" in model  # a distributed.Future, and get_client() the default client


def test_the_first_cells_users_write():
    with jr.model():
        from dask.distributed import Client, LocalCluster

        with Client() as client:  # dask: a LocalCluster shaped by the cores
            assert len(client.cluster.workers) >= 1 and client.submit(len, "ab").result() == 2
        with Client(n_workers=3, threads_per_worker=1) as client:
            assert len(client.cluster.workers) == 3
        with Client(processes=False) as client:
            assert len(client.cluster.workers) == 1
        with LocalCluster(n_workers=2, threads_per_worker=2) as cluster, Client(cluster) as client:
            cluster.scale(2)  # the same size: nothing to do
            with pytest.raises(jr.NotModelledError, match="scale"):
                cluster.scale(5)
            assert client.submit(len, "abc").result() == 3  # the bad call lost nothing
        with pytest.raises(jr.NotModelledError, match="worker_class="):
            LocalCluster(worker_class=object)


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 6, 8, 12, 16, 32, 64])
def test_the_shape_of_a_local_cluster_is_dasks(cores):
    from distributed.deploy.utils import nprocesses_nthreads

    assert local_shape(None, None, True, cores) == nprocesses_nthreads(cores)
    assert local_shape(None, None, False, cores) == (1, cores)
    assert local_shape(4, None, True, cores)[1] == max(1, -(-cores // 4))


def test_futures_of_looks_inside_collections():
    with jr.model(network="immediate"), jr.Client(processes=False) as client:
        x, y = client.scatter([1, 2])
        assert jr.futures_of({"a": [x, (y, 3)]}) == [x, y]
        from dask import delayed

        total = delayed(sum)([x, y])
        assert {f.key for f in jr.futures_of(total)} == {x.key, y.key}


@pytest.mark.parametrize("network", ["immediate", "live", "random"])
def test_the_same_graph_twice(network):
    """``d.compute()`` twice, and ``client.get`` twice: the first result's future is dropped
    just before the second call takes the same key — which must still be computed or kept,
    never left waiting for a graph nobody sent (it hung on live, and raised on immediate)."""
    import dask

    for _ in range(10 if network != "immediate" else 1):
        with jr.Cluster(protocol="dask", workers=2, network=network) as cluster:
            client = jr.Client(cluster)
            d = dask.delayed(inc)(1)
            assert (d.compute(), d.compute()) == (2, 2)
            graph = {"x": 1, "y": (inc, "x")}
            assert (client.get(graph, "y"), client.get(graph, "y")) == (2, 2)
            assert cluster.violations == []
            client.close()


def inc(x):
    return x + 1
