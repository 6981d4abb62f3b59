"""The timeline as a static SVG picture, for front ends that cannot run the widget.

A timeline output is a widget, and a widget needs a live kernel and a widget
manager.  nbconvert's HTML, GitHub's notebook viewer, a notebook opened with no
kernel and no JupyterLab extension: none of them can draw it, and the race the
lesson is about would vanish from the handout.  So every timeline output also
carries ``image/svg+xml``, which any of them shows.

The picture is drawn from the saved-trace bundle (``views/saved.py``): the trace
laid out by :class:`~jupyter_refs.views.timeline_model.TimelineModel`, the same
model the live bokeh figure draws.  Nothing is laid out here, only drawn — lanes,
each key's state bars and refcount steps, an arrow per message (with its bar on
the channel's lane), a marker per event and a red cross per violation, each with a
``<title>`` so a browser shows the details on hover.  It draws what the
labextension's ``renderTimeline`` draws (``labextension/src/timeline.ts``),
with the same sizes, so the picture a student sees does not depend on the viewer.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

SVG_MIME = "image/svg+xml"
#: Events in a picture at most: a third before the first violation, the rest after (as the
#: saved bundle chooses its window).  An SVG element costs about 2.5 times a bundle row, and a
#: picture of thousands of events at 960 px is unreadable anyway; the saved bundle keeps more.
PICTURE_EVENTS = 800
ROW = 26  # px per lane
LABEL_W = 230  # px for the lane names
TOP, RIGHT, BOTTOM = 26, 16, 30  # the title line above, the axis below
WIDTH = 960
_VIOLATION = "#e31a1c"


def _el(tag: str, title: str | None = None, body: str = "", **attrs: Any) -> str:
    """One element; ``title`` becomes its hover text, ``body`` its (already escaped) content."""
    inner = (f"<title>{escape(title, quote=False)}</title>" if title else "") + body
    head = " ".join([tag, *(f'{k.rstrip("_").replace("_", "-")}="{_num(v)}"' for k, v in attrs.items())])
    return f"<{head}>{inner}</{tag}>" if inner else f"<{head}/>"


def _num(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.1f}".rstrip("0").rstrip(".")
    return escape(str(v), quote=True)


def picture(bundle: dict[str, Any], rebuild: Callable[[int], dict[str, Any]]) -> str:
    """The SVG of ``bundle``, or of ``rebuild(PICTURE_EVENTS)`` when the bundle spans more events."""
    w = bundle["window"]
    if w["next"] - w["first"] > PICTURE_EVENTS:
        bundle = rebuild(PICTURE_EVENTS)
    return timeline_svg(bundle)


def timeline_svg(bundle: dict[str, Any]) -> str:
    """The bundle's timeline as one SVG document (a string)."""
    b = bundle
    lanes, colors, w = b["lanes"], b["colors"], b["window"]
    height = TOP + ROW * len(lanes) + BOTTOM
    lo, hi = _x_extent(b)
    plot_w = WIDTH - LABEL_W - RIGHT

    def X(x: float) -> float:  # noqa: N802 - the axis' name
        return LABEL_W + (x - lo) / (hi - lo) * plot_w

    def Y(lane: int, off: float = 0.0) -> float:  # noqa: N802
        return TOP + ROW * (lane + 0.5) - off * ROW

    def op_color(op: str) -> str:
        return colors["op"].get(op, colors["default"])

    part = (f"events {w['first']}–{w['next'] - 1} of {w['total']}"
            if w["first"] > 0 or w["next"] < w["total"] else f"{w['total']} events")
    dropped = f", {w['dropped']} dropped" if w["dropped"] else ""
    n_viol = len(b["violations"]["x"])
    head = (f"{b['title']} · {part}{dropped}; {n_viol} violation{'' if n_viol == 1 else 's'}"
            " · static picture")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
           f'width="{WIDTH}" height="{height}" font-family="sans-serif" role="img">',
           f"<title>{escape('timeline: ' + b['title'], quote=False)}</title>",
           _el("text", body=escape(head), x=4, y=16, font_size=12, fill="#24292f")]

    out.append('<g class="lanes">')
    for i, lane in enumerate(lanes):
        y, name = Y(i), lane["name"]
        short = name if len(name) <= 34 else name[:33] + "…"
        line = _el("line", x1=LABEL_W, x2=WIDTH - RIGHT, y1=y, y2=y, stroke="#d0d7de")
        label = _el("text", name, escape(short), x=LABEL_W - 6, y=y + 4, text_anchor="end",
                    font_size=11)
        out.append(_el("g", body=line + label, class_="lane", data_lane=name,
                       data_group=lane["group"]))
    out.append("</g>")

    s = b["states"]
    out.append('<g class="states">')
    for i in range(len(s["left"])):
        left = X(s["left"][i])
        out.append(_el("rect", f"{s['key'][i]}: {s['state'][i]}", x=left, y=Y(s["lane"][i], 0.42),
                       width=max(1.0, X(s["right"][i]) - left), height=0.84 * ROW,
                       fill=s["color"][i], fill_opacity=0.55))
    out.append("</g>")

    r = b["refcounts"]
    out.append('<g class="refcounts">')
    for i in range(len(r["x0"])):
        lane = r["lane"][i]
        out.append(_el("line", f"refcount of {r['client'][i]}", x1=X(r["x0"][i]), x2=X(r["x1"][i]),
                       y1=Y(lane, r["off0"][i]), y2=Y(lane, r["off1"][i]), stroke=r["color"][i],
                       stroke_width=2))
    out.append("</g>")

    m = b["messages"]
    out.append('<g class="messages">')
    for i in range(len(m["x0"])):
        color = op_color(m["op"][i])
        xa, xb, ya, yb = X(m["x0"][i]), X(m["x1"][i]), Y(m["lane0"][i]), Y(m["lane1"][i])
        yc = Y(m["chan"][i])
        d = 1 if yb > ya else -1 if yb < ya else 0
        tip = (xb, yb), *(((xb - 7, yb - 4), (xb - 7, yb + 4)) if d == 0 else
                          ((xb - 4, yb - 7 * d), (xb + 4, yb - 7 * d)))
        points = " ".join(f"{_num(float(px))},{_num(float(py))}" for px, py in tip)
        body = (_el("line", x1=xa, x2=xb, y1=yc, y2=yc, stroke=color, stroke_width=6,
                    stroke_opacity=0.6)
                + _el("line", x1=xa, x2=xb, y1=ya, y2=yb, stroke=color, stroke_width=1.5)
                + _el("polygon", points=points, fill=color))
        title = (f"{m['desc'][i]}\nkeys: {m['keys'][i]}\n"
                 f"sent at event {m['seq0'][i]}, received at {m['seq1'][i]}")
        out.append(_el("g", title, body, class_="message", data_op=m["op"][i],
                       data_msg_id=m["msg_id"][i]))
    out.append("</g>")

    p = b["pending"]
    out.append('<g class="pending">')
    for i in range(len(p["x0"])):
        y = Y(p["lane"][i])
        out.append(_el("line", p["desc"][i], x1=X(p["x0"][i]), x2=X(p["x1"][i]), y1=y, y2=y,
                       stroke=op_color(p["op"][i]), stroke_width=2, stroke_dasharray="5 3"))
    out.append("</g>")

    e = b["events"]
    out.append('<g class="events">')
    for i in range(len(e["x"])):
        text = f"event {e['seq'][i]}: {e['desc'][i]}"
        text += f"\nkey: {e['key'][i]}" if e["key"][i] else ""
        text += f"\nline: {e['cell'][i]}" if e["cell"][i] else ""
        out.append(_el("circle", text, cx=X(e["x"][i]), cy=Y(e["lane"][i]), r=3,
                       fill=colors["kind"].get(e["kind"][i], colors["default"]),
                       data_kind=e["kind"][i]))
    out.append("</g>")

    v = b["violations"]
    out.append('<g class="violations">')
    for i in range(len(v["x"])):
        x, y = X(v["x"][i]), Y(v["lane"][i])
        a, z, top, bot = _num(x - 8), _num(x + 8), _num(y - 8), _num(y + 8)
        cross = _el("path", d=f"M{a},{top}L{z},{bot}M{a},{bot}L{z},{top}", stroke=_VIOLATION,
                    stroke_width=4)
        title = (f"VIOLATION {v['name'][i]} on {v['key'][i]}\nfirst event: {v['first_seq'][i]}"
                 f"\nwhy: {v['explanation'][i]}")
        out.append(_el("g", title, cross, class_="violation", data_name=v["name"][i]))
    out.append("</g>")

    y_axis = height - BOTTOM + 4
    axis_text = {"text_anchor": "middle", "font_size": 10, "fill": "#57606a"}
    out.append('<g class="axis">')
    for t in range(5):
        x = lo + (hi - lo) * t / 4
        label = str(round(x)) if b["view"] == "logical" else f"{x:.1f} ms"
        out.append(_el("text", body=label, x=X(x), y=y_axis + 12, **axis_text))
    axis = "event seq (logical order)" if b["view"] == "logical" else "time (ms)"
    out.append(_el("text", body=axis, x=LABEL_W + plot_w / 2, y=y_axis + 25, **axis_text))
    out.append("</g></svg>")
    return "\n".join(out)


def _x_extent(b: dict[str, Any]) -> tuple[float, float]:
    """The x range every glyph fits in (as ``xExtent`` in timeline.ts)."""
    xs = [*b["events"]["x"], *b["messages"]["x0"], *b["messages"]["x1"], *b["states"]["left"],
          *b["states"]["right"], *b["violations"]["x"], *b["pending"]["x1"]]
    if not xs:
        return 0.0, 1.0
    lo, hi = min(xs), max(xs)
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
