"""What the lessons use for "predict, then run" cells.

A lesson asks the student to write a guess in one cell (``guess = ...``) and checks it in the
next, after the experiment has run. The check never raises: a lesson executed top to bottom in CI
leaves every guess at ``...`` and still has to run through, so an unanswered guess prints the
answer instead of failing. The printed line always holds the true answer, so CI can assert it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check"]


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
