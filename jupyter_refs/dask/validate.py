"""Trace validation: is what real dask did under an order what the model does under it?

:func:`explore_dask` runs a scenario on distributed's own code under many message orders.
For each of those runs, :func:`validate` makes the model (``protocol="dask"``) deliver its
messages in the order dask delivered the same messages, and compares the two verdicts.  As
TLA+'s trace validation asks whether a real system's trace is a behaviour of its spec, this
asks whether each order of dask's is one the model can take, and whether the model then says
what dask did: the value returned or the exception raised, and whether a future was lost.

**Following an order.**  dask's run is read as its deliveries, in order, of the messages the
model also has (dask's names mapped by :data:`~jupyter_refs.dask.explore.MESSAGE_NAMES`; a
batch split into its ops; keys compared by their prefix, ``key_split``, since dask and the
model tokenize functions differently).  Messages only dask sends (handshakes, heartbeats,
replies the model folds into one) are left out: they are dask's machinery, not the protocol
the model carries.  At each delivery the model takes, oldest first: a message matching the
next of dask's deliveries; else a message dask never delivers (the model's own, e.g. a task
run's thread hand-off), as early as dask would have; else the message matching the earliest
of dask's later deliveries — and there **the traces part**: dask delivered something next
that the model had not sent.  The first parting is reported with both sides' messages.

**Verdicts.**  The outcome (returned value; or the exception's type, a wait that can never
end being one outcome on both sides: dask's ``HangError``, the model's
``HeldMessagesError``, and one that goes on for ever another: dask's gather asking again
for data that is gone, which the model gives up after three tries, ``FutureLostError``), and
whether a future was lost (``dangling_future``, which dask's
explorer judges on dask's own objects and the model's checks on its trace).  The model's
other checks (refcounts, leaks) have nothing to compare with on dask's side and are not
compared.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dask.utils import key_split

from .. import arguments
from ..errors import LivelockError
from ..explore import MAX_DELIVERIES, Run, ScenarioError, run_choosing, scenario_arity
from ..promises import BY_NAME
from ..protocol.messages import EXECUTE, QUERY_REPLY, Message
from ..protocol.payloads import CLIENT, PAYLOADS, kind_of
from .explore import explore_dask, model_op, protocol_label

DANGLING_FUTURE = BY_NAME["dangling_future"].name
#: Exceptions that say "this wait can never end", on dask's side and the model's.
HANGS = frozenset({"HangError", "HeldMessagesError"})
#: And "this goes on for ever": dask's simulator stops a run after its thousandth delivery
#: (a gather that finds no data asks again for ever, "Couldn't gather keys, rescheduling");
#: the model's gather gives up after three tries and says the data is lost.
LOOPS = frozenset({"LivelockError", "FutureLostError"})

#: One delivery, as both sides can name it: op, sender, receiver, and the keys' prefixes.
Delivery = tuple[str, str, str, frozenset[str]]


def describe(op: str, sender: str, receiver: str, keys: Sequence[str]) -> Delivery:
    return op, sender, receiver, frozenset(key_split(k) for k in keys)


def _matches(msg: Delivery, target: Delivery) -> bool:
    """The model's message is dask's delivery: same op and ends, its keys among dask's (a
    batch of dask's names every key of its ops at once)."""
    return msg[:3] == target[:3] and (msg[3] <= target[3] or not target[3])


def model_sends(sender: str, receiver: str, op: str) -> bool:
    """Whether the model has the message: its payload is declared for the sender's kind (a
    task run, ``execute``, is the model's as dask's).  A bare ``reply`` is the model's answer
    to a client's query only; dask's to a worker (the ``get_data`` acknowledgement) is not."""
    if op == QUERY_REPLY:
        return kind_of(receiver) == CLIENT
    return op == EXECUTE or (kind_of(sender), op) in PAYLOADS


def _query_reply(sender: str, op: str) -> str:
    """dask names a reply by its request (``who_has-reply``); the model's answer to a client's
    query is one op, ``reply``, whatever was asked."""
    if op.endswith("-reply") and (kind_of(sender), op) not in PAYLOADS \
            and (CLIENT, op[:-len("-reply")]) in PAYLOADS:
        return QUERY_REPLY
    return op


def dask_deliveries(sim_trace: Sequence[tuple]) -> list[Delivery]:
    """dask's deliveries of the messages the model also has, in order."""
    out = []
    for event in sim_trace:
        if event[0] not in ("delivered", "run"):
            continue
        _, _, sender, receiver, op, _, keys, _ = event
        for part in model_op(op).split("+"):
            part = _query_reply(sender, part)
            if model_sends(sender, receiver, part):
                out.append(describe(part, sender, receiver, keys))
    return out


@dataclass(frozen=True)
class Verdict:
    """What a run did, in the terms both sides judge."""

    outcome: str  # "returned 124", "raised FutureCancelledError", "waits for ever"
    lost: bool  # a future lost: dangling_future

    @classmethod
    def of(cls, run: Run) -> Verdict:
        if run.raised is not None:
            name = run.raised.name
            outcome = ("waits for ever" if name in HANGS else "goes on for ever" if name in LOOPS
                       else f"raised {name}")
        else:
            outcome = f"returned {run.returned}"
        return cls(outcome, any(v.name == DANGLING_FUTURE for v in run.violations))

    def __str__(self) -> str:
        return self.outcome + (", a future lost" if self.lost else "")


@dataclass
class Pair:
    """One order: dask's run, the model's run following it, and where their traces part."""

    dask_schedule: str
    dask: Verdict
    model_schedule: str
    model: Verdict
    #: The first delivery where the model could not follow dask (None: it followed all).
    parted: str | None = None

    @property
    def agree(self) -> bool:
        return self.dask == self.model

    def __str__(self) -> str:
        said = "agree" if self.agree else "DISAGREE"
        text = (f"{said}: dask {self.dask} ({self.dask_schedule}); model {self.model} "
                f"({self.model_schedule})")
        return text + (f"\n    the traces part: {self.parted}" if self.parted else "")


@dataclass
class Validation:
    """The pairs of one scenario's search (see the module doc)."""

    scenario: str
    pairs: list[Pair] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def agreed(self) -> int:
        return sum(p.agree for p in self.pairs)

    @property
    def disagreements(self) -> list[Pair]:
        return [p for p in self.pairs if not p.agree]

    @property
    def followed(self) -> int:
        """Orders the model followed delivery for delivery."""
        return sum(p.parted is None for p in self.pairs)

    def summary(self) -> str:
        n = len(self.pairs)
        lines = [f"{self.scenario}: {self.agreed} of {n} orders agree "
                 f"({100 * self.agreed / max(n, 1):.1f}%); the model followed "
                 f"{self.followed} of them message for message; {self.seconds:.1f} s"]
        lines += [f"  {p}" for p in self.disagreements]
        return "\n".join(lines)


class _Follower:
    """The model's chooser for one of dask's orders (see the module doc)."""

    def __init__(self, targets: list[Delivery], cut: bool = False):
        self.targets = targets
        #: dask's run was stopped as a loop (its simulator's delivery limit): once the model
        #: has followed every one of those deliveries it is stopped there too, as dask was.
        self.cut = cut
        self.done = [False] * len(targets)
        self.first = 0  # the first of dask's deliveries not yet matched
        self.parted: str | None = None

    def __call__(self, heads: Sequence[Message]) -> int:
        named = [describe(h.op, h.sender, h.receiver, h.keys) for h in heads]
        targets, done = self.targets, self.done
        if self.cut and self.first == len(targets):
            raise LivelockError(f"the model followed all {len(targets):,} of dask's deliveries "
                                "up to where dask's run was stopped as going on for ever")
        # The earliest of dask's deliveries still to come that a deliverable message matches.
        best = None
        for j in range(self.first, len(targets)):
            if done[j]:
                continue
            i = next((i for i, d in enumerate(named) if _matches(d, targets[j])), None)
            if i is not None:
                best = (j, i)
                break
        if best is None or best[0] != self.first:
            # Not dask's next delivery: first a message of the model's own, if one is waiting.
            own = next((i for i, d in enumerate(named)
                        if not any(_matches(d, targets[j]) for j in range(self.first,
                                                                          len(targets))
                                   if not done[j])), None)
            if own is not None:
                return own
            if best is None:
                return 0
            if self.parted is None:
                self.parted = (f"dask delivered {_said(targets[self.first])} next (its "
                               f"delivery {self.first + 1}); the model had not sent it, and "
                               f"delivered {heads[best[1]]} first")
        j, i = best
        done[j] = True
        while self.first < len(targets) and done[self.first]:
            self.first += 1
        return i


def _looping(picks: list[int]) -> list[int]:
    """The picks of a model run stopped where dask's looping run was, its last cycle repeated
    past the model's delivery limit: its schedule then replays to the same "goes on for ever",
    as the explorer writes a loop it stopped."""
    for period in range(1, 65):
        tail = picks[-6 * period:]
        if len(tail) == 6 * period and all(tail[i] == tail[i + period]
                                           for i in range(len(tail) - period)):
            return picks + picks[-period:] * (MAX_DELIVERIES // period + 1)
    return picks


def _said(d: Delivery) -> str:
    keys = ",".join(sorted(d[3]))
    return f"{d[0]}[{keys}] {d[1]}->{d[2]}"


def validate(scenario: Callable[..., Any], max_schedules: int = 200, bound: int = 2,
             seed: int = 0, workers: int = 1, protocol: str = "dask",
             progress: Callable[[int, int, int], None] | None = None) -> Validation:
    """Explore ``scenario`` on real dask and, for each order, compare the model's verdict.

    The search is :func:`~jupyter_refs.dask.explore.explore_dask`'s (its arguments mean
    the same); each of its runs is followed on the model under ``protocol``.
    """
    arguments.scenario(scenario)
    arguments.text(protocol, "protocol")
    result = Validation(getattr(scenario, "__name__", "scenario"))
    n_clients = scenario_arity(scenario)
    start = time.perf_counter()

    def visit(run: Run) -> None:
        if run.pruned:
            return  # stopped by the search's sleep sets: no outcome to compare
        looped = run.raised is not None and run.raised.name == LivelockError.__name__
        follower = _Follower(dask_deliveries(run.sim_trace), cut=looped)
        model = run_choosing(scenario, protocol, follower, workers, n_clients)
        if looped and follower.first == len(follower.targets):
            model.picks = _looping(model.picks)
        result.pairs.append(Pair(run.schedule, Verdict.of(run), model.schedule,
                                 Verdict.of(model), follower.parted))

    try:
        explore_dask(scenario, max_schedules=max_schedules, bound=bound, seed=seed,
                     workers=workers, progress=progress, visit=visit)
    except ScenarioError:
        pass  # every order raised the same: still a verdict per order to compare
    result.seconds = time.perf_counter() - start
    return result


__all__ = ["Pair", "Validation", "Verdict", "protocol_label", "validate"]
