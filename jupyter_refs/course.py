"""What the lessons share: "predict, then run" cells, and telling the forms of #8576 apart.

A lesson asks the student to write a guess in one cell (``guess = ...``) and checks it in the
next, after the experiment has run. The check never raises: a lesson executed top to bottom in CI
leaves every guess at ``...`` and still has to run through, so an unanswered guess prints the
answer instead of failing. The printed line always holds the true answer, so CI can assert it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .trace import Trace

__all__ = ["check", "form_of_8576"]


def check(guess: Any, actual: Any, *, why: str = "") -> bool:
    """Print how ``guess`` compares with ``actual`` and return whether they agree.

    ``guess`` left as ``...`` (or ``None``) means the student did not answer: the answer is
    shown. Strings compare without case or surrounding blanks, since "Forgotten" and
    "forgotten " are the same guess.
    """
    if guess is ... or guess is None:
        verdict, agreed = "no guess yet", False
    else:
        agreed = _norm(guess) == _norm(actual)
        verdict = "right" if agreed else f"not quite: you guessed {guess!r}"
    line = f"[{verdict}] the answer: {actual!r}"
    print(line + (f" ({why})" if why else ""))
    return agreed


def _norm(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def form_of_8576(trace: Trace, key: str) -> str:
    """Which form of #8576 lost the last scatter of ``key``, read from the trace alone.

    Lessons 1 and 5 both sort failures by it, so it is declared once, here, from events (it
    works on a replayed run or a saved trace as well):

    * ``"B"`` — a ``free-keys`` the scheduler sent *before* it registered that scatter deleted
      the copy the scatter had put (the release landed inside the scatter, or just before it);
    * ``"A"`` — the scheduler forgot the key *after* registering it (a late release) and freed
      that copy in turn;
    * ``"C"`` — the copy was never freed: the worker's ``release-worker-data`` about an older
      copy reached the scheduler after it registered the new one, and it dropped the worker
      that holds it.
    """
    events = list(trace.filter(key=key))
    registered = max(e.seq for e in events if e.kind == "scatter.registered")
    fresh = max(e.fields["incarnation"] for e in events if e.kind == "scatter.worker_put")
    sent = {e.msg_id: e.seq for e in events if e.kind == "msg.sent" and e.op == "free-keys"}
    receipt = None
    for e in events:
        if e.kind == "msg.received" and e.op == "free-keys":
            receipt = e.msg_id  # the handler the worker's next free runs in
        elif e.kind == "worker.free" and e.fields["incarnation"] == fresh:
            return "B" if sent[receipt] < registered else "A"
    return "C"
