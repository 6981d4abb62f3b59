"""dask's Event, Lock and Semaphore, a Queue inside a task's closure, and gather's early
stop at the first error — each written as a dask user writes it, run on real dask and under
the switch, with the same outcome (dask's own synchronous tests found them apart)."""

from __future__ import annotations

import pytest
from test_dropin import on_dask_and_model

pytest.importorskip("distributed")

SNIPPETS = {
    "event": ("from distributed import Event\n"
              "ev = Event('e')\n"
              "def waits(i):\n    return Event('e').wait(timeout=0.05)\n"
              "before = (ev.is_set(), ev.wait(timeout=0.05), client.gather(client.map(waits, range(4))))\n"
              "client.submit(lambda: Event('e').set()).result()\n"
              "after = (ev.is_set(), ev.wait(timeout=1), client.gather(client.map(waits, range(4, 8))))\n"
              "ev.clear()\n"
              "out = (before, after, ev.is_set())"),
    "event_set_in_a_task_wakes_a_waiting_task": (
        "from distributed import Event\n"
        "def wait_for_it():\n    return Event('go').wait(timeout=10)\n"
        "f = client.submit(wait_for_it)\n"
        "g = client.submit(lambda: Event('go').set(), pure=False)\n"
        "out = (f.result(), g.result())"),
    "lock": ("from distributed import Lock\n"
             "with Lock('x') as lock:\n"
             "    held = (Lock('x').acquire(timeout=0.1), Lock('x').acquire(blocking=False), "
             "lock.locked())\n"
             "other = Lock('x')\nout = (held, other.acquire(timeout=1), other.locked())\n"
             "other.release()\nout += (other.locked(),)"),
    "lock_in_tasks": ("from distributed import Lock, get_client\nimport time\n"
                      "def f(i):\n    with Lock('x'):\n        c = get_client()\n"
                      "        assert c.get_metadata('locked') is False\n"
                      "        c.set_metadata('locked', True)\n        time.sleep(0.01)\n"
                      "        c.set_metadata('locked', False)\n    return i\n"
                      "client.set_metadata('locked', False)\n"
                      "out = client.gather(client.map(f, range(6)))"),
    "lock_released_too_often": "from distributed import Lock\nout = Lock('y').release()",
    "semaphore": ("from distributed import Semaphore\n"
                  "s = Semaphore(max_leases=2, name='db')\n"
                  "got = (s.acquire(), s.acquire(), s.acquire(timeout=0.05), s.get_value())\n"
                  "s.release()\nout = (got, s.get_value(), s.acquire(timeout=1))"),
    "semaphore_inconsistent_leases": ("from distributed import Semaphore\n"
                                      "Semaphore(max_leases=2, name='s').acquire()\n"
                                      "out = Semaphore(max_leases=3, name='s').acquire()"),
    "metadata": ("client.set_metadata(['a', 'b'], 1)\nclient.set_metadata('c', [1, 2])\n"
                 "out = (client.get_metadata('a'), client.get_metadata(['a', 'b']), "
                 "client.get_metadata('c'), client.get_metadata('zz', None))"),
    "metadata_missing": "out = client.get_metadata('missing')",
    "queue_in_a_tasks_closure": ("from distributed import Queue\nq = Queue()\n"
                                 "def f(x):\n    q.put(x + 1)\n"
                                 "client.submit(f, 10).result()\nout = q.get()"),
    "gather_stops_at_the_first_error": (
        "from distributed import Event\nev = Event()\n"
        "def boom(x):\n    raise RuntimeError(x)\n"
        "slow = client.submit(lambda e: e.wait(), ev)\n"
        "try:\n    client.gather([client.submit(boom, 1), slow])\n"
        "except RuntimeError as e:\n    out = (str(e), slow.status)\n"
        "ev.set()\nslow.result()"),
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_dasks_coordination_behaves_as_on_dask(name):
    real, model = on_dask_and_model(SNIPPETS[name])
    assert model == real
