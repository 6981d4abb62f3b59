"""dask's statistical profile (``Client.profile``), as dask users read it: the same tree on
real dask and under the switch — empty before a worker's first cycle, then the task's
function with its samples, by key prefix and by worker.  A profile is a sample, so the
snippets compare its shape and where the time went, never the counts."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

import jupyter_refs as jr

pytest.importorskip("distributed")

# A task that spins for 0.3 s in a function of the snippet's own; the profile is read once
# the worker's first cycle (1 s) has put it in the history.
BUSY = ("import time\n"
        "def spin(x):\n    t = time.time()\n    while time.time() - t < 0.3:\n        pass\n"
        "    return x\n"
        "def names(node):\n"
        "    return {node['description']['name']} | {n for c in node['children'].values()\n"
        "                                             for n in names(c)}\n"
        "empty = client.profile()\n"
        "client.submit(spin, 1).result()\n"
        "deadline = time.monotonic() + 10\n"
        "while client.profile()['count'] == 0 and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n")

SNIPPETS = {
    "profile_shape": BUSY + (
        "p = client.profile()\n"
        "out = (sorted(empty), empty['count'], empty['children'], p['identifier'],\n"
        "       p['count'] > 0, 'spin' in names(p), sorted(p['description']))"),
    "profile_by_key_and_worker": BUSY + (
        "by_key = client.profile(key='spin')\nnone = client.profile(key='other')\n"
        "by_worker = client.profile(merge_workers=False)\n"
        "out = (by_key['count'] > 0, 'spin' in names(by_key), none['count'],\n"
        "       sorted(by_worker) == sorted(client.scheduler_info()['workers']),\n"
        "       sum(v['count'] for v in by_worker.values()) == client.profile()['count'],\n"
        "       client.profile(start=time.time() + 3600)['count'])"),
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_profile_reads_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real


def test_profile_plots_and_the_schedulers_own_say_they_are_not_modelled():
    with jr.model():
        from dask.distributed import Client

        with Client(n_workers=1, threads_per_worker=1, processes=False) as c:
            for kwargs in ({"plot": True}, {"scheduler": True}, {"server": True}):
                with pytest.raises(jr.NotModelledError, match="Client.profile"):
                    c.profile(**kwargs)


def test_profile_on_a_stepped_network_says_it_has_no_clock():
    with jr.Cluster(network="immediate") as cluster:
        with pytest.raises(jr.NotModelledError, match="stepped network"):
            cluster.client().profile()
