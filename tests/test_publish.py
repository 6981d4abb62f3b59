"""Published datasets behave as on dask 2026.8.0: the same program, run on a real in-process
dask cluster and under the switch, gives the same outcome (``test_dropin._outcome``)."""

from __future__ import annotations

import textwrap

import pytest

import jupyter_refs as jr

pytest.importorskip("distributed")
from test_dropin import _outcome  # noqa: E402 - the harness the switch's snippets use

PROGRAMS = {
    "three_forms": """
        x = client.submit(inc, 1, key="x")
        client.publish_dataset(x, name="ds")
        client.publish_dataset(a=1, b=[x, 2])
        client.publish_dataset({"d": {"k": x}})
        b, (a, d) = client.get_dataset("b"), client.get_dataset(["a", "d"])
        out = (client.list_datasets(), list(client.datasets), len(client.datasets),
               "ds" in client.datasets, "zz" in client.datasets, client.get_dataset("ds").result(),
               b[0].result(), b[1], a, d["k"].result())
    """,
    "several_values_one_name": """
        client.publish_dataset(1, 2, name="m")
        out = client.get_dataset("m")
    """,
    "async_for_on_a_synchronous_client": """
        client.publish_dataset(a=1)
        out = (list(client.datasets), len(client.datasets))
        client.datasets.__aiter__()
    """,
    "already_exists": """
        client.publish_dataset(x=1)
        client.publish_dataset(x=2)
    """,
    "override": """
        client.publish_dataset(x=1)
        client.publish_dataset(x=2, override=True)
        out = client.get_dataset("x")
    """,
    "name_without_value": "client.publish_dataset(name='q')",
    "value_without_name": "client.publish_dataset(1)",
    "two_dicts": "client.publish_dataset({'x': 1}, {'y': 2})",
    "missing": "client.get_dataset('nope')",
    "missing_in_a_list": "client.publish_dataset(a=1)\nclient.get_dataset(['a', 'nope'])",
    "missing_with_default": "out = (client.get_dataset('nope', default=7), "
                            "client.get_dataset(['nope'], default=None))",
    "unpublish": """
        client.publish_dataset(a=1, b=2, c=3)
        client.unpublish_dataset("nope")
        client.unpublish_dataset(["a", "b"])
        out = client.list_datasets()
    """,
    "mapping": """
        client.datasets["e"] = 5
        got = client.datasets["e"]
        del client.datasets["e"]
        out = (got, list(client.datasets))
        client.datasets["e"]
    """,
    "a_persisted_collection": """
        import dask.array as da
        client.publish_dataset(arr=client.persist(da.arange(6, chunks=2)))
        out = int(client.get_dataset("arr").sum().compute())
    """,
    "an_unpersisted_collection": """
        d = dask.delayed(inc)(1)
        client.publish_dataset(d=d)
        out = client.get_dataset("d").compute()
    """,
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_dataset_program_behaves_as_on_dask(name):
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    code = textwrap.dedent(PROGRAMS[name])
    real = _outcome(code)
    with jr.model():
        model = _outcome(code)
    assert model == real


def test_a_reader_holds_its_own_reference_and_the_dataset_outlives_the_publisher():
    """Over a network (the model's), a dataset's future comes back as a new object of the
    reader's, with a reference of its own; the dataset keeps the key after its publisher
    let go, until it is unpublished."""
    with jr.Cluster(network="immediate") as cluster:
        publisher, reader = cluster.client(), cluster.client()
        x = publisher.submit(sum, [1, 2], key="x")
        publisher.publish_dataset(x=x)
        del x
        cluster.run_until_idle()
        assert cluster.scheduler.tasks["x"].who_wants == {"published-x"}
        y = reader.get_dataset("x")
        assert y.client is reader and reader.refcount["x"] == 1 and y.result() == 3
        reader.unpublish_dataset("x")
        cluster.run_until_idle()
        assert cluster.scheduler.tasks["x"].who_wants == {reader.name}
        del y
        cluster.run_until_idle()
        assert "x" not in cluster.scheduler.tasks and cluster.violations == []
