"""dask's adaptive scaling (``LocalCluster.adapt``), as dask users turn it on: the cluster grows
to ``minimum``, grows with its load up to ``maximum``, and shrinks to ``minimum`` when idle —
retiring workers, so what they held is still there — on real dask and under the switch alike.
Each snippet waits for the cluster to reach a size (polling, with a deadline), never a fixed
time."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

import jupyter_refs as jr

pytest.importorskip("distributed")

START = ("import time\nfrom dask.distributed import Client, LocalCluster, Event\n"
         "cluster = LocalCluster(n_workers={n}, threads_per_worker=1, processes=False, "
         "dashboard_address=':0')\nc = Client(cluster)\n"
         "def size():\n    return len(c.scheduler_info()['workers'])\n"
         "def reach(n, seconds=20):\n    deadline = time.monotonic() + seconds\n"
         "    while size() != n and time.monotonic() < deadline:\n        time.sleep(0.02)\n"
         "    return size()\n")
END = "\nc.close()\ncluster.close()\n"

SNIPPETS = {
    "adapt_to_minimum": START.format(n=1) + (
        "a = cluster.adapt(minimum=2, maximum=4, interval='100ms')\n"
        "out = (reach(2), a.state, [d['status'] for _, d in a.log])"
    ) + END,
    # Blocked tasks on one worker: the load asks for more workers, up to maximum.
    "adapt_up_with_load": START.format(n=1) + (
        "ev = Event()\n"
        "fs = c.map(lambda i, e: e.wait(), range(6), e=ev)\n"
        "a = cluster.adapt(minimum=1, maximum=3, interval='100ms', target_duration='100ms')\n"
        "grown = reach(3)\nev.set()\nc.gather(fs)\n"
        "out = (grown, [d for _, d in a.log][:1])"
    ) + END,
    # Idle workers go after wait_count rounds; their data is retired to the one left.
    "adapt_down_when_idle": START.format(n=3) + (
        "fs = c.scatter(list(range(30)))\n"
        "a = cluster.adapt(minimum=1, maximum=3, interval='100ms')\n"
        "shrunk = reach(1)\n"
        "out = (shrunk, sum(c.gather(fs)), [d['status'] for _, d in a.log],\n"
        "       [len(d['workers']) for _, d in a.log])"
    ) + END,
    "adapt_stop_and_replace": START.format(n=1) + (
        "a = cluster.adapt(minimum=1, maximum=2, interval='100ms')\n"
        "b = cluster.adapt(maximum=3)\n"
        "deadline = time.monotonic() + 10\n"
        "while b.state == 'starting' and time.monotonic() < deadline:\n    time.sleep(0.01)\n"
        "out = (a.state, b.state, b.minimum, b.maximum, b.interval)\nb.stop()\nout += (b.state,)"
    ) + END,
    "adapt_bad_maximum": START.format(n=1) + (
        "try:\n    cluster.adapt(maximum=2.5)\n    out = None\n"
        "except ValueError as e:\n    out = str(e)"
    ) + END,
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_adapt_scales_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real


def test_what_adapt_does_not_model_says_so():
    with jr.model():
        from dask.distributed import LocalCluster

        with LocalCluster(n_workers=1, processes=False) as cluster:
            for kwargs in ({"maximum_memory": "1 GiB"}, {"worker_key": len}):
                with pytest.raises(jr.NotModelledError):
                    cluster.adapt(**kwargs)
    with jr.model(network="immediate"):
        from dask.distributed import LocalCluster

        with LocalCluster(n_workers=1, processes=False) as cluster:
            with pytest.raises(jr.NotModelledError, match="stepped network"):
                cluster.adapt(minimum=1)
