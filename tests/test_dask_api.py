"""The kernel-side cluster's dask API where it is the model's own business.

What dask does is checked against real distributed by ``tests/conformance/``; these tests
cover what only the model has: ``Client()`` with a cluster of its own, the default client
as dask's scheduler, ``NotModelledError`` instead of an AttributeError, protocol names.
"""

from __future__ import annotations

import gc

import dask
import pytest
from helpers import inc

import jupyter_refs as jr
from jupyter_refs.protocol.variants import PROTOCOL_NAMES, get_variant


def test_the_default_client_is_dasks_scheduler():
    # A client an earlier test dropped without closing is still the default until the
    # collector frees it (an older open client becomes the default again, as in dask).
    gc.collect()
    delayed = dask.delayed
    with jr.Cluster(protocol="dask", workers=2, network="immediate") as cluster:
        client = jr.Client(cluster)
        total = delayed(sum)([delayed(inc)(i) for i in range(4)])
        assert total.compute() == 10  # ran here: its keys went through the scheduler
        assert any(e.key and e.key.startswith("sum-") for e in cluster.trace.events(kind="transition"))
        client.close()
    # Closed, its cluster too: dask computes with its own scheduler again.
    assert delayed(inc)(1).compute() == 2


def test_client_without_a_cluster_starts_its_own():
    with jr.Client() as client:
        assert client.submit(inc, 1).result() == 2
        cluster = client.cluster
        assert cluster.variant.name == "dask" and not cluster.closed
    assert cluster.closed


@pytest.mark.parametrize("call, feature", [
    (lambda c: c.dump_cluster_state(), "Client.dump_cluster_state"),
    (lambda c: c.submit(inc, 1, actor=True), "actors"),  # resources= is modelled now
    (lambda c: c.submit(inc, 1, workers=["nowhere"]), "workers='nowhere'"),
    (lambda c: jr.Client("tcp://127.0.0.1:8786"), "Client('tcp://127.0.0.1:8786')"),
])
def test_what_is_not_modelled_says_so(call, feature):
    with jr.Cluster(network="immediate") as cluster:
        client = cluster.client()
        x = client.scatter(1)
        with pytest.raises(jr.NotModelledError, match="does not model") as info:
            call(client)
        assert info.value.feature == feature and "docs/conformance.md" in str(info.value)
        # Nothing in the cluster or the trace was lost by the bad call.
        assert x.result() == 1 and cluster.violations == []


def test_protocol_names_and_the_legacy_alias():
    assert {"dask", "dask-2024.7", "racy-ids", "fixed", "legacy"} <= set(PROTOCOL_NAMES)
    assert get_variant("legacy") is get_variant("dask")
    assert get_variant("dask-2024.7").desire_creates and not get_variant("dask").desire_creates
    with jr.Cluster(protocol="legacy", network="immediate") as cluster:
        assert cluster.variant.name == "dask"


def test_refcount_is_a_mapping_that_counts_every_reference():
    with jr.Cluster(network="immediate") as cluster:
        client = cluster.client()
        x, y = client.scatter(5), client.scatter(5)
        assert client.refcount[x.key] == 2 and x.key in client.refcount
        assert client.refcount["nothing"] == 0 and client.refcount.get("nothing") is None
        del y
        assert client.refcount[x.key] == 1


def test_dasks_scheduler_is_given_back_right_when_dask_clients_close_in_between(monkeypatch):
    """A kernel-side client made while a dask Client is open and never closed (the explorer's
    are not), then the dask Client closes, then another kernel-side client opens and closes:
    dask must not be left asking for a distributed Client that is gone.  Each setting is given
    back only if it is still the one that kernel-side client made; one a dask Client changed
    meanwhile is that Client's to restore."""
    distributed = pytest.importorskip("distributed")
    from jupyter_refs import client as kernel_side
    from jupyter_refs import client_parts

    # This test's own registry of default clients, and dask's setting as it found it.
    monkeypatch.setattr(client_parts, "_default", [])
    monkeypatch.setattr(kernel_side, "_dask_config", [])
    delayed = dask.delayed

    def where() -> str:
        try:
            return distributed.get_worker().address
        except ValueError:
            return "here"

    with dask.config.set(scheduler=None):
        with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                      dashboard_address=":0") as lc, distributed.Client(lc) as dc:
            first = jr.Cluster(protocol="dask", network="immediate")
            first.client()  # never closed
            first.close()
            # No kernel-side client is open: dask's own Client computes, as without us.
            assert delayed(where)().compute() in dc.scheduler_info()["workers"]
        with jr.Cluster(protocol="dask", network="immediate") as cluster:
            second = jr.Client(cluster)
            assert delayed(inc)(1).compute() == 2
            assert any((e.key or "").startswith("inc-")  # it ran on the kernel-side cluster
                       for e in cluster.trace.events(kind="transition"))
            second.close()
        assert dask.config.get("scheduler", None) is None
        assert delayed(inc)(1).compute() == 2  # raised "no Client active" before


def test_dask_clients_closed_in_the_order_they_were_made_leave_no_stale_setting(monkeypatch):
    """The order the full suite met: two dask Clients overlap, with a kernel-side client
    (never closed) made while the first is open; the first closes, then the second, which
    gives back the kernel-side setting — whose own "before" is the first Client's
    ``dask.distributed``, gone by now.  When the last kernel-side client closes, dask must
    compute again (dask alone, closing two Clients in this order, is left asking for a
    Client: a flaw the model does not copy, since nothing would compute)."""
    distributed = pytest.importorskip("distributed")
    from jupyter_refs import client as kernel_side
    from jupyter_refs import client_parts

    monkeypatch.setattr(client_parts, "_default", [])
    monkeypatch.setattr(kernel_side, "_dask_config", [])
    with dask.config.set(scheduler=None), distributed.LocalCluster(
            n_workers=1, processes=False, threads_per_worker=1, dashboard_address=":0") as lc:
        d1 = distributed.Client(lc)
        first = jr.Cluster(protocol="dask", network="immediate")
        first.client()  # never closed, as the explorer's
        d2 = distributed.Client(lc)
        d1.close()
        d2.close()
        first.close()
        with jr.Cluster(protocol="dask", network="immediate") as cluster:
            jr.Client(cluster).close()
        assert dask.delayed(inc)(1).compute() == 2  # raised "no Client active" before
