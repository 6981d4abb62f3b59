"""Helpers shared by the tests (imported as ``helpers``; conftest keeps the fixtures)."""

from __future__ import annotations

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


def deliver_op(cluster: Cluster, op: str) -> None:
    """Deliver the oldest in-flight message of operation ``op``."""
    msg = next(m for m in cluster.in_flight if m.op == op)
    cluster.deliver(msg.msg_id)


def inc(x: int) -> int:
    return x + 1
