"""Every event kind is declared once (events.py), and every recorder agrees with it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from helpers import inc

from jupyter_refs import Cluster, events
from jupyter_refs.events import KINDS

PACKAGE = Path(events.__file__).parent
_KIND_SHAPE = re.compile(r"[a-z_]+\.[a-z_]+")
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "events.py")


def _calls() -> list[tuple[str, int, str, ast.Call]]:
    """Every call in the package that records an event kind named by a literal."""
    found = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in ("record", "record_msg", "record_key", "_local", "_record"):
                continue
            # Trace.record(actor, kind, key, *extra); the dask path's record(kind, key, …)
            kind_at = next((i for i, a in enumerate(node.args[:2]) if _literal(a) and (
                a.value in KINDS or _KIND_SHAPE.fullmatch(a.value))), None)
            if kind_at is not None:
                found.append((f"{path.relative_to(PACKAGE)}:{node.lineno}", kind_at,
                              node.args[kind_at].value, node))
    return found


def _literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _extra(call: ast.Call, kind_at: int) -> list[ast.expr] | None:
    """The ``extra`` values a call passes, where they can be counted from the source."""
    for kw in call.keywords:
        if kw.arg == "extra":
            return kw.value.elts if isinstance(kw.value, ast.Tuple) else None
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name == "record_key":  # record_key(kind, key, extra)
        value = call.args[2] if len(call.args) > 2 else None
        return value.elts if isinstance(value, ast.Tuple) else None
    if name == "record" and kind_at == 1:  # Trace.record(actor, kind, key, *extra)
        rest = call.args[3:]
        return None if any(isinstance(a, ast.Starred) for a in rest) else list(rest)
    return None


def test_the_package_records_through_literal_kinds():
    assert len(_calls()) > 40  # the scan sees the recorders: it is not vacuous


@pytest.mark.parametrize("where,kind_at,kind,call", _calls(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_record_call_names_a_declared_kind_with_its_fields(where, kind_at, kind, call):
    assert kind in KINDS, f"{where}: {kind!r} is not declared in events.py"
    extra = _extra(call, kind_at)
    if extra is None or kind in ("msg.sent", "msg.received"):
        return  # message events carry their keys from the message, or a channel marker on the wire
    fields = KINDS[kind].fields
    assert len(extra) == len(fields), (
        f"{where}: {kind} is recorded with {len(extra)} values; its fields are {fields}")


def test_every_declared_kind_is_recorded_somewhere():
    text = "\n".join(p.read_text(encoding="utf-8") for p in SOURCES)
    unused = [k for k in KINDS if f'"{k}"' not in text]
    assert unused == []


def test_readers_positions_come_from_the_declarations():
    assert events.DESIRE_APPLIED.at("created_task") == 3
    with pytest.raises(KeyError, match="desire.applied events have no field 'nope'"):
        events.DESIRE_APPLIED.at("nope")


def test_every_kind_a_run_records_matches_its_declaration():
    with Cluster(protocol="dask", workers=2, network="random", seed=3) as cluster:
        client = cluster.client()
        x = client.scatter(123)
        del x
        x = client.scatter(123)
        y = client.submit(inc, x)
        assert y.result() == 124
        y.release()
        cluster.run_until_idle()
        seen = {e.kind for e in cluster.trace}
        for e in cluster.trace:
            assert len(e.data) == len(KINDS[e.kind].fields), e
    assert {"future.created", "refcount.dec", "transition", "msg.sent", "worker.put"} <= seen


def test_the_dask_path_names_the_declared_actor_fields(inproc):
    from jupyter_refs.dask import attach

    with attach(inproc) as tracer:
        x = inproc.scatter(41)
        assert inproc.submit(inc, x).result() == 42
        del x
        tracer.sync()
        rows = tracer.trace.events()
    applied = [e for e in rows if e.kind == "desire.applied"]
    assert applied
    for e in rows:
        assert len(e.data) == len(KINDS[e.kind].fields), e
    for e in applied:
        assert e.get("client").startswith("client:") and all(
            c.startswith("client:") for c in e.get("who_wants_after")), e
