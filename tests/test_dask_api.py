"""The kernel-side cluster's dask API where it is the model's own business.

What dask does is checked against real distributed by ``tests/conformance/``; these tests
cover what only the model has: ``Client()`` with a cluster of its own, the default client
as dask's scheduler, ``NotModelledError`` instead of an AttributeError, protocol names.
"""

from __future__ import annotations

import dask
import pytest
from helpers import inc

import jupyter_refs as jr
from jupyter_refs.protocol.variants import PROTOCOL_NAMES, get_variant


def test_the_default_client_is_dasks_scheduler():
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
    (lambda c: c.run(inc), "Client.run"),
    (lambda c: c.submit(inc, 1, resources={"GPU": 1}), "resources="),
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
