"""dask's logs (``Client.get_scheduler_logs``, ``Client.get_worker_logs``,
``LocalCluster.get_logs``), as dask users read them: the same shape and lines on real dask and
under the switch.  dask's logs are its loggers' records, so each snippet sets ``distributed``'s
level to ``info`` (distributed's default; the harness quiets it) before it starts a cluster."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

import jupyter_refs as jr
from jupyter_refs.protocol.logs import NodeLog

pytest.importorskip("distributed")

START = ("import logging\nlogging.getLogger('distributed').setLevel(logging.INFO)\n"
         "from dask.distributed import Client, LocalCluster\n"
         "cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, "
         "dashboard_address=':0')\nc = Client(cluster)\n"
         "addresses = sorted(c.scheduler_info()['workers'])\n")
END = ("\nc.close()\ncluster.close()\n"
       "logging.getLogger('distributed').setLevel(logging.CRITICAL)\n")

SNIPPETS = {
    # Newest first, (level, line) pairs in dask's format; the lines a start writes.
    "scheduler_logs": START + (
        "logs = c.get_scheduler_logs()\n"
        "lines = [line.split(' - ', 3)[3] for _, line in reversed(logs)]\n"
        "out = (type(logs).__name__, {len(entry) for entry in logs}, {lvl for lvl, _ in logs},\n"
        "       {line.split(' - ')[1] for _, line in logs}, lines[0],\n"
        "       sum(line.startswith('Register worker addr:') for line in lines),\n"
        "       sum(line.startswith('Receive client connection:') for line in lines),\n"
        "       len(c.get_scheduler_logs(n=2)), c.get_scheduler_logs(n=1)[0] == logs[0])"
    ) + END,
    "worker_logs": START + (
        "logs = c.get_worker_logs()\n"
        "one = c.get_worker_logs(n=3, workers=addresses[:1])\n"
        "out = (sorted(logs) == addresses, {type(v).__name__ for v in logs.values()},\n"
        "       {line.split(' - ')[1] for v in logs.values() for _, line in v},\n"
        "       all(any('Start worker at:' in line for _, line in v) for v in logs.values()),\n"
        "       all(any('Registered to:' in line for _, line in v) for v in logs.values()),\n"
        "       list(one) == addresses[:1], len(one[addresses[0]]),\n"
        "       c.get_worker_logs(nanny=True))"
    ) + END,
    # A worker scaled away writes that it stops; the scheduler, that it removed it.
    "logs_after_scale_down": START + (
        "import time\ncluster.scale(1)\ndeadline = time.monotonic() + 10\n"
        "while len(c.scheduler_info()['workers']) > 1 and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "stopped = any('Stopping worker at' in line\n"
        "              for v in c.get_worker_logs().values() for _, line in v)\n"
        "removed = [line for _, line in c.get_scheduler_logs() if 'Remove worker addr:' in line]\n"
        "out = (len(c.get_worker_logs()), len(removed), 'name: 1' in removed[0])"
    ) + END,
    "cluster_get_logs": START + (
        "logs = cluster.get_logs()\n"
        "only = cluster.get_logs(cluster=False, workers=addresses[:1])\n"
        "out = (type(logs).__name__, sorted(logs)[:2], len(logs), logs['Cluster'],\n"
        "       {type(v).__name__ for v in logs.values()},\n"
        "       logs['Scheduler'].splitlines()[-1].endswith('State start'),\n"
        "       list(only) == ['Scheduler', addresses[0]],\n"
        "       list(cluster.get_logs(cluster=False, scheduler=False, workers=False)))"
    ) + END,
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_logs_read_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real


def test_a_node_log_is_bounded_newest_first_and_filtered_by_its_loggers_level():
    import logging

    logger = logging.getLogger("jupyter_refs.test.nodelog")
    logger.setLevel(logging.INFO)
    times = iter(range(100, 200))
    log = NodeLog(logger.name, maxlen=3, clock=lambda: float(next(times)))
    for i in range(5):
        log.info("line %d", i)
    assert [line.rsplit(" - ", 1)[1] for _, line in log.get()] == ["line 4", "line 3", "line 2"]
    assert [t for t, _, _ in log.get(timestamps=True)] == [104.0, 103.0, 102.0]
    assert len(log.get(start=103.5)) == 1 and len(log.get(n=2)) == 2
    logger.setLevel(logging.WARNING)  # as dask's deque handler: below the level, not kept
    log.info("quiet")
    assert len(log.entries) == 3


def test_worker_logs_with_nannies_say_the_nannies_logs_are_not_modelled():
    with jr.model():
        from dask.distributed import Client, LocalCluster

        with LocalCluster(n_workers=1, processes=True) as cluster, Client(cluster) as c:
            with pytest.raises(jr.NotModelledError, match="nanny"):
                c.get_worker_logs(nanny=True)
