"""A readable text timeline: one line per event, for terminals and ``--text`` output."""

from __future__ import annotations

from collections.abc import Iterable

from ..trace import Event

_SKIP = {"network.drained"}


def short_key(key: str | None, width: int = 14) -> str:
    if key is None:
        return "-"
    return key if len(key) <= width else key[: width - 1] + "…"


def format_events(events: Iterable[Event], key_width: int = 14) -> str:
    lines = []
    for e in events:
        if e.kind in _SKIP:
            continue
        t_ms = e.t_ns / 1e6
        key = short_key(e.key, key_width)
        lines.append(f"{e.seq:>6} {t_ms:>9.3f}ms  {e.actor:<10} {key:<{key_width}}  {e.describe()}")
    return "\n".join(lines)


def around(events: list[Event], seq: int, before: int = 25, after: int = 10) -> list[Event]:
    """The events shortly before and after ``seq`` (by position, skipping noise)."""
    shown = [e for e in events if e.kind not in _SKIP]
    idx = next((i for i, e in enumerate(shown) if e.seq >= seq), len(shown))
    return shown[max(0, idx - before): idx + after + 1]
