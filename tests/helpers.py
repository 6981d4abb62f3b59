"""Helpers shared by the tests (imported as ``helpers``; conftest keeps the fixtures)."""

from __future__ import annotations

import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from queue import Empty

from jupyter_refs import Cluster
from jupyter_refs.trace import Event


def summary(e: Event) -> str:
    """One event, compactly: who did what (enough to assert an order)."""
    f = e.fields
    text = f"{e.actor} {e.kind}"
    if e.op:
        text += f" {e.op}"
    if e.kind == "transition":
        text += f" {f['start']}->{f['finish']}"
    elif e.kind == "future.state":
        text += f" {f['from']}->{f['to']}"
    elif e.kind in ("refcount.inc", "refcount.dec"):
        text += f" {f['before']}->{f['after']}"
    elif e.kind == "violation":
        text += f" {f['name']}"
    return text


def in_order(texts: list[str], expected: list[str]) -> None:
    """Each expected fragment is in a later text than the one before — order, not the whole
    list (as dask's ``assert_story(..., strict=False)``): a harmless new event breaks nothing."""
    at = 0
    for fragment in expected:
        found = next((i for i in range(at, len(texts)) if fragment in texts[i]), None)
        assert found is not None, (f"{fragment!r} not found after position {at} in:\n"
                                   + "\n".join(f"{i:3} {t}" for i, t in enumerate(texts)))
        at = found + 1


def deliver_op(cluster: Cluster, op: str) -> None:
    """Deliver the oldest in-flight message of operation ``op``."""
    msg = next(m for m in cluster.in_flight if m.op == op)
    cluster.deliver(msg.msg_id)


def inc(x: int) -> int:
    return x + 1


# -- race #8576, the setups every test of it shares ---------------------------------------

#: Variant A: the scatter RPC completes, then the release sent before it lands.
SCHEDULE_A = ["scatter", "update-data", "update-data-reply", "scatter-reply", "client-releases-keys"]
#: Variant B: the release lands inside the scatter RPC, after the worker put.
SCHEDULE_B = ["scatter", "update-data", "client-releases-keys"]


def rescatter(protocol: str, schedule: list[str], cluster: Cluster | None = None):
    """#8576 by hand: scatter 123 and settle, drop it, scatter it again, deliver ``schedule``
    (operations, in order) and settle.  A manual network unless ``cluster`` is given.

    Returns the cluster, its client, the second future, and the seq the drop starts at.
    """
    cluster = cluster or Cluster(protocol=protocol, network="manual")
    client = cluster.client()
    x = client.scatter(123)
    cluster.run_until_idle()
    start = cluster.trace.next_seq
    del x  # refcount 1 -> 0: client-releases-keys is queued on the batched stream
    y = client.scatter(123)  # same value, same key: an RPC that can overtake it
    for op in schedule:
        deliver_op(cluster, op)
    cluster.run_until_idle()
    return cluster, client, y, start


def scatter_race(client) -> None:
    """The explorer's #8576 scenario: scatter, drop, scatter the same value, compute on it."""
    x = client.scatter(123)
    del x
    x = client.scatter(123)
    client.submit(inc, x)


class Box:
    """An object of the user's own class.  dask does not look inside it: a future in it
    is not a dependency but travels pickled, as a future (the vehicle of race 2)."""

    def __init__(self, items: list):
        self.items = list(items)


def keep(box: Box) -> list:
    """A task that keeps the futures it was sent (in its result), as a Queue would."""
    return box.items


def count(box: Box) -> int:
    """A task that looks at the futures it was sent and lets them go."""
    return len(box.items)


def in_threads(work: Callable[[int], None], n: int, switch_interval: float | None = 1e-5) -> None:
    """Run ``work(i)`` for i < n, each in its own thread, all at once.

    CPython switches threads every ``switch_interval`` seconds (``None``: its default,
    5 ms); race 3's tests and benchmark lower it so threads interleave about as finely
    as truly parallel ones would.
    """
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    before = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(before)


#: README block 8, without %load_ext: its outputs must be saved as the cell left them.
BLOCK_8 = """\
from jupyter_refs import Cluster, Timeline, RefsTable

cluster = Cluster(protocol="dask", network="immediate")
client = cluster.client()
display(Timeline(cluster), RefsTable(cluster))
for i in range(20):
    x = client.scatter(123); del x
kept = client.scatter(7)
print(cluster.trace.next_seq, kept.key)"""


# -- a real kernel, read from the wire (jupyter_client) ---------------------------------


def run(kc, code: str, timeout: float = 60) -> list[dict]:
    """Execute ``code``; every iopub message of that execution, in arrival order."""
    msg_id = kc.execute(code)
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        out.append(msg)
        if msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return out
    raise TimeoutError(f"cell did not finish in {timeout} s")


def collect(kc, seconds: float) -> list[dict]:
    out, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            out.append(kc.get_iopub_msg(timeout=0.1))
        except Empty:
            pass
    return out


def comm_models(msgs: list[dict]) -> dict[str, dict]:
    return {m["content"]["comm_id"]: m["content"]["data"]["state"] for m in msgs
            if m["msg_type"] == "comm_open"}


def is_patch(msg: dict) -> bool:
    """A bokeh document patch (one timeline update) sent over a widget comm."""
    return msg["msg_type"] == "comm_msg" and "PATCH-DOC" in str(
        msg["content"]["data"].get("content", {}).get("payload", ""))


#: The answers the notebook tests fill the lessons' predictions with (``jupyter_refs.course``).
COURSE_ANSWERS = Path(__file__).resolve().parent / "course_answers.txt"


def lesson_env() -> dict[str, str]:
    """The environment a lesson's kernel runs in under test: this tree's jupyter_refs, and the
    answers file, so every prediction is filled and every ``%%solution`` runs."""
    from jupyter_refs.course import ANSWERS_ENV

    root = str(Path(__file__).resolve().parents[1])
    return {"PYTHONPATH": root, ANSWERS_ENV: str(COURSE_ANSWERS)}


class CyclingModule(types.ModuleType):
    """A module whose ``__getattr__`` raises as Cython's shadow modules do (``Cython.Shadow``,
    imported by scipy where Cython is installed): the exception is a local of the frame its
    traceback holds — a cycle that keeps that frame, and through ``f_back`` the frames below
    it, until the collector runs.  pickle meets it when it asks every module for a function
    that has none."""

    def __getattr__(self, item: str):
        ex = AttributeError(item)
        raise ex
