"""dask's Client methods about the cluster as a whole (processing, run, run_on_scheduler,
nbytes, get_versions, upload_file, recreate_*_locally, start, wait_for_workers), as dask users
call them: the same outcome on real dask and under the switch."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

import jupyter_refs as jr

pytest.importorskip("distributed")

SNIPPETS = {
    "processing": ("from distributed import Event, wait\nev = Event()\n"
                   "idle = sorted(map(len, client.processing().values()))\n"
                   "f = client.submit(lambda e: e.wait(), ev)\nimport time\n"
                   "while not any(client.processing().values()):\n    time.sleep(0.01)\n"
                   "busy = [f.key in keys for keys in client.processing().values()]\n"
                   "ev.set()\nf.result()\n"
                   "out = (idle, sorted(busy), len(client.processing(list(client.processing())[:1])))"),
    "run": ("import asyncio\nasync def later(x):\n    await asyncio.sleep(0.01)\n    return x + 1\n"
            "def where(dask_worker):\n    return dask_worker.address\n"
            "every = client.run(lambda x, y=10: x + y, 1, y=2)\n"
            "first = sorted(every)[0]\n"
            "out = (sorted(every.values()), list(client.run(where, workers=[first]).values()) == [first], "
            "sorted(client.run(later, 2).values()), client.run(later, 2, wait=False))"),
    "run_on_error": ("def boom():\n    raise ValueError('boom')\n"
                     "out = [type(v).__name__ for v in client.run(boom, on_error='return').values()]"),
    "run_on_scheduler": ("f = client.submit(inc, 1)\nf.result()\n"
                         "out = client.run_on_scheduler(\n"
                         "    lambda dask_scheduler: f.key in dask_scheduler.tasks)"),
    "nbytes": ("from dask.sizeof import sizeof\nfrom distributed import wait\n"
               "incs = client.map(inc, [1, 2, 3])\nwait(incs)\n"
               "out = (client.nbytes(summary=False) == {f.key: sizeof(1) for f in incs}, "
               "client.nbytes(summary=True))"),
    "get_versions": ("v = client.get_versions(check=True, packages=['dask'])\n"
                     "out = (sorted(v), len(v['workers']),\n"
                     "       v['client']['packages']['dask'] == dask.__version__)"),
    "upload_file": ("import os, tempfile, uuid\nname = 'upl_' + uuid.uuid4().hex\n"
                    "path = os.path.join(tempfile.mkdtemp(), name + '.py')\n"
                    "open(path, 'w').write('x = 123')\nclient.upload_file(path)\n"
                    "out = client.submit(lambda: __import__(name).x).result()"),
    "upload_file_syntax_error": ("import os, tempfile, uuid\n"
                                 "name = 'upl_' + uuid.uuid4().hex + '.py'\n"
                                 "path = os.path.join(tempfile.mkdtemp(), name)\n"
                                 "open(path, 'w').write('syntax-error!')\n"
                                 "try:\n    client.upload_file(path)\n"
                                 "except SyntaxError as e:\n    out = type(e)"),
    "recreate_error_not_error": "out = client.recreate_error_locally(client.submit(inc, 1))",
    "start_and_direct": ("client.start()\nclient.start()\n"
                         "out = (client.direct_to_workers, client.submit(inc, 1).result(), "
                         "dask.delayed(inc)(1).compute(direct=True))"),
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_dasks_client_methods_behave_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real


def div(x, y):
    return x / y


@pytest.mark.parametrize("network", ["live", "immediate"])
def test_a_failed_task_is_replayed_here(network):
    """``recreate_error_locally`` runs the task to blame — not the one asked about — with its
    dependencies' values, so its error is raised in the caller; ``recreate_task_locally``
    returns what the task returns.  (Compared with dask's separate-process cluster by
    scripts/dask_client_tests.py: an in-process dask cluster fails here on its own, with
    "'ToPickle' object has no attribute 'dependencies'".)"""
    with jr.model(network=network), jr.Client(n_workers=2, threads_per_worker=1) as client:
        x = client.submit(div, 1, client.submit(lambda: 0))
        y = client.submit(div, 1, 1)
        f = client.submit(sum, [x, y])
        jr.wait(f)
        with pytest.raises(ZeroDivisionError) as e:
            client.recreate_error_locally(f)
        assert e.traceback[-1].name == "div" and f.status == "error"
        assert client.recreate_task_locally(y) == 1.0
        z = client.submit(div, 4, 2)
        g = client.submit(sum, [y, z])
        assert client.recreate_task_locally(g) == g.result() == 3.0
        h = client.submit(sum, [y, client.submit(div, 6, 2)])  # a dependency nobody holds
        h.result()
        client.cluster.run_until_idle(quiet=0.1)
        with pytest.raises(jr.NotModelledError, match="no longer in memory"):
            client.recreate_task_locally(h)  # dask computes it again; the model says so
        assert client.cluster.violations == []


WAIT_FOR_WORKERS = {
    "present": "out = client.wait_for_workers(2)",
    "timeout": "out = client.wait_for_workers(3, timeout=0.2)",
    "timeout_text": "out = client.wait_for_workers(3, timeout='200ms')",
    "not_positive": "out = client.wait_for_workers(0)",
    "after_scale": ("import time\nclient.cluster.scale(3)\nt = time.monotonic()\n"
                    "client.wait_for_workers(3, timeout=10)\n"
                    "out = (len(client.scheduler_info()['workers']), time.monotonic() - t < 10)"),
    "cluster_method": "out = client.cluster.wait_for_workers(1, timeout=1)",
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(WAIT_FOR_WORKERS))
def test_wait_for_workers_as_on_dask(name):
    real, model = on_dask_and_model(WAIT_FOR_WORKERS[name])
    assert model == real
