"""Every message the model sends carries what its operation declares (``protocol/payloads.py``).

The declarations are types; this holds the running protocol to them: every zoo race explored
under the release it affects and under ``fixed``, and programs that use every operation
(Variables, Queues, published datasets, cancels, errors, stealing, tasks that submit), with
each message checked as the network accepts it.
"""

from __future__ import annotations

import pytest

from jupyter_refs import Cluster, Queue, Variable, fire_and_forget, get_client, secede, zoo
from jupyter_refs.coordination import Event, Lock, Semaphore
from jupyter_refs.network import Network
from jupyter_refs.protocol import payloads
from jupyter_refs.protocol.messages import Message


@pytest.fixture
def checked(monkeypatch):
    """Check each message the network accepts; count them per (sender kind, op)."""
    seen: set[tuple[str, str]] = set()
    accept = Network.accept

    def checking(self, messages, now_ns):
        for msg in messages:
            payloads.check(msg)
            seen.add((payloads.kind_of(msg.sender), msg.op))
        return accept(self, messages, now_ns)

    monkeypatch.setattr(Network, "accept", checking)
    return seen


@pytest.mark.parametrize("name", sorted(zoo.RACES))
def test_every_zoo_race_sends_only_declared_payloads(checked, name):
    race = zoo.RACES[name]
    for protocol in (race.found_under, "fixed"):
        race.find(protocol, max_schedules=200, processes=1)
    assert checked


def inc(x):
    return x + 1


def boom(x):
    raise ValueError(x)


def submit_inside(x):
    client = get_client()
    secede()
    return client.submit(inc, x).result()


def test_programs_using_every_operation_send_only_declared_payloads(checked):
    with Cluster(protocol="dask", workers=2, network="random", seed=3) as cluster:
        c = cluster.client()
        x = c.scatter(1)
        futures = c.map(inc, range(20))
        c.gather(futures)
        c.who_has(futures[:2]), c.has_what()
        c.cancel(futures[:3])
        with pytest.raises(ValueError):
            c.submit(boom, 1).result()
        assert c.submit(submit_inside, 1).result() == 2
        fire_and_forget(c.submit(inc, 5))
        v = Variable("v", client=c)
        v.set(x)
        v.get()
        v.set(3)
        v.delete()
        q = Queue("q", client=c)
        q.put(x)
        q.put(4)
        q.qsize()
        q.get(), q.get(batch=True)
        c.publish_dataset(ds=x)
        c.list_datasets(), c.get_dataset("ds")
        c.unpublish_dataset("ds")
        e = Event("e", client=c)
        e.set(), e.is_set(), e.wait(0.1), e.clear()
        with Lock("l", client=c):
            pass
        s = Semaphore(2, "s", client=c)
        s.acquire(timeout=1), s.get_value(), s.release(), s.close()
        c.set_metadata(["a", "b"], 1), c.get_metadata(["a"]), c.processing()
        del x, futures
        cluster.run_until_idle()
    for op in ("update-graph", "client-releases-keys", "variable_set", "queue_put",
               "publish_put", "cancel-keys"):
        assert ("client", op) in checked


def test_an_undeclared_field_is_named():
    msg = Message("client:1", "scheduler", "client-releases-keys", "client:1->scheduler", True,
                  ("k",), {"client": "client:1", "gens": {}, "extra": 1})
    with pytest.raises(payloads.PayloadError, match=r"does not declare \['extra'\]"):
        payloads.check(msg)
    del msg.payload["gens"]
    with pytest.raises(payloads.PayloadError, match=r"lacks \['gens'\]"):
        payloads.check(msg)
