"""The switch: dask's own lines run on the kernel-side cluster unchanged, and leaving it
restores dask exactly."""

from __future__ import annotations

import contextlib
import io
import textwrap
import time

import pytest

import jupyter_refs as jr
from jupyter_refs.dropin import MODULES
from jupyter_refs.local_cluster import local_shape

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
        with pytest.raises(jr.NotModelledError, match="distributed.Nanny"):
            distributed.Nanny("x")
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
            cluster.scale(4)  # two workers join, and take work
            assert len(cluster.workers) == 4
            futures = client.map(len, ["a" * i for i in range(40)])
            assert sum(client.gather(futures)) == sum(range(40))
            assert len({w for ws in client.who_has(futures).values() for w in ws}) > 2
            cluster.scale(3)  # down: the newest worker closes (its results are recomputed)
            deadline = time.monotonic() + 10  # the live network delivers its close-stream
            while len(client.scheduler_info()["workers"]) > 3:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            assert list(client.scheduler_info()["workers"]) == ["worker:0", "worker:1", "worker:2"]
            assert sum(client.gather(futures)) == sum(range(40))
            assert client.submit(len, "abc").result() == 3
            assert cluster.violations == []
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


# What a user meets first, each as a dask user writes it (the drop-in issue's list, and the
# futures docs' fib with secede/rejoin and worker_client).  Each runs on a real in-process
# dask cluster and under the switch; the outcomes must be the same.
SNIPPETS = {
    "compute_twice": "d = dask.delayed(inc)(1)\nout = (d.compute(), d.compute())",
    "get_twice": "dsk = {'x': 1, 'y': (inc, 'x')}\nout = (client.get(dsk, 'y'), client.get(dsk, 'y'))",
    "persist_then_compute": "out = dask.delayed(inc)(1).persist().compute()",
    "persist_keeps_futures": ("from distributed import futures_of\nimport dask.array as da\n"
                              "d, = dask.persist(dask.delayed(inc)(1))\n"
                              "x = da.ones((10, 10), chunks=5).persist()\n"
                              "out = (len(futures_of(d)), d.compute(), len(futures_of(x)), "
                              "int(x.sum().compute()))"),
    "array_persist_sum": ("import dask.array as da\n"
                          "out = int(client.persist(da.ones((10, 10), chunks=5)).sum().compute())"),
    "bag": "import dask.bag as db\nout = db.from_sequence(range(10), npartitions=3).map(inc).sum().compute()",
    "compute_in_task": ("def f(x):\n    return dask.delayed(inc)(x).compute()\n"
                        "out = client.submit(f, 1).result()"),
    "fib_secede": ("from distributed import get_client, secede, rejoin\n"
                   "def fib(n):\n    if n < 2:\n        return n\n    c = get_client()\n"
                   "    a, b = c.submit(fib, n - 1), c.submit(fib, n - 2)\n    secede()\n"
                   "    a, b = c.gather([a, b])\n    rejoin()\n    return a + b\n"
                   "out = client.submit(fib, 6).result()"),
    "fib_worker_client": ("from distributed import worker_client\n"
                          "def fib(n):\n    if n < 2:\n        return n\n"
                          "    with worker_client() as c:\n"
                          "        return c.submit(fib, n - 1).result() + c.submit(fib, n - 2).result()\n"
                          "out = client.submit(fib, 6).result()"),
    "string_timeout": "out = client.submit(inc, 1).result(timeout='10s')",
    "short_tracebacks": ("import sys\ndef div(x):\n    return 1 / x\ndef frames(call):\n"
                         "    try:\n        call()\n    except ZeroDivisionError:\n"
                         "        tb, n = sys.exc_info()[2], 0\n        while tb:\n"
                         "            n, tb = n + 1, tb.tb_next\n        return n\n"
                         "f = client.submit(div, 0)\n"
                         "out = (frames(f.result), frames(lambda: client.gather([f])))"),
    "as_completed_errors": ("from distributed import as_completed\n"
                            "def boom(x):\n    raise ValueError(x)\n"
                            "[(f, r)] = as_completed([client.submit(boom, 1)], raise_errors=False,"
                            " with_results=True)\nout = (type(r).__name__, len(r), type(r[1]).__name__)"),
    "as_completed_non_futures": "from distributed import as_completed\nout = list(as_completed([1, 2]))",
    "close_then_submit": "client.close()\nout = client.submit(inc, 1)",
    "scatter_range": "out = type(client.scatter(range(10))).__name__",
    "map_iterator": "out = client.map(inc, iter(range(3)))",
    "wait_collection": ("from distributed import wait\nd = client.persist(dask.delayed(inc)(1))\n"
                        "wait(d)\nout = d.compute()"),
    "future_in_delayed": "out = dask.delayed(inc)(client.scatter(41)).compute()",
    "get_client_outside_tasks": "from distributed import get_client\nout = get_client() is client",
    "client_current": "from distributed import Client\nout = Client.current() is client",
    "future_equality": "f, g = client.submit(inc, 1), client.submit(inc, 1)\nout = (f == g, f == f)",
    "scheduler_info": ("info = client.scheduler_info()\nw = next(iter(info['workers'].values()))\n"
                       "out = (info['type'], info['n_workers'], info['total_threads'], "
                       "len(info['workers']), w['nthreads'], w['name'])"),
}


def _outcome(source: str) -> str:
    import dask
    from distributed import Client

    client = Client(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    # The snippet runs as a script's or a notebook's code: in ``__main__``.  Without a
    # ``__name__`` its functions have no module, and pickle (dask's, each submit) asks every
    # module the process imported for them: 55 s instead of 4 s for dask's futures example.
    env = {"__name__": "__main__", "client": client, "dask": dask, "inc": inc}
    try:
        exec(compile(source, "<snippet>", "exec"), env)
        return f"returned {env['out']!r}"
    except Exception as exc:  # noqa: BLE001 - the outcome compared
        return f"raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        client.close()
        if getattr(client, "cluster", None) is not None:
            client.cluster.close()
        # A program that raised before its own close() leaves its clients and clusters open
        # (a live cluster's network thread runs on): closed here, as the end of a script would.
        for value in list(env.values()):
            if type(value).__name__ in ("Client", "LocalCluster") and value is not client:
                value.close()


def on_dask_and_model(source: str) -> tuple[str, str]:
    """The snippet's outcome on real dask, then under the switch (dask's own logs quiet): the
    comparison every drop-in test makes."""
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    real = _outcome(source)
    with jr.model():
        return real, _outcome(source)


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_what_a_user_meets_first_behaves_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real


def _scale_down_program() -> tuple:
    """Scale a two-worker LocalCluster down to one, the second worker holding a computed
    result and a scattered value (what ``test_scale_down_is_dasks`` runs on both)."""
    import time

    from dask.distributed import Client, LocalCluster

    def inc(x):
        return x + 1

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        info = client.scheduler_info()["workers"]
        last = max(info, key=lambda a: info[a]["name"])
        x = client.submit(inc, 1, key="x", workers=[last], allow_other_workers=True)
        x.result()
        y = client.scatter(10, workers=[last])
        cluster.scale(1)
        deadline = time.monotonic() + 10
        while len(client.scheduler_info()["workers"]) > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        while y.status == "finished" and time.monotonic() < deadline:
            time.sleep(0.01)
        names = [w["name"] for w in client.scheduler_info()["workers"].values()]
        return names, y.status, x.result(timeout=10), client.submit(inc, 5).result()


@pytest.mark.dask
def test_scale_down_is_dasks():
    """distributed 2026.8.0's ``LocalCluster.scale`` down retires nothing (``SpecCluster`` hands
    ``retire_workers`` its spec names, not addresses): the newest worker closes, its result is
    recomputed, its scattered value is lost.  The model does the same."""
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    real = _scale_down_program()
    with jr.model():
        modelled = _scale_down_program()
    assert real == modelled == ([0], "cancelled", 2, 6)
