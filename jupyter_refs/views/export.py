"""Exports of a trace: JSON Lines, Chrome trace, standalone HTML — chosen by file suffix."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from .. import arguments
from ..trace import Trace, trace_source

if TYPE_CHECKING:
    from ..handle import ClusterHandle

SUFFIXES = (".jsonl", ".json", ".html")


def timeline_html(source: ClusterHandle | Trace, keys: list[str] | None = None, view: str = "logical",
                  title: str = "jupyter_refs timeline") -> str:
    """A self-contained page (BokehJS inlined): opens in a browser with no server, no internet."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    from .timeline import TimelineFigure
    from .timeline_model import TimelineModel

    trace = source if isinstance(source, Trace) else source.trace
    model = TimelineModel(keys, view)
    model.add_events(trace.events())
    fig = TimelineFigure(model, title=title).fig
    return file_html(fig, INLINE, title)


def export(source: ClusterHandle | Trace, path: str, keys: list[str] | None = None) -> str:
    """Write the trace to ``path``; the suffix picks the format.  Returns a description."""
    trace_source(source)
    path = os.fspath(arguments.expect(path, (str, os.PathLike), "path", "a file name"))
    arguments.keys(keys)
    trace = source if isinstance(source, Trace) else source.trace
    if path.endswith(".jsonl"):
        trace.to_jsonl(path)
        return "JSON Lines (Trace.from_jsonl loads it back)"
    if path.endswith(".json"):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(trace.to_chrome_trace(), f)
        return "Chrome trace event JSON (open it in Perfetto)"
    if path.endswith(".html"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(timeline_html(trace, keys))
        return "standalone HTML timeline"
    raise ValueError(f"cannot export to {path!r}: the name must end in {', '.join(SUFFIXES)}")
