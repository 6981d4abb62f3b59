"""Be the scheduler: a goal over a manual network, played with the timeline's deliver buttons.

A lesson sets a :class:`Goal` — "make the checks flag ``dangling_future`` in at most 6
deliveries" — and the student delivers the messages in flight, in the order they choose.
Whether the goal is reached is read from the trace alone (:func:`judge`): a delivery is a
``msg.received`` event, and the goal is reached by the first ``violation`` event the checks
record under the goal's name.  The view never asks an actor anything; starting again asks
the lesson's ``start`` for a fresh cluster (the cluster is made by the caller, as a
timeline's is).

The same game plays in text, with no widget (a script, a terminal, a test): ``game.in_flight``
lists the messages waiting, numbered; ``game.deliver(N)`` delivers the N-th (or
``game.deliver("scatter")`` the oldest of that operation) and prints how the game stands;
``game.status``, ``game.deliveries`` and ``game.verdict`` read it; ``game.restart()`` starts
again.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import ipywidgets as w

from ..checks import cause_only
from ..protocol.messages import EXECUTE
from ..switch_game import Listing
from ..trace import Event
from .timeline import Timeline

if TYPE_CHECKING:
    from ..handle import ClusterHandle

__all__ = ["Game", "Goal", "InFlightList", "Verdict", "judge"]

Outcome = Literal["playing", "won", "spent"]


@dataclass(frozen=True)
class Goal:
    """What the student must make happen: a check's name, and how many deliveries they have."""

    check: str
    within: int
    #: The goal in the lesson's words, shown above the timeline.
    text: str = ""
    #: For a check judged only once nothing is left in flight (``leaked_key``): the moment its
    #: outcome is certain.  Given the events since the start, up to the end of a delivery's
    #: consequences, it returns a sentence saying what happened, or None; the goal is then
    #: reached at the first delivery where it answers, not at the check's violation.
    reached: Callable[[Sequence[Event]], str | None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.within, int) or self.within < 1:
            raise ValueError(f"within must be a positive number of deliveries, not {self.within!r}")

    def describe(self) -> str:
        return self.text or (f"make the checks flag {self.check} in at most {self.within} "
                             f"deliveries")


@dataclass(frozen=True)
class Verdict:
    """How the game stands, read from the events since it started."""

    outcome: Outcome
    deliveries: int
    #: The delivery that made the checks flag the goal's name (None: not yet).
    reached_at: int | None = None
    #: The checks' explanation of that violation, ended at the broken invariant (a lesson asks
    #: its consequence next: ``checks.cause_only``).
    explanation: str = ""

    def sentence(self, goal: Goal) -> str:
        left = goal.within - self.deliveries
        if self.outcome == "won":
            flagged = "" if goal.reached else f"the checks flag {goal.check}. "
            return (f"Goal reached in {self.reached_at} deliveries (budget {goal.within}): "
                    f"{flagged}{self.explanation}")
        if self.outcome == "spent":
            if self.reached_at is not None:
                return (f"{goal.check} came at delivery {self.reached_at}, over the budget of "
                        f"{goal.within}: press 'start again' (game.restart()) and find a "
                        "shorter order.")
            return (f"Out of deliveries: {self.deliveries} of {goal.within} used and no "
                    f"{goal.check}. Press 'start again' (game.restart()) and try another "
                    "order.")
        return (f"{self.deliveries} of {goal.within} deliveries used, {left} left; "
                f"no {goal.check} yet.")


def judge(goal: Goal, events: Iterable[Event]) -> Verdict:
    """The verdict of ``goal`` over ``events`` (those since the game started, in seq order).

    Each ``msg.received`` is one delivery (a task's run on a worker is delivered as a message
    too).  The goal is reached when a ``violation`` named ``goal.check`` follows, counted at
    the delivery it followed; reached within the budget wins, past it loses.  A goal with
    ``reached`` is reached at the first delivery after which that function answers.
    """
    if goal.reached is not None:
        return _judge_reached(goal, list(events))
    deliveries = 0
    for e in events:
        if e.kind == "msg.received":
            deliveries += 1
        elif e.kind == "violation" and e.get("name") == goal.check:
            outcome: Outcome = "won" if deliveries <= goal.within else "spent"
            return Verdict(outcome, deliveries, deliveries, cause_only(e.get("explanation") or ""))
    return Verdict("spent" if deliveries >= goal.within else "playing", deliveries)


def _judge_reached(goal: Goal, events: list[Event]) -> Verdict:
    """:func:`judge` for a goal with ``reached``: asked after each delivery's consequences (the
    events up to the next delivery)."""
    assert goal.reached is not None
    starts = [i for i, e in enumerate(events) if e.kind == "msg.received"]
    for n in range(1, len(starts) + 1):
        end = starts[n] if n < len(starts) else len(events)
        said = goal.reached(events[:end])
        if said:
            return Verdict("won" if n <= goal.within else "spent", n, n, said)
    return Verdict("spent" if len(starts) >= goal.within else "playing", len(starts))


def _kind(message: Any) -> str:
    """What carries a message in flight: an RPC, a batched stream, or (``execute``) a task's run
    on the worker's own thread, which is no message on the wire (lesson 0, section 5)."""
    if message.op == EXECUTE:
        return "task run"
    return "RPC" if message.channel.startswith("rpc:") else "stream"


class InFlightList(list):  # type: ignore[type-arg]
    """The messages in flight, shown numbered from 1: ``game.deliver(N)`` takes the N-th."""

    def __repr__(self) -> str:
        if not self:
            return "in flight: nothing"
        rows = [f"  {i:>2}  {m}  · {_kind(m)}" for i, m in enumerate(self, 1)]
        return "\n".join(["in flight (game.deliver(N) delivers the N-th):", *rows])


class Game:
    """A goal, a timeline of a manual network with its deliver buttons, and a restart.

    ``start()`` makes the cluster to play on, with the scenario already run (its messages in
    flight), and returns it with whatever must stay alive (the user's futures).
    """

    def __init__(self, goal: Goal, start: Callable[[], tuple[ClusterHandle, Any]],
                 title: str = "be the scheduler"):
        self.goal = goal
        self._start = start
        self._title = title
        self.cluster: ClusterHandle | None = None
        self.timeline: Timeline | None = None
        self.held: Any = None
        self._since = 0
        #: Games played so far in this widget (1 after the first start).
        self.rounds = 0
        self._goal_text = w.HTML(f"<b>Goal:</b> {html.escape(goal.describe())}")
        self._status = w.HTML()
        self._restart = w.Button(description="start again", icon="refresh")
        self._restart.on_click(lambda _b: self._new_round())
        self._board = w.VBox()
        self.widget = w.VBox([self._goal_text, self._status, self._board, self._restart])
        self._new_round()

    # -- playing -----------------------------------------------------------------------------

    def restart(self) -> None:
        """A fresh cluster, the scenario run again, the count back to 0; prints the fresh game
        (how it stands, the messages in flight), as :meth:`deliver` does (review 5: in text
        mode a restart said nothing).  The widget's 'start again' shows it on the board."""
        self._new_round()
        print(f"started again (round {self.rounds}).")
        print(self.text())

    def _new_round(self) -> None:
        """A fresh cluster, the scenario run again, the count back to 0."""
        old, old_cluster = self.timeline, self.cluster
        cluster, held = self._start()
        if not cluster.steppable:  # the game as it was goes on
            cluster.close()
            raise ValueError("a game needs a manual network: the student delivers every message")
        self.cluster, self.held = cluster, held
        self.cluster.trace.flush()
        self._since = self.cluster.trace.next_seq
        self.timeline = Timeline(self.cluster, title=self._title)
        self.timeline.after_delivery.append(self.refresh)
        self._board.children = [self.timeline.widget]
        self.rounds += 1
        if old is not None:
            old.close()
        if old_cluster is not None:
            old_cluster.close()
        self.refresh()

    @property
    def verdict(self) -> Verdict:
        assert self.cluster is not None
        trace = self.cluster.trace
        trace.flush()
        return judge(self.goal, trace.events(since=self._since))

    def refresh(self) -> None:
        """Say how the game stands; once it is decided, no more deliveries."""
        verdict = self.verdict
        assert self.timeline is not None
        self.timeline.enable_delivery(verdict.outcome == "playing")  # before the status says so
        color = {"won": "#1a7f37", "spent": "#b00", "playing": "#333"}[verdict.outcome]
        self._status.value = (f"<div class='jupyter-refs-goal jupyter-refs-goal-{verdict.outcome}' "
                              f"style='color:{color}'>{html.escape(verdict.sentence(self.goal))}"
                              "</div>")

    # -- playing in text ---------------------------------------------------------------------

    @property
    def in_flight(self) -> InFlightList:
        """The messages waiting to be delivered, oldest first, numbered from 1 when shown."""
        assert self.cluster is not None
        return InFlightList(self.cluster.in_flight)

    @property
    def status(self) -> str:
        """How the game stands, in one sentence (what the widget shows above the timeline); a
        cell ending in it shows the sentence, not a quoted string (review 5)."""
        return Listing(self.verdict.sentence(self.goal))

    @property
    def deliveries(self) -> int:
        """Deliveries made since the game (re)started; a refused one is not counted."""
        return self.verdict.deliveries

    def deliver(self, which: int | str) -> None:
        """Deliver the ``which``-th message of :attr:`in_flight` (from 1), or the oldest in
        flight of the operation ``which`` ("scatter"); print what was delivered or why it was
        refused (a refusal costs nothing), how the game stands, and what is left in flight."""
        assert self.cluster is not None and self.timeline is not None
        if self.verdict.outcome != "playing":
            print(f"The game is over. {self.status}")
            return
        waiting = self.in_flight
        if isinstance(which, str):
            msg = next((m for m in waiting if m.op == which), None)
            if msg is None:
                print(f"no {which} in flight: pick one of {sorted({m.op for m in waiting})}")
                return
        elif isinstance(which, int) and not isinstance(which, bool) and 1 <= which <= len(waiting):
            msg = waiting[which - 1]
        else:
            print(f"pick a message from 1 to {len(waiting)} of game.in_flight, or an operation's "
                  f"name, not {which!r}")
            return
        try:
            self.cluster.deliver(msg.msg_id)
        except Exception as exc:  # noqa: BLE001 - shown to the player, the cluster is unchanged
            print(f"refused (not counted): {exc}")
        else:
            print(f"delivered {msg}")
        self.timeline.update()
        self.refresh()
        print(self.status)
        if self.verdict.outcome == "playing":
            print(repr(self.in_flight))

    def text(self) -> str:
        """The game in text: the goal, how it stands, and (while playing) the messages in
        flight with how to deliver them."""
        lines = [f"Goal: {self.goal.describe()}", self.status]
        if self.verdict.outcome == "playing":
            lines.append(repr(self.in_flight))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    # -- display -----------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        from .resources import ensure_bokehjs

        ensure_bokehjs()
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.text()
        return bundle

    def close(self) -> None:
        if self.timeline is not None:
            self.timeline.close()
        if self.cluster is not None:
            self.cluster.close()
        self.widget.close()
