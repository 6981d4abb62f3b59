"""``client.loop.add_callback`` and ``cancel(asynchronous=True)``: a coroutine handed to
dask's event loop runs beside the caller and cancels when it awaits — run on real dask and
under the switch, with the same outcome (dask's test_as_completed_cancel_last found
``Client.loop`` not modelled)."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

import jupyter_refs as jr

pytest.importorskip("distributed")

SNIPPETS = {
    "a_coroutine_on_the_loop_cancels": (
        "import asyncio, inspect, time\nfrom distributed import Event\nev = Event()\n"
        "f = client.submit(lambda e: e.wait(), ev)\ng = client.submit(inc, 1)\n"
        "pending = client.cancel([g], asynchronous=True)\n"
        "not_yet = (inspect.iscoroutine(pending), g.result())\npending.close()\n"
        "async def later(x):\n    await asyncio.sleep(0.05)\n    await x.cancel(asynchronous=True)\n"
        "client.loop.add_callback(later, f)\n"
        "deadline = time.time() + 10\n"
        "while f.status != 'cancelled' and time.time() < deadline:\n    time.sleep(0.01)\n"
        "ev.set()\nout = (not_yet, f.status)"),
    "a_plain_callback": (
        "import queue\nq = queue.Queue()\nclient.loop.add_callback(q.put, 7)\n"
        "out = q.get(timeout=10)"),
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_the_event_loop_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real and model.startswith("returned")


def test_what_the_loop_does_not_have_says_so():
    with jr.Cluster(network="immediate") as cluster:
        with pytest.raises(jr.NotModelledError, match="Client.loop.run_sync"):
            cluster.client().loop.run_sync(lambda: None)
