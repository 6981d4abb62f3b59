"""A readable text timeline: one line per event, for terminals and ``--text`` output."""

from __future__ import annotations

from collections.abc import Iterable

from ..trace import FIELDS, Event

_SKIP = {"network.drained"}


def short_key(key: str | None, width: int = 14) -> str:
    if key is None:
        return "-"
    return key if len(key) <= width else key[: width - 1] + "…"


def describe(e: Event) -> str:
    """The event's own words: what happened, without the common columns."""
    if e.kind in ("msg.sent", "msg.received"):
        arrow = "→ sent" if e.kind == "msg.sent" else "← recv"
        return f"{arrow} #{e.msg_id} {e.op} on {e.channel}"
    return describe_fields(e.kind, e.data)


def describe_fields(kind: str, data: tuple) -> str:
    """``describe`` for a non-message event, from its kind and positional fields.

    Positional, because the live timeline describes every event it draws.
    """
    if kind in ("refcount.inc", "refcount.dec"):
        return f"refcount {data[0]} → {data[1]}"
    if kind == "future.state":
        reason = f" ({data[3]})" if data[3] else ""
        return f"future {data[0]} → {data[1]}{reason}"
    if kind == "transition":
        return f"transition {data[0]} → {data[1]}  [{data[2]}]"
    if kind == "violation":
        return f"!! VIOLATION {data[0]} (first broken at event {data[1]})"
    if kind == "future.created":
        if data[1] == "borrowed":
            return f"future #{data[0]} deserialized, borrowed: it holds no reference"
        return f"future #{data[0]} created by {data[1]}"
    if data:
        return kind + " " + " ".join(f"{n}={_fmt(v)}" for n, v in zip(FIELDS.get(kind, ()), data))
    return kind


def _fmt(value: object) -> str:
    if isinstance(value, tuple):
        return "{" + ",".join(map(str, value)) + "}"
    return str(value)


def format_events(events: Iterable[Event], key_width: int = 14) -> str:
    lines = []
    for e in events:
        if e.kind in _SKIP:
            continue
        t_ms = e.t_ns / 1e6
        key = short_key(e.key, key_width)
        lines.append(f"{e.seq:>6} {t_ms:>9.3f}ms  {e.actor:<10} {key:<{key_width}}  {describe(e)}")
    return "\n".join(lines)


def around(events: list[Event], seq: int, before: int = 25, after: int = 10) -> list[Event]:
    """The events shortly before and after ``seq`` (by position, skipping noise)."""
    shown = [e for e in events if e.kind not in _SKIP]
    idx = next((i for i, e in enumerate(shown) if e.seq >= seq), len(shown))
    return shown[max(0, idx - before): idx + after + 1]
