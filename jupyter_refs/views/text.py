"""A readable text timeline: one line per event, for terminals and ``--text`` output."""

from __future__ import annotations

from collections.abc import Iterable

from ..trace import Event

_SKIP = {"network.drained"}


def short_key(key: str | None, width: int = 14) -> str:
    if key is None:
        return "-"
    return key if len(key) <= width else key[: width - 1] + "…"


def describe(e: Event) -> str:
    """The event's own words: what happened, without the common columns."""
    f = e.fields
    k = e.kind
    if k in ("msg.sent", "msg.received"):
        arrow = "→ sent" if k == "msg.sent" else "← recv"
        return f"{arrow} #{e.msg_id} {e.op} on {e.channel}"
    if k in ("refcount.inc", "refcount.dec"):
        return f"refcount {f['before']} → {f['after']}"
    if k == "future.state":
        reason = f" ({f['reason']})" if f.get("reason") else ""
        return f"future {f['from']} → {f['to']}{reason}"
    if k == "transition":
        return f"transition {f['start']} → {f['finish']}  [{f['stimulus_id']}]"
    if k == "violation":
        return f"!! VIOLATION {f['name']} (first broken at event {f['first_seq']})"
    if k == "future.created":
        return f"future #{f['future_id']} created by {f['origin']}"
    if f:
        return k + " " + " ".join(f"{n}={_fmt(v)}" for n, v in f.items())
    return k


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
