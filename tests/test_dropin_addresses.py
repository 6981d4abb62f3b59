"""Where the scheduler is, as dask code reads it: ``client.scheduler.address`` (in the
client's repr and ``scheduler_info``) and, in a task, ``get_worker().scheduler.address`` and
``get_client().scheduler.address``; a second client by that address or a scheduler file —
run on real dask and under the switch, with the same outcome (dask's test_repr_sync,
test_get_client_sync and test_write_scheduler_file found them not modelled); and what a task reads of its
worker's state (``get_worker().state``: how many tasks are ready and executing, the threads)."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

import jupyter_refs as jr

pytest.importorskip("distributed")

SNIPPETS = {
    "repr_names_the_scheduler": (
        "a = client.scheduler.address\n"
        "out = (a in str(client), a in repr(client), client.scheduler_info()['address'] == a,"
        " a.split('://')[0], 'threads=2' in repr(client))"),
    "a_task_finds_the_same_scheduler": (
        "from distributed import get_client, get_worker\n"
        "a = client.scheduler.address\n"
        "workers = list(client.scheduler_info()['workers'])\n"
        "out = [client.submit(lambda: (get_worker().scheduler.address, "
        "get_client().scheduler.address, get_worker().address), workers=[w], pure=False)"
        ".result() == (a, a, w) for w in workers]"),
    "a_task_reads_its_workers_state": (
        "from distributed import get_worker\n"
        "def ask():\n"
        "    state = get_worker().state\n"
        "    return (len(state.executing), bool(state.executing), len(state.ready),"
        " state.nthreads)\n"
        "out = client.submit(ask).result()"),
    "get_worker_outside_a_task": "from distributed import get_worker\nout = get_worker()",
    "a_second_client_by_scheduler_file_or_address": (
        "import os, tempfile\nfrom distributed import Client\n"
        "with tempfile.TemporaryDirectory() as d:\n"
        "    path = os.path.join(d, 'scheduler.json')\n"
        "    client.write_scheduler_file(path)\n"
        "    with Client(scheduler_file=path) as c2:\n"
        "        same = (c2.scheduler.address == client.scheduler.address,"
        " c2.submit(inc, 1).result(), c2.scheduler_file == path)\n"
        "    with Client(client.scheduler.address) as c3:\n"
        "        by_address = c3.submit(inc, 2).result()\n"
        "    try:\n        client.write_scheduler_file(path)\n"
        "    except ValueError as e:\n        again = str(e)\n"
        "out = (same, by_address, again, Client.current() is client)"),
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_where_the_scheduler_is_reads_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real


def test_each_cluster_has_an_address_of_its_own():
    with jr.Cluster(network="immediate") as one, jr.Cluster(network="immediate") as two:
        assert one.scheduler_address != two.scheduler_address
        assert one.client().scheduler.address == one.scheduler_address
        with pytest.raises(jr.NotModelledError, match="rpc .ncores"):
            one.client().scheduler.ncores()


def test_what_get_worker_does_not_have_says_so():
    def ask() -> object:
        from jupyter_refs.worker_context import get_worker

        return get_worker().transfer_outgoing_bytes

    def tasks() -> object:
        from jupyter_refs.worker_context import get_worker

        return get_worker().state.tasks

    def ready_ones() -> object:
        from jupyter_refs.worker_context import get_worker

        return list(get_worker().state.ready)

    with jr.Cluster(network="immediate") as cluster:
        client = cluster.client()
        with pytest.raises(jr.NotModelledError, match=r"Worker.transfer_outgoing_bytes"):
            client.submit(ask).result()
        with pytest.raises(jr.NotModelledError, match=r"WorkerState.tasks"):
            client.submit(tasks).result()
        with pytest.raises(jr.NotModelledError, match=r"iterating WorkerState.ready"):
            client.submit(ready_ones).result()
