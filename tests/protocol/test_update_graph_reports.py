"""A key already done when another client asks for it is reported to that client at once."""

from __future__ import annotations

from jupyter_refs.protocol import messages as m
from jupyter_refs.protocol.scheduler import SchedulerState
from jupyter_refs.protocol.variants import DASK


def _graph(client: str, key: str) -> m.Message:
    spec = {"func": b"", "args": b"", "deps": (), "allocated": False, "carries": (),
            "workers": None, "retries": None, "priority": 0}
    return m.Message(client, m.SCHEDULER, m.UPDATE_GRAPH, m.stream_channel(client, m.SCHEDULER),
                     True, (key,), {"client": client, "tasks": {key: spec}, "gens": {key: 1}})


def test_a_second_client_asking_for_a_key_in_memory_hears_key_in_memory():
    """dask's update_graph reports a done key to the client asking now (``report_on_key``):
    two tasks submitting one pure key (the docs' fib) — the second waited for ever.  dask's
    ``report`` goes to every client that wants the key: the first hears it again."""
    events: list[tuple] = []
    s = SchedulerState(DASK, ["w"], lambda *e: events.append(e))
    [compute] = s.handle(_graph("a", "k"))
    assert compute.op == m.COMPUTE_TASK
    done = m.Message("w", m.SCHEDULER, m.TASK_FINISHED, m.stream_channel("w", m.SCHEDULER), True,
                     ("k",), {"worker": "w", "incarnation": compute.payload["incarnation"],
                              "type": None})
    assert [(x.op, x.receiver) for x in s.handle(done)] == [(m.KEY_IN_MEMORY, "a")]
    out = s.handle(_graph("b", "k"))
    assert [(x.op, x.receiver, x.keys) for x in out] == [(m.KEY_IN_MEMORY, "a", ("k",)),
                                                         (m.KEY_IN_MEMORY, "b", ("k",))]
    assert s.tasks["k"].who_wants == {"a", "b"}
