"""Print where each event comes from: the block docs/architecture.md shows under "Layers".

Derived from the code, never written by hand: each kind's ``source`` is its declaration
in ``jupyter_refs/events.py``; the modules that record it are found by reading every
``record`` call in the package (the same scan ``tests/test_events.py`` checks the calls
with).  ``tests/test_events.py`` fails when the block in docs/architecture.md differs
from what this prints, so the picture stays true to the code.

Usage: ``python docs/events_picture.py``.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections import defaultdict
from pathlib import Path

from jupyter_refs import events
from jupyter_refs.events import KINDS, SOURCES

PACKAGE = Path(events.__file__).parent
#: The dask adapter's modules are under here: they record the same kinds from real dask.
DASK = "dask/"
#: The calls that record an event: Trace.record / record_msg, and the dask path's recorders.
RECORDERS = ("record", "record_msg", "record_key", "_local", "_record")
_KIND_SHAPE = re.compile(r"[a-z_]+\.[a-z_]+")
#: The markers around the generated block in docs/architecture.md.
BEGIN = "<!-- events_picture.py: begin -->"
END = "<!-- events_picture.py: end -->"
WIDTH = 100


def record_calls() -> list[tuple[str, int, str, ast.Call]]:
    """Every call in the package that records an event kind named by a literal:
    ``(path:line, position of the kind among the arguments, kind, the call)``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "events.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in RECORDERS:
                continue
            # Trace.record(actor, kind, key, *extra); the dask path's record(kind, key, …)
            kind_at = next((i for i, a in enumerate(node.args[:2]) if _literal(a) and (
                a.value in KINDS or _KIND_SHAPE.fullmatch(a.value))), None)
            if kind_at is not None:
                found.append((f"{path.relative_to(PACKAGE).as_posix()}:{node.lineno}", kind_at,
                              node.args[kind_at].value, node))
    return found


def _literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def recorders() -> dict[str, set[str]]:
    """Kind -> the modules (relative to the package) whose calls record it."""
    by_kind: dict[str, set[str]] = defaultdict(set)
    for where, _, kind, _ in record_calls():
        by_kind[kind].add(where.rpartition(":")[0])
    return by_kind


def picture() -> str:
    """The block: per declared source, the modules that record its kinds (those under ``dask/``
    when a real dask cluster is traced), then the kinds."""
    by_kind = recorders()
    lines = ["where each event comes from (source: as declared in events.py)", ""]
    for source in SOURCES:
        kinds = [k for k, declared in KINDS.items() if declared.source == source]
        modules = set().union(*(by_kind.get(k, set()) for k in kinds))
        here = ", ".join(sorted(m for m in modules if not m.startswith(DASK)))
        dask = ", ".join(sorted(m for m in modules if m.startswith(DASK)))
        lines.append(f"{source:<10} recorded in {here or 'the dask path only'}"
                     + (f"; tracing dask: {dask}" if dask else ""))
        lines += textwrap.wrap(" ".join(kinds), WIDTH, initial_indent=" " * 11,
                               subsequent_indent=" " * 11)
    return "\n".join(lines)


def block() -> str:
    """The picture as it sits in docs/architecture.md, markers and fence included."""
    return f"{BEGIN}\n```\n{picture()}\n```\n{END}"


if __name__ == "__main__":
    print(block())
