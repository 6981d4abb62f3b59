"""Every event kind is declared once (events.py), and every recorder agrees with it."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from helpers import inc

from jupyter_refs import Cluster, events
from jupyter_refs.events import KINDS, SOURCES

PACKAGE = Path(events.__file__).parent
DOCS = Path(__file__).resolve().parents[1] / "docs"


def _load_picture():
    """``docs/events_picture.py``: the one scan of the package's record calls, and the picture
    of where each event comes from that docs/architecture.md shows."""
    spec = importlib.util.spec_from_file_location("events_picture", DOCS / "events_picture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


picture = _load_picture()
_calls = picture.record_calls


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
    text = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")
                     if p.name != "events.py")
    unused = [k for k in KINDS if f'"{k}"' not in text]
    assert unused == []


def test_readers_positions_come_from_the_declarations():
    """``at`` is a field's position in a trace row: after the row's common columns."""
    assert events.DESIRE_APPLIED.at("created_task") == events.FIELDS_AT + 3
    with Cluster(protocol="dask", workers=1) as cluster:
        future = cluster.client().submit(inc, 1, key="x")
        future.result()
        batch = cluster.trace.batch()
        seq, row = next((s, r) for s, r in enumerate(batch.rows, batch.start)
                        if r[3] == "desire.applied")
        fields = cluster.trace[seq].fields
        assert row[events.DESIRE_APPLIED.at("who_wants_after")] == fields["who_wants_after"]
        assert fields["who_wants_after"] == ("client:1",)
        assert row[events.DESIRE_APPLIED.at("client")] == fields["client"] == "client:1"
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


def test_the_architecture_shows_where_each_event_comes_from():
    """docs/architecture.md's block is what docs/events_picture.py prints from the code today,
    and it names every declared source and every kind."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    begin, end = text.find(picture.BEGIN), text.find(picture.END)
    assert 0 <= begin < end, "docs/architecture.md lost its events picture markers"
    shown = text[begin:end + len(picture.END)]
    assert shown == picture.block(), "regenerate it: python docs/events_picture.py"
    body = picture.picture()
    named = {line.split()[0] for line in body.splitlines()[2:] if line[:1].strip()}
    assert named == set(SOURCES)
    assert all(kind in body.split() for kind in KINDS)
