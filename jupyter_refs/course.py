"""What the lessons share: predictions that commit, hidden solutions, goals to play, and telling
the forms of #8576 apart.

* **Predict, then run.** A prediction cell reads ``guess = course.predict(..., "01-state")``: it
  raises a one-line :class:`NoGuessError` until the student writes a guess in place of the
  ``...``, so "Run All" stops there instead of running past the question.  A later cell checks
  it with :func:`check`, which prints a sentence (the true answer always in it, so a test can
  assert it) and returns nothing, so no cell echoes a bare value.
* **Solutions run on purpose.** An exercise's solution cell starts with ``%%solution 1``: it does
  not run (it says how to) until the student changes that line to ``%%solution 1 run``.
* **Tests fill the guesses.** With :data:`ANSWERS_ENV` naming a file of answers (a Python dict
  literal, name → guess), every unanswered ``predict`` returns the file's answer and every
  ``%%solution`` cell runs: a lesson runs end to end and its checks and solutions still run.
* **Be the scheduler.** :func:`goal` starts a game on a manual network (``views/game.py``),
  played with the timeline's buttons or in text: ``game.in_flight``, ``game.deliver(N)``,
  ``game.status``, ``game.deliveries``.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .trace import Event, Trace
    from .views.game import Game

__all__ = ["ANSWERS_ENV", "NoGuessError", "check", "form_of_8576", "goal", "late_fire_and_forget",
           "predict"]

#: Names a file of answers that the tests use to fill every prediction and run every solution.
ANSWERS_ENV = "JUPYTER_REFS_COURSE_ANSWERS"


class NoGuessError(Exception):
    """A prediction cell run before the student wrote a guess."""

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback: the one line is the whole message.
        return [f"{type(self).__name__}: {self}"]


def _answers() -> dict[str, Any] | None:
    path = os.environ.get(ANSWERS_ENV)
    if not path:
        return None
    return ast.literal_eval(Path(path).read_text())


def predict(guess: Any, name: str) -> Any:
    """The student's guess for the prediction ``name``; raises while it is still ``...``.

    >>> guess = course.predict("forgotten", "01-state")
    """
    if guess is not ...:  # None is a guess: a future's status can be None
        return guess
    answers = _answers()
    if answers is not None:
        if name not in answers:
            raise NoGuessError(f"the answers file {os.environ[ANSWERS_ENV]} has no {name!r}")
        return answers[name]
    raise NoGuessError(f"prediction {name!r}: write your guess in place of the ... in this cell, "
                       "then run it again (a wrong guess is fine; no guess is not)")


def check(guess: Any, actual: Any, *, why: str = "") -> None:
    """Print how ``guess`` compares with ``actual``, the true answer always in the line.

    ``guess`` left as ``...`` means the student did not answer: the answer is shown.  Strings
    compare without case or surrounding blanks, since "Forgotten" and "forgotten " are the same
    guess; obvious aliases count as right too (:func:`_same`): a value typed as text
    (``"[41]"`` for ``[41]``, ``"0"`` for ``0``), a list for a tuple (its order compared), a
    list or tuple for a set, strings inside a list, tuple or set in another case, and an
    exception's shorter name (``"CancelledError"`` for ``"FutureCancelledError"``).
    Returns nothing: a check is read, not computed with.
    """
    if guess is ...:
        verdict = "no guess yet"
    elif _same(guess, actual):
        verdict = "right"
    else:
        verdict = f"not quite: you guessed {guess!r}"
    line = f"[{verdict}] the answer: {actual!r}"
    print(line + (f" ({why})" if why else ""))


def goal(scenario: Callable[[Any], Any], *, check: str, within: int, protocol: str = "dask",
         text: str = "", workers: int = 1,
         reached: Callable[[Sequence[Event]], str | None] | None = None) -> Game:
    """A game: ``scenario(client)`` runs on a fresh cluster with a manual network, and the
    student delivers its messages until the checks flag ``check`` — in at most ``within``
    deliveries to win.  'start again' runs the scenario on a new cluster.

    Shown, it is the timeline with its deliver buttons; with no widget it plays in text:
    ``game.in_flight`` lists the messages waiting, numbered; ``game.deliver(N)`` (or
    ``game.deliver("scatter")``) delivers one and prints how the game stands; ``game.status``
    and ``game.deliveries`` read it; ``game.restart()`` starts again and prints the fresh game.

    What ``scenario`` returns (the user's futures) is kept alive while the game is played.
    ``reached`` (e.g. :func:`late_fire_and_forget`) ends the game at the delivery that makes
    ``check`` certain, for a check judged only once nothing is left in flight.
    """
    from .cluster import Cluster
    from .views.game import Game, Goal

    target = Goal(check, within, text, reached)

    def start() -> tuple[Any, Any]:
        cluster = Cluster(protocol=protocol, workers=workers, network="manual")
        client = cluster.client()
        return cluster, (client, scenario(client))

    return Game(target, start)


def load_magics(shell: Any) -> None:
    """Register ``%%solution`` (called by ``%load_ext jupyter_refs``)."""
    from IPython.core.magic import Magics, cell_magic, magics_class

    @magics_class
    class CourseMagics(Magics):
        @cell_magic
        def solution(self, line: str, cell: str) -> None:
            """``%%solution N``: the solution to exercise N, run only as ``%%solution N run``;
            ``%%solution question N``: the answer to a lesson's question N, the same way."""
            words = line.split()
            what = "exercise"
            if words and words[0].lower() == "question":
                what, words = "question", words[1:]
            name = words[0] if words else "?"
            if "run" not in words[1:] and _answers() is None:
                magic = f"%%solution {'question ' if what == 'question' else ''}{name} run"
                print(f"{what.capitalize()} {name}'s solution is in this cell, hidden and not run. "
                      f"Try the {what} first; then open the cell and change its first line to "
                      f"`{magic}`.")
                return
            self.shell.run_cell(cell, store_history=False).raise_error()

    shell.register_magics(CourseMagics)


def _norm(value: Any) -> Any:
    """Strings without case or blanks, also inside a list, tuple or set; a list reads as the
    tuple it spells (order compared), so ``["a", "b"]`` and ``("A", "b")`` are one guess."""
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(_norm(v) for v in value)
    return value


def _same(guess: Any, actual: Any) -> bool:
    """Whether ``guess`` is ``actual`` up to case, blanks and the obvious aliases."""
    if _norm(guess) == _norm(actual):
        return True
    if isinstance(guess, (list, tuple)) and isinstance(actual, (set, frozenset)):
        # a set typed as a list: ["dangling_future"] for {"dangling_future"} (order ignored,
        # and no name twice: a list that repeats one is not the set)
        normed = _norm(guess)
        return len(set(normed)) == len(normed) and frozenset(normed) == _norm(actual)
    if isinstance(guess, str) and not isinstance(actual, str):
        try:  # "[41]" for [41], "True" for True, "{'A', 'B'}" for {"A", "B"}
            return bool(_norm(ast.literal_eval(guess.strip())) == _norm(actual))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
    if isinstance(guess, str) and isinstance(actual, str) and actual.endswith("Error"):
        # an exception's shorter name: "CancelledError" for "FutureCancelledError", at a
        # CamelCase boundary, and more than the bare "Error"
        short = guess.strip()
        tail = actual[-len(short):] if short else ""
        return (len(short) > len("Error") and tail.lower() == short.lower()
                and tail[:1].isupper())
    return False


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


def late_fire_and_forget(events: Sequence[Event]) -> str | None:
    """When a game's ``leaked_key`` of ``fire_and_forget`` becomes certain: the scheduler has
    taken the pseudo-client's desire for a key whose task had already ended, and kept it.

    dask's scheduler lets go of a fire-and-forget key only when its task ends, so from that
    delivery on nothing will release it (the check ``leaked_key`` says so once nothing is
    left in flight).  A protocol that lets such a desire go at once (``fixed``) never keeps
    it.  Read from the events alone: a sentence, or None.
    """
    from .protocol.messages import FIRE_AND_FORGET

    state: dict[str, str] = {}
    late: dict[str, str] = {}  # key -> the state its task had ended in
    for e in events:
        if e.kind == "transition" and e.key is not None:
            state[e.key] = e.get("finish")
        elif e.kind in ("desire.applied", "release.applied") and e.get("client") == FIRE_AND_FORGET:
            if e.kind == "desire.applied" and state.get(e.key) in ("memory", "erred"):
                late[e.key] = state[e.key]
            elif FIRE_AND_FORGET not in (e.get("who_wants_after") or ()):
                late.pop(e.key, None)
    for key, ended in late.items():
        return (f"the scheduler took fire_and_forget's desire for {key} after its task had ended "
                f"({ended}). It lets go of a fire-and-forget key only when the task ends, which "
                "has already happened: nothing will ever release it. The check leaked_key says "
                "so once nothing is left in flight (the explorer below delivers the rest).")
    return None
