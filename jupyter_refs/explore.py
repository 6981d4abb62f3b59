"""Explore message orders: run a scenario again and again, each time delivering differently.

A *scenario* is a function of one or more clients (``def s(client): ...``).  Each
run builds a fresh kernel-side cluster whose network is a :class:`Chooser`: every
time a message must be delivered — while a call of the scenario blocks, and
after it returns until nothing is in flight — the explorer picks one of the
deliverable channel heads.  A run is fully determined by those picks, so it can
be replayed exactly.

**Systematic.** Depth-first over the picks, stateless (each run replays a prefix
from scratch), with a *bound* on how many messages may be *delayed* — delivered
after a younger message that overtook them while they could have gone.  Sleep sets prune
orders that cannot differ: two deliveries to different actors commute — each
touches only its receiver, and what they send goes on different channels — so
after exploring "A then B", "B then A" is not run again.  The bound is deepened one
message at a time; each pass follows the runs of the pass before (its own runs that
delay fewer messages) from what it kept of them — their decisions and the states they
met — instead of running them again (see :func:`_remade`).
**Sampling.** Past the bounded space (when it is exhausted and budget remains),
random runs (PCT by default; ``sampling.py``), each drawing its numbers from a hash of
the seed and its number.  With ``processes > 1`` (or a dask ``client``) they are shared
by order with forked copies of this process (:class:`_Share`); a copy sends back only
its counts and, per failure group, the picks of its smallest run, which is replayed
here — a replay is exact — to give the failure its trace.

A **schedule string** names a run: ``dask@3f9a1c:4>1,9>2`` — the protocol (its
registered name: ``legacy`` runs are written ``dask``, and old ``legacy@`` strings
still replay), a fingerprint of the scenario's code, the cluster's shape when it is
not one worker and one client (``dask@3f9a1c/w2c2:4>1``), then each deviation as
``decision>index`` (the index among the deliverable heads, oldest first).  Only
deliveries with a choice (two or more deliverable heads) count as decisions.
``replay(scenario, schedule)`` reruns it, trace and violations included.

**An outcome that depends on the order is a finding.**  The first run — the plain
in-order one — sets the baseline: what the scenario returned or raised.  A run that
raises where the baseline did not (a ``FutureCancelledError`` from
``submit(len, y).result()``: #8576 as the user meets it) fails as ``scenario_raised``;
one that returns where the baseline raised, or returns another value, fails as
``outcome_differs`` — and then the in-order run is reported too, as the failure it is
(dask#8215: the in-order run is the one that raises).  Failures are grouped by the
exception's type and the shape of its message.  Only when every order explored raises
the same is it the scenario's own bug: :class:`ScenarioError`.
"""

from __future__ import annotations

import array
import ast
import bisect
import functools
import gc
import hashlib
import inspect
import io
import itertools
import linecache
import marshal
import multiprocessing
import os
import pickle
import random
import re
import sys
import time
import traceback
import types
import weakref
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import arguments, gcscope, interrupts
from .beliefs import Beliefs
from .checks import Invariant, Violation, invariant_name
from .checks import judge as judge_invariants
from .cluster import Cluster
from .errors import ArgumentTypeError, ArgumentValueError, JupyterRefsError, LivelockError
from .network import Chooser
from .protocol.messages import EXECUTE, Message
from .protocol.ready import ReadyQueue
from .protocol.variants import ALIASES, VARIANTS, ProtocolVariant, is_registered, release_variant
from .sampling import SPLIT_PICKS, Draw, Memo, Owners, Seen
from .task_runs import current_run
from .trace import Trace
from .userline import Unshortened

Scenario = Callable[..., Any]


class ScenarioError(JupyterRefsError, RuntimeError):
    """The scenario raises the same under every order explored: a bug of its own, not of an order.

    The in-order schedule it raised under is attached (an exception only some orders
    raise, or that some order avoids, is a failure of the search instead).
    """

    def __init__(self, schedule: str, exc: BaseException | Raised, orders: int = 1):
        self.schedule = schedule
        self.exception = exc
        name, text = ((exc.name, exc.message) if isinstance(exc, Raised)
                      else (type(exc).__name__, _one_line(exc)))
        every = ("before any message could overtake another" if orders <= 1
                 else f"and the same under every one of the {orders:,} orders explored")
        super().__init__(f"the scenario raised {name}: {text} (under schedule {schedule}, the "
                         f"in-order one, {every}: no order of messages changes it, so this is "
                         "the scenario's own error, not a race)")


#: How long a schedule string is printed before it is cut (the whole string stays on the object).
SHOWN_SCHEDULE = 72


def short_schedule(schedule: str, limit: int = SHOWN_SCHEDULE) -> str:
    """``schedule`` as printed: whole when short, else its head and how many deviations it has
    — ``dask@a6d9f7:3>2,5>1,…(10,014 deviations)``.  Replay and ``%confirm`` take the whole
    string (``failure.schedule``), never this one."""
    if len(schedule) <= limit:
        return schedule
    head, _, tail = schedule.partition(":")
    steps = tail.split(",")
    shown: list[str] = []
    for step in steps:
        if len(head) + 1 + len(",".join([*shown, step])) > limit - 24:
            break
        shown.append(step)
    return f"{head}:{','.join(shown)},…({len(steps):,} deviations)"


def short_list(items: Sequence[str], limit: int = 5) -> list[str]:
    """The first ``limit`` of ``items``, and how many more there are, as one more item."""
    if len(items) <= limit:
        return list(items)
    return [*items[:limit], f"… and {len(items) - limit:,} more"]


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else ""


#: The name of the failure a scenario's own exception makes (see :class:`Raised`).
SCENARIO_RAISED = "scenario_raised"
#: The name of the failure of a run that returned where the in-order run raised, or returned
#: something else (see :class:`Outcome`).
OUTCOME_DIFFERS = "outcome_differs"


class ScheduleError(JupyterRefsError, ValueError):
    """A schedule string that is malformed, or that does not belong to this scenario."""


# -- schedules -------------------------------------------------------------------------------

_NAME = r"[a-z0-9.-]+"  # a protocol's name, as a schedule string carries it
_SCHEDULE = re.compile(rf"^(?P<protocol>{_NAME})@(?P<fp>[0-9a-f]{{6}})"
                       r"(?:/(?:w(?P<workers>[1-9]\d*))?(?:c(?P<clients>[1-9]\d*))?)?"
                       r":(?P<devs>(\d+>\d+(,\d+>\d+)*)?)$")


def protocol_name(protocol: str | ProtocolVariant) -> str:
    """The name a schedule string carries for ``protocol``: a registered name as given, an old
    name as its protocol's name today (``legacy`` is ``dask``), a :class:`ProtocolVariant`'s
    own ``name``.

    A variant built from the flags (a student's "generations without incarnations") has a
    name of its own; it must not pass for a registered one it differs from, or a schedule
    string naming it would replay under the registered protocol instead.
    """
    if isinstance(protocol, str):
        alias = ALIASES.get(protocol)
        return protocol if alias is None else alias.name
    if not re.fullmatch(_NAME, protocol.name):
        raise ValueError(f"a protocol variant's name goes into schedule strings: {protocol.name!r} "
                         "must be lower-case letters, digits, '.' and '-'")
    known = (VARIANTS.get(protocol.name) or ALIASES.get(protocol.name)
             or release_variant(protocol.name))
    if known is not None and known != protocol:
        raise ValueError(f"the variant is named {protocol.name!r}, like a registered protocol it "
                         "differs from: give it a name of its own")
    return protocol.name


def fingerprint(scenario: Scenario) -> str:
    """Six hex digits from the scenario's code: a schedule only fits the scenario it came from."""
    given = getattr(scenario, "fingerprint", None)  # e.g. a notebook cell's, from its source
    if given is not None:
        return given
    code = scenario.__code__
    h = hashlib.blake2b(digest_size=3)
    h.update(code.co_code)
    h.update(repr(code.co_consts).encode())
    h.update(repr(code.co_names).encode())
    return h.hexdigest()


def format_schedule(protocol: str, fp: str, picks: Sequence[int], workers: int = 1,
                    clients: int = 1) -> str:
    """``protocol@fp[/wNcM]:d>i,…``: the shape only when it is not one worker, one client."""
    shape = (f"/{f'w{workers}' if workers != 1 else ''}{f'c{clients}' if clients != 1 else ''}"
             if (workers, clients) != (1, 1) else "")
    return f"{protocol}@{fp}{shape}:" + ",".join(f"{i}>{c}" for i, c in enumerate(picks) if c)


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule string."""

    protocol: str
    fingerprint: str
    deviations: dict[int, int]
    workers: int = 1
    clients: int = 1


def parse_schedule(schedule: str) -> Schedule:
    """Parse a schedule string; old ones (no ``/wNcM``) mean one worker and one client."""
    match = _SCHEDULE.match(schedule.strip())
    if match is None:
        raise ScheduleError(f"{schedule!r} is not a schedule (expected PROTOCOL@XXXXXX[/wNcM]:D>I,"
                            "D>I…, e.g. dask@3f9a1c:4>1 or dask@3f9a1c/w2:4>1)")
    devs = {}
    for part in filter(None, match["devs"].split(",")):
        decision, index = part.split(">")
        devs[int(decision)] = int(index)
    return Schedule(match["protocol"], match["fp"], devs, int(match["workers"] or 1),
                    int(match["clients"] or 1))


# -- one run -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Decision:
    #: The deliverable messages, oldest first (the network's own objects: a run makes one
    #: decision per delivery with a choice, and copying their fields each time cost more
    #: than choosing; msg_id, receiver, op and channel never change once sent).
    heads: list[Message]
    pick: int
    sleep: frozenset[tuple[int, str]] = frozenset()  # asleep on entry: (msg_id, receiver)


@dataclass
class Run:
    """One execution: its picks, trace and verdict."""

    #: What the schedule string says besides the picks: protocol, fingerprint, workers, clients.
    shape: tuple[str, str, int, int]
    picks: list[int]
    decisions: list[_Decision]
    trace: Trace
    violations: list[Violation]
    cluster: Cluster
    pruned: bool = False  # stopped early: every deliverable message was asleep
    #: What the scenario raised under this order, if it did (also in ``violations``).
    raised: Raised | None = None
    #: What it returned, as :func:`value_text` writes it (None when it raised).
    returned: str | None = None
    #: The client whose scenario it is, when it has one (a violation of its outcome names it).
    owner: str | None = None
    #: The states of its path (a search that fingerprints them): the next run's prefix's.
    path: dict | None = None
    #: What it did at each state it fingerprinted, in order (see :func:`_visit`), for a pass
    #: that makes it again to follow without running it (see :func:`_remade`).
    visits: list | None = None
    #: Which random order it is, when it is one (see :class:`_Share`); -1 for the search's
    #: runs.
    draw: int = -1

    @property
    def outcome(self) -> Outcome:
        return Outcome(self.raised, self.returned)

    @functools.cached_property
    def schedule(self) -> str:
        """The replayable schedule string, made when asked: most runs pass and are dropped."""
        return format_schedule(*self.shape[:2], self.picks, *self.shape[2:])

    @property
    def failed(self) -> bool:
        return bool(self.violations)

    @property
    def deviations(self) -> int:
        return sum(1 for p in self.picks if p)

    @functools.cached_property
    def delays(self) -> int:
        """How many messages were delivered after a younger one that could not overtake them.

        Cached: a failure group compares its smallest run with every new one.
        """
        delayed: set[int] = set()
        for d in self.decisions:
            if d.pick:
                delayed |= _skipped(d, d.pick)
        return len(delayed)


@dataclass(frozen=True)
class Raised:
    """An exception the scenario raised: its type, its message, where, and its traceback text.

    The exception itself is not kept: its traceback holds the scenario's frames, and
    with them every future the scenario held (they are released when the run ends,
    as if the scenario had returned).
    """

    type: str  # qualified name, e.g. jupyter_refs.errors.FutureCancelledError
    message: str
    key: str | None  # the key it is about (a FutureCancelledError's), if any
    seq: int  # the trace's next event when it was raised
    traceback: str
    #: Decisions made before it was raised: only an order that differs in them can avoid it.
    decisions: int = 0

    @property
    def name(self) -> str:
        return self.type.rpartition(".")[2]

    def __str__(self) -> str:
        return f"{self.name}: {self.message}" if self.message else self.name


def raised_from(exc: BaseException, seq: int, decisions: int = 0) -> Raised:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    traceback.clear_frames(exc.__traceback__)  # let go of the scenario's futures
    kind = type(exc)
    key = getattr(exc, "key", None)
    return Raised(f"{kind.__module__}.{kind.__qualname__}", _one_line(exc),
                  key if isinstance(key, str) else None, seq, text, decisions)


#: The parts of a returned value's repr that differ from run to run whatever the order:
#: ``pure=False`` keys (a uuid4) and hex tokens of 32 digits.
_RANDOM = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{32}")


def value_text(value: Any) -> str:
    """A returned value as an outcome compares it: its repr, short, random keys taken out."""
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a value that cannot be shown is still a value
        text = f"<{type(value).__name__}: repr raised {type(exc).__name__}>"
    text = _RANDOM.sub("…", text)
    return text if len(text) <= 120 else text[:119] + "…"


@dataclass(frozen=True)
class Outcome:
    """What the scenario did under one order: raised (by type and message shape) or returned.

    Two runs with equal outcomes look the same to the user who ran the scenario; the
    explorer compares each run's with the in-order run's.
    """

    raised: Raised | None
    returned: str | None

    def _key(self) -> tuple:
        r = self.raised
        return ("raised", r.type, _shape(r.message)) if r is not None else ("returned",
                                                                             self.returned)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Outcome) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return f"raised {self.raised}" if self.raised is not None else f"returned {self.returned}"


def _outcome_violation(run: Run, name: str, explanation: str) -> Violation:
    """The scenario's outcome as a violation: recorded in the run's trace, so views mark it."""
    raised = run.raised
    trace = run.trace
    seq = trace.next_seq
    key = (raised.key if raised is not None else None) or ""
    first = raised.seq if raised is not None else seq
    client = run.owner
    trace.record("checks", "violation", key, name, first, client, explanation)
    trace.flush()
    return Violation(name, key, client, first, seq, explanation)


def judge_outcome(run: Run, baseline: Outcome | None) -> None:
    """Add the scenario's own outcome to the run's violations where it is a finding.

    Without a baseline (a replay), an exception is one, as an order made it.  Against the
    in-order run's outcome: an exception the baseline did not raise, or a value where it
    raised or returned another.  A value that differs where a check already failed adds
    nothing: the check says why.
    """
    if run.pruned:
        return
    raised = run.raised
    about = f" (about {raised.key})" if raised is not None and raised.key else ""
    if baseline is None:
        if raised is not None:
            run.violations.append(_outcome_violation(
                run, SCENARIO_RAISED, f"the scenario raised {raised}{about}. It does not under "
                "the in-order schedule: this order of messages made it."))
        return
    outcome = run.outcome
    if outcome == baseline:
        return
    if raised is not None:
        run.violations.append(_outcome_violation(
            run, SCENARIO_RAISED, f"the scenario raised {raised}{about}; under the in-order "
            f"schedule it {baseline}: this order of messages made it."))
    elif baseline.raised is not None or not run.violations:
        run.violations.append(_outcome_violation(
            run, OUTCOME_DIFFERS, f"the scenario {outcome} under this order; under the "
            f"in-order schedule it {baseline}: what the user sees depends on the order of "
            "messages."))


def _judge_baseline(run: Run, other: Run) -> None:
    """The in-order run that raised, once another order did not: a failure, and the first one
    a user meets (dask#8215's cancel-then-resubmit raises in order and returns when the
    cancellation's report overtakes the new run)."""
    raised = run.raised
    about = f" (about {raised.key})" if raised.key else ""
    run.violations.append(_outcome_violation(
        run, SCENARIO_RAISED, f"the scenario raised {raised}{about} under the in-order "
        f"schedule, where no message overtook another; under {short_schedule(other.schedule)} it "
        f"{other.outcome}: the outcome depends on the order of messages."))


class Stop(Unshortened):
    """Raised inside the network to abandon a redundant run.

    A ``BaseException``: it may be raised while a task runs (a task that waits
    delivers messages, and so makes decisions), and must not become that task's error;
    an :class:`~jupyter_refs.userline.Unshortened` one: most runs of a search end so, and
    nobody reads its traceback.
    """


class _Livelock(Unshortened):
    """Raised inside the network when a run passes :data:`MAX_DELIVERIES`, or comes back to a
    state it was in (``since``: the trace's next event then), past its prefix: its picks are
    the default ones there, so it would go round that loop for ever (a ``BaseException`` for
    the reason :class:`Stop` is one)."""

    def __init__(self, since: int | None = None, start: int | None = None):
        self.since = since
        self.start = start  # the decision the loop starts at


#: Deliveries after which a run is taken to repeat for ever (see :class:`LivelockError`):
#: far above what any scenario the explorer can search needs (#8576's takes about 30).
MAX_DELIVERIES = 10_000


class Abort(Unshortened):
    """Carries a :class:`ScheduleError` out of a task run, for the same reason."""

    def __init__(self, error: ScheduleError):
        self.error = error


#: The sleep-set identity of a task run: it conflicts with every delivery.  A run calls user
#: code, which may read its worker client's futures and make calls whose waits deliver
#: anything; it commutes with nothing.
_ANY = "*"


def _actor(msg: Message) -> str:
    """Whom delivering ``msg`` touches, for the sleep sets (see :data:`_ANY`)."""
    return _ANY if msg.op == EXECUTE else msg.receiver


def _wakes(sleeper: str, actor: str) -> bool:
    return sleeper == actor or sleeper == _ANY or actor == _ANY


def _run(scenario: Scenario, protocol: str | ProtocolVariant, workers: int, fp: str, prefix: Sequence[int],
         strict: bool, entry_sleep: frozenset = frozenset(), explored: frozenset = frozenset(),
         rng: random.Random | None = None, capacity: int = 100_000, keep_open: bool = False,
         clients: int | None = None, baseline: Outcome | None = None, judge: bool = True,
         invariants: Sequence[Invariant] = (), states: _States | None = None,
         path: dict | None = None, sleeps: Sequence[frozenset] = (),
         chooser: tuple[_Policy, list[_Decision]] | None = None) -> Run:
    """One run: follow ``prefix``, then the oldest awake message (or ``rng``) at each decision.

    At the prefix's last decision the node is re-entered with ``entry_sleep`` asleep and
    ``explored`` already tried; below it, a message stays asleep until a delivery to the
    same receiver (one that may not commute with it) happens.  ``sleeps`` are the sleep sets
    the prefix's earlier decisions were entered with (the run the prefix came from): a
    replay keeps them, so backtracking into those nodes later skips what is asleep there,
    and counts delays there as the run that first made them did.  Its outcome is judged
    against ``baseline`` (see :func:`judge_outcome`); ``judge=False`` leaves it for the caller
    (the in-order run, which is the baseline).  ``chooser``: a sampled run's policy made
    already, with the list its decisions go to (see :meth:`_Share._draw`).
    """
    # User calls begun; the scenario's outcome once it is over; the task runs in progress on
    # the run's stack, innermost last, each [what it runs (see _frame), the calls it began].
    progress: list = [0, None, []]
    if chooser is not None:
        policy, decisions = chooser
    else:
        decisions = []
        policy = choosing_policy(decisions, prefix, strict, entry_sleep, explored, rng, states, progress,
                                 path, sleeps)
    cluster = Cluster(protocol=protocol, workers=workers, network=policy, trace_capacity=capacity,
                      threads_per_worker=THREADS_PER_WORKER)
    cluster.flush_calls = keep_open  # the checks read the run once, at the end
    if states is not None:
        policy.cluster = cluster
        begin, call, stack = cluster.begin_call, cluster.run_inline, progress[2]

        def begin_call(cell: str | None) -> None:
            progress[0] += 1
            if stack:
                stack[-1][1] += 1
            begin(cell)

        def call_inline(run: Any) -> tuple[bool, Any]:
            # A task runs inline, inside the delivery of its execute: while it waits in a
            # call of its own, every delivery happens inside its frame (see _visit).
            stack.append([_frame(cluster, run), 0])
            try:
                return call(run)
            finally:
                stack.pop()

        cluster.begin_call = begin_call
        cluster.run_inline = call_inline
    n_clients = scenario_arity(scenario) if clients is None else clients
    names, pruned, raised, returned = _play(scenario, cluster, n_clients, decisions, progress)
    # A deviation past the run's last decision: replayed quietly, the run would pass for the
    # schedule's while being the in-order one.
    # (Not a run stopped as a loop: a starving loop's schedule repeats its picks past the stop.)
    looped = raised is not None and raised.name == LivelockError.__name__
    i = (next((j for j in range(len(decisions), len(prefix)) if prefix[j]), None)
         if strict and not looped else None)
    if i is not None:
        cluster.close()
        raise ScheduleError(f"the schedule does not fit this scenario: it deviates at decision "
                            f"{i} ({i}>{prefix[i]}), but the run makes only {len(decisions)} "
                            "decisions")
    picks = [d.pick for d in decisions] + cluster.__dict__.pop("_explore_loop", [])
    violations = [] if pruned else cluster.violations
    if invariants and not pruned:
        # Invariants of one's own (checks.judge) after the checks' own: the first violation
        # still names what the checks saw, and a run only they flag fails with theirs.
        violations += judge_invariants(cluster.trace, invariants)
    if not keep_open:
        if pruned and cluster.checks is not None:
            # Stopped: its verdict is never read, so the checks need not read its trace.
            cluster.checks.close()
            cluster.checks = None
        cluster.close()
        # The run's own cycles (the chooser's closure and the cluster, the counted
        # ``_begin_call``): cut, so that a disposed run is freed by reference counting.
        policy.choose = policy.cluster = None
        cluster.__dict__.pop("_begin_call", None)
        cluster.__dict__.pop("_call", None)
        # And the search's own wrappers (with states): closures over the cluster's methods.
        cluster.__dict__.pop("begin_call", None)
        cluster.__dict__.pop("run_inline", None)
        cluster.__dict__.pop("_next", None)
    run = Run((protocol_name(protocol), fp, workers, n_clients), picks, decisions,
              cluster.trace, violations, cluster, pruned, raised, returned,
              names[0] if len(names) == 1 else None)
    if states is not None:
        run.path = policy.path
        run.visits = policy.visits
    if judge:
        judge_outcome(run, baseline)
    return run


def run_choosing(scenario: Scenario, protocol: str | ProtocolVariant,
                 pick: Callable[[Sequence[Message]], int], workers: int = 1,
                 clients: int | None = None) -> Run:
    """One run in which ``pick`` chooses every delivery: the index of the message to deliver
    among the deliverable ones, oldest first (the explorer's own order, so the run's schedule
    string replays it with :func:`replay`).

    For a search of one's own: trace validation (``jupyter_refs.dask.validate``) makes the
    model follow the order real dask delivered its messages in.  Unlike the explorer's runs,
    ``pick`` sees every delivery, a lone deliverable message too, and may raise
    :class:`LivelockError` to stop the run as one that goes on for ever (its outcome, as a
    drain the explorer stops is, whatever the scenario did before).  The run is not judged
    against an in-order run (``judge_outcome`` does that); its cluster is closed.
    """
    decisions: list[_Decision] = []

    def choose(heads: Sequence[Message]) -> Message:
        i = pick(heads)
        if len(heads) > 1:
            decisions.append(_Decision(list(heads), i))
        return heads[i]

    policy = _Following(choose, set())
    cluster = Cluster(protocol=protocol, workers=workers, network=policy,
                      threads_per_worker=THREADS_PER_WORKER)
    n_clients = scenario_arity(scenario) if clients is None else clients
    names, pruned, raised, returned = _play(scenario, cluster, n_clients, decisions)
    violations = cluster.violations
    cluster.close()
    return Run((protocol_name(protocol), fingerprint(scenario), workers, n_clients),
               [d.pick for d in decisions], decisions, cluster.trace, violations, cluster,
               pruned, raised, returned, names[0] if len(names) == 1 else None)


def choosing_policy(decisions: list[_Decision], prefix: Sequence[int], strict: bool,
            entry_sleep: frozenset, explored: frozenset, rng: random.Random | None,
            states: _States | None = None, progress: list | None = None,
            path: dict | None = None, sleeps: Sequence[frozenset] = ()) -> _Policy:
    """The chooser of one run, appending each decision it makes to ``decisions``.

    Closures rather than methods: a run makes a decision per delivery with a choice,
    and reading a closure's cells is cheaper than an object's attributes.
    """
    sleeping: set[tuple[int, str]] = set()
    last = len(prefix) - 1
    delayed: set[int] = set()  # the messages delayed so far (with ``states`` only)
    # The states of this run's path, and the trace's next event and the decision then: the
    # prefix's from the run it came from (the same states: a replay is exact).
    mine: dict = {k: v for k, v in path.items() if v[1] <= last} if path else {}
    visits: list = []  # what _visit did at each state (see Run.visits)

    if rng is not None and not prefix:  # a random run of real dask's explorer
        def choose_at_random(heads: Sequence[Message]) -> Message:
            pick = rng.randrange(len(heads))
            decisions.append(_Decision(heads, pick))
            return heads[pick]

        return _Policy(choose_at_random, sleeping)

    def choose(heads: Sequence[Message]) -> Message:
        if len(heads) == 1:
            # No choice, so not a decision: it only wakes what it may not commute with.
            head = heads[0]
            if sleeping:
                if any(m == head.msg_id for m, _ in sleeping):
                    raise Stop
                actor = _actor(head)
                sleeping.difference_update([s for s in sleeping if _wakes(s[1], actor)])
            return head
        i = len(decisions)
        if i <= last:
            pick = prefix[i]
            if pick >= len(heads):
                if strict:
                    raise Abort(ScheduleError(
                        f"the schedule does not fit this scenario: decision {i} ({i}>{pick}) "
                        f"has {len(heads)} deliverable messages, not {pick + 1}"))
                pick = 0
            entry = entry_sleep if i == last else sleeps[i] if i < len(sleeps) else _EMPTY
            if states is not None and not path and current_run.get() is None:
                # The path so far (the previous run's, when given): a state the run comes
                # back to is a loop (see _visit).
                _visit(states, policy.cluster, progress, entry, delayed, mine, i, replayed=True,
                       log=visits)
            if i < last:
                # Inside the prefix: nothing is asleep below (what follows only as quickly).
                decision = _Decision(heads, pick, entry)
                decisions.append(decision)
                if states is not None and pick:
                    delayed.update(_skipped(decision, pick))
                sleeping.clear()
                return heads[pick]
            base = set(entry_sleep) | set(explored)
        elif rng is not None:
            pick, entry, base = rng.randrange(len(heads)), _EMPTY, set()
        else:
            entry = frozenset(sleeping)
            if states is not None and (current_run.get() is None or (
                    i == last + 1 and _framed(progress))):
                # Inside a task's call, only at the run's first new decision: there the search
                # branched, and most runs end there on a state explored already; deeper in the
                # task nearly every state is new, and fingerprinting each cost more than the
                # runs it saved (#5379, whose steal race happens while its tasks wait).
                _visit(states, policy.cluster, progress, entry, delayed, mine, len(decisions),
                       log=visits)
            asleep = {m for m, _ in sleeping}
            pick = next((j for j, h in enumerate(heads) if h.msg_id not in asleep), -1)
            if pick < 0:
                raise Stop
            base = sleeping
        decision = _Decision(heads, pick, entry)
        decisions.append(decision)
        if states is not None and pick:
            delayed.update(_skipped(decision, pick))
        actor = _actor(heads[pick])
        # Still asleep below: what commutes with this delivery (another receiver).
        kept = {s for s in base if not _wakes(s[1], actor)}
        sleeping.clear()
        sleeping.update(kept)
        return heads[pick]

    policy = _Policy(choose, sleeping)
    policy.path = mine
    policy.visits = visits
    return policy


def _play(scenario: Scenario, cluster: Cluster, n_clients: int, decisions: list[_Decision],
          progress: list | None = None) -> tuple[list[str], bool, Raised | None, str | None]:
    """Run the scenario on fresh clients, then drain: the clients' names, whether the run was
    pruned (every deliverable message asleep), what the scenario raised, if it did, and what
    it returned otherwise.

    The clients are let go before the drain, so the futures they hold are released as if
    the scenario's caller had dropped them.
    """
    users = [cluster.client() for _ in range(n_clients)]
    names = [c.name for c in users]
    pruned = False
    raised = returned = None
    try:
        try:
            returned = value_text(scenario(*users))
        except Exception as exc:  # noqa: BLE001 - the scenario's own error: a failure, judged later
            raised = raised_from(exc, cluster.trace.next_seq, len(decisions))
        if progress is not None:
            progress[1] = Outcome(raised, returned)._key()
        del users
        cluster.step(1 << 62)  # drain: every remaining delivery is a decision too
    except Stop:
        pruned = True
    except Abort as abort:
        cluster.close()
        raise abort.error from None
    except _Livelock as loop:
        raised, returned = (raised_from(_livelock(cluster, loop.since), cluster.trace.next_seq,
                                    len(decisions)), None)
        if loop.start is not None:
            # The loop's picks, repeated past MAX_DELIVERIES: the schedule string then replays
            # to the same LivelockError without states (a starving loop deviates every time).
            cycle = [d.pick for d in decisions[loop.start:]]
            if any(cycle):
                cluster.__dict__["_explore_loop"] = cycle * (MAX_DELIVERIES // len(cycle) + 1)
    except LivelockError as exc:  # a chooser's own verdict (run_choosing): the run's outcome
        raised, returned = raised_from(exc, cluster.trace.next_seq, len(decisions)), None
    except Exception as exc:  # noqa: BLE001 - raised while draining (a task's call, a check)
        if raised is None:
            raised, returned = raised_from(exc, cluster.trace.next_seq, len(decisions)), None
    return names, pruned, raised, returned


def _livelock(cluster: Cluster, since: int | None = None) -> LivelockError:
    """What the stopped run kept delivering: the messages of its loop (since it was first in
    the state it came back to), or of its last thousand deliveries — the same few, in name
    order, whichever way the loop was noticed, so that both runs fall in one failure group."""
    trace = cluster.trace
    start = max(0, trace.next_seq - 1000) if since is None else since
    seen = sorted({f"{e.op}[{e.key}]" for e in trace.events(kind="msg.received", since=start)})
    repeated = ", ".join(seen[:6]) + (", …" if len(seen) > 6 else "")
    return LivelockError(f"the run went on repeating {repeated}: this order never lets the "
                         "scenario finish")


#: Threads per worker in every explored run: fixed, not the machine's cores, so that a
#: schedule replays the same on any machine.
THREADS_PER_WORKER = 2

_EMPTY: frozenset = frozenset()


class _Policy(Chooser):
    """The explorer's chooser: a lone deliverable message with nothing asleep goes straight on."""

    def __init__(self, choose: Callable[[Sequence[Message]], Message], sleeping: set):
        super().__init__(choose)
        self.sleeping = sleeping
        self.left = MAX_DELIVERIES
        self.cluster: Cluster | None = None  # set when the run fingerprints its states

    def next(self, network: Any, now_ns: int) -> tuple[Message, int] | None:
        self.left -= 1
        if self.left < 0:
            raise _Livelock
        # The network's own list, oldest first, read without a copy: only a decision keeps one.
        heads = network.ordered_heads if not network.held else network.heads()
        if len(heads) == 1 and not self.sleeping:
            return heads[0], now_ns
        if not heads:
            return None
        return self.choose(heads.copy()), now_ns

    def next_of(self, network: Any) -> Callable[[bool], Message | None]:
        """``Cluster._next`` for a run on ``network`` with this policy, in one call: what
        :meth:`next` chooses (a chooser keeps the cluster's clock where it is), or with
        nothing deliverable the oldest held message when ``force`` (``Cluster.step``)."""
        sleeping = self.sleeping  # changed in place only, never replaced

        def next_message(force: bool) -> Message | None:
            self.left -= 1
            if self.left < 0:
                raise _Livelock
            heads = network.ordered_heads if not network.held else network.heads()
            if len(heads) == 1 and not sleeping:
                return heads[0]
            if not heads:
                return network.oldest(held_too=True) if force else None
            return self.choose(heads.copy())

        return next_message


class _Following(_Policy):
    """A chooser shown every delivery (:func:`run_choosing`), a lone deliverable message too."""

    next_of = None  # its own next, through the driver's

    def next(self, network: Any, now_ns: int) -> tuple[Message, int] | None:
        self.left -= 1
        if self.left < 0:
            raise _Livelock
        heads = network.heads()
        if not heads:
            return None
        return self.choose(heads), now_ns


@functools.lru_cache(maxsize=64)
def scenario_arity(scenario: Scenario) -> int:
    params = [p for p in inspect.signature(scenario).parameters.values()
              if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return max(1, len(params))


# -- states ---------------------------------------------------------------------------------------

#: Integers that are identities, not quantities: message and run ids (incarnations), call and
#: future counters, generations, done order.  A state holds them renumbered by rank within
#: their family, so two runs that reach one state by different orders — and so allocated
#: different numbers — fingerprint alike, while every comparison the actors make between
#: two ids (equality, which is newer) reads the same on the ranks.
_ID_FAMILIES = {
    "msg_id": "msg", "_incarnation": "inc", "incarnation": "inc", "run_id": "inc",
    "_call": "call", "_calls": "call", "_runs": "run", "_future_ids": "future",
    "gen": "gen", "_gens": "gen", "_gen_floor": "gen", "_released_gens": "gen",
    "done_seq": "done", "_done": "done", "who_has": "inc", "puts": "inc", "held": "inc",
    "copies": "inc", "incarnations": "inc", "_generation": "graph", "priority": "graph",
}
#: What a state leaves out: constants of the run (the protocol, the recorder, the driver's
#: hooks), what only names a stimulus for the trace (``stimulus_id``, send times), and history
#: (an actor's ``log``, stamped by the wall clock; a client's count of ``failures``).
_NOT_STATE = frozenset({"variant", "record", "bind", "on_done", "sent_ns", "stimulus_id",
                        "_streams", "_stream", "trace", "failures", "log"})
_SCALARS = (str, bytes, int, float, bool, type(None))


def _canon(obj: Any, family: str | None, ids: dict, memo: dict) -> Any:
    """``obj`` as nested tuples: containers in a canonical order, ids marked for ranking: an id
    is ``("#", family, [value])``, its one-item list the cell :func:`_rank` puts its rank in."""
    kind = type(obj)
    if kind is str:
        return _RANDOM.sub(memo[_NAMES_AT], obj) if len(obj) >= 32 else obj
    if kind is int:
        if family is not None:
            cell = [obj]
            ids[family].append(cell)
            return ("#", family, cell)
        return obj
    if kind is dict:
        return _canon_dict(obj, family, ids, memo) if obj else _EMPTY_DICT
    if kind is bytes:
        return obj
    if kind is list or kind is tuple or kind is deque or kind is ReadyQueue:
        # Leaves inline (most members are short strings or None): a call per member is
        # most of what a state costs.
        if not obj:
            return _EMPTY_LIST
        if family is None:
            return ("[", *[v if v is None or (type(v) is str and len(v) < 32) or type(v) is int
                           else _canon(v, None, ids, memo) for v in obj])
        return ("[", *_members(obj, family, ids, memo))
    if kind in _PLANNED:
        # An object met before in this state (a worker's own client, the scheduler behind
        # its parts) before its plan is looked up: every path below would answer the same.
        seen = memo.get(id(obj))
        if seen is not None:
            return ("@", seen)
        read = _SLOT_READERS.get(kind)
        if read is None:
            slots = _SLOTTED.get(kind)
            fields = obj.__dict__ if slots is None else {s: getattr(obj, s, None) for s in slots}
            names = tuple(fields)
            last = _LAST_PLAN.get(kind)
            if last is not None and last[0] == names:
                read = last[1]
            else:
                read = _PLANS.get((kind, *names))
                if read is not None:
                    _LAST_PLAN[kind] = (names, read)
        else:
            fields = obj  # a slotted class's reader reads the object itself (_reader)
        if read is not None:
            # An object of a class met before with these very attributes: their order,
            # families and what is left out were worked out then (see _plan).
            memo[id(obj)] = len(memo)
            return read(fields, ids, memo)
    if kind is set or kind is frozenset:
        if not obj:
            return _EMPTY_SET
        members = ([v if type(v) is str and len(v) < 32 else _canon(v, None, ids, memo)
                    for v in obj] if family is None else _members(obj, family, ids, memo))
        try:
            members.sort()
        except TypeError:
            members.sort(key=repr)
        return ("(", *members)
    if kind not in _REPRED:
        if kind in _PROXIES:
            # A back-reference (the scheduler's parts hold it by weakref.proxy): its referent
            # is an actor of the state already; walked through, it would be read a second time.
            # (Asked first: isinstance on a proxy asks its referent for its class.)
            return ("p",)
        if isinstance(obj, _SCALARS):
            return obj
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type)):
            return ("f", getattr(obj, "__module__", None), getattr(obj, "__qualname__", None))
        if isinstance(obj, (types.MethodType, functools.partial)):
            return ("m", type(obj).__name__)
    seen = memo.get(id(obj))
    if seen is not None:
        return ("@", seen)  # an object met before in this state (the worker's own client)
    memo[id(obj)] = len(memo)
    fields = None if kind in _REPRED else getattr(obj, "__dict__", None)
    if fields is None:
        slots = None if kind in _REPRED else getattr(kind, "__slots__", None)
        if slots is None:
            _REPRED.add(kind)
            if kind is defaultdict and not obj and type(obj.default_factory) is type:
                # An empty defaultdict of a class (the scheduler's parts keep several): its
                # repr is its class's, the same every time.
                shown = _EMPTY_DEFAULTDICTS.get(obj.default_factory)
                if shown is None:
                    shown = _EMPTY_DEFAULTDICTS[obj.default_factory] = ("r", repr(obj))
                if len(shown[1]) < 32:
                    return shown
            text = repr(obj)  # (shorter than any random part: nothing to rename)
            return ("r", text if len(text) < 32 else _RANDOM.sub(memo[_NAMES_AT], text))
        fields = {s: getattr(obj, s, None) for s in slots}
        _SLOTTED[kind] = slots
    if kind not in _UNPLANNED:
        read = _plan(kind, fields)
        if read is not None:
            return read(fields, ids, memo)
    return (kind.__qualname__, _canon_dict(fields, None, ids, memo) if fields else _EMPTY_DICT)


def _members(obj: Any, family: str, ids: dict, memo: dict) -> list:
    """A container's members for :func:`_canon`, in an id family: an int one of its ids (a
    ``who_has`` set's incarnations, a priority's parts) made inline, as :func:`_canon` would."""
    out = []
    append = out.append
    for v in obj:
        t = type(v)
        if t is int:
            cell = [v]
            ids[family].append(cell)
            append(("#", family, cell))
        elif v is None or (t is str and len(v) < 32):
            append(v)
        else:
            append(_canon(v, family, ids, memo))
    return out


#: What an empty defaultdict reads as, by its default factory (a class): see :func:`_canon`.
_EMPTY_DEFAULTDICTS: dict[type, tuple[str, str]] = {}


#: Each object's reader (see :func:`_reader`), by its class and attribute names in their order.
_PLANS: dict[tuple, Callable[[Any, dict, dict], tuple]] = {}
#: Classes read by :func:`_canon_dict` every time (the scheduler's round robin is read modulo
#: its workers there); :data:`_PLANS` holds no entry for them.
_UNPLANNED: set[type] = set()
_PLANNED: set[type] = set()  # the classes with an entry in _PLANS
#: Each class's plan last used, with its attribute names: nearly every object of a class has
#: the names the one before had, and comparing them with those names (equal strings, the same
#: objects) costs half of hashing them into a key of :data:`_PLANS`.
_LAST_PLAN: dict[type, tuple[tuple[str, ...], Callable[[Any, dict, dict], tuple]]] = {}
_SLOTTED: dict[type, Any] = {}  # the classes read by their __slots__, and those
#: A slotted class's reader, which reads the object itself: its names, read from its own
#: ``__slots__``, are the same for every object, so its plan is looked up once.
_SLOT_READERS: dict[type, Callable[[Any, dict, dict], tuple]] = {}
#: Classes whose objects have neither ``__dict__`` nor ``__slots__`` (a ``defaultdict``, an
#: ``itertools.count``), read by their repr: known, they skip the type tests before it —
#: tests that depend on the class alone, and that each of them failed the first time.
_REPRED: set[type] = set()


def _plan(kind: type, fields: dict) -> Callable[[Any, dict, dict], tuple] | None:
    """How :func:`_canon` reads an object of ``kind`` with these attributes, worked out once: a
    reader (:func:`_reader`) that makes its head — the class's name, ``"="`` and the number
    of the names it keeps — then the values of the names it keeps, sorted, each with its id
    family, and reads ``_next_worker`` (the scheduler's round robin) modulo its workers.
    None (and never again for ``kind``) when a name needs more than that (a long one,
    renamed): such objects are read by :func:`_canon_dict`, as ``(name, ("{", items…))``."""
    names = tuple(fields)
    if len(_PLANS) > 4096 or any(type(k) is not str or len(k) >= 32 for k in names):
        _UNPLANNED.add(kind)
        return None
    kept = tuple(k for k in sorted(names) if k not in _NOT_STATE)
    # The kept names by number, not written out in every state: an object's class and kept
    # names say which attribute each value is, as its items did.  The number is the names'
    # own (a hash of them), not their place in this process's table: a search shared with a
    # dask cluster compares states made in other processes, which meet the names in another
    # order (#5379's shared pass met 1,324 distinct states there against 1,046 here).
    number = _KEPT.get(kept)
    if number is None:
        number = _KEPT[kept] = _stable_hash("\0".join(kept).encode(), 4)
    head = (kind.__qualname__, "=", number)
    order = tuple((k, _ID_FAMILIES.get(k)) for k in kept)
    robin = kept.index("_next_worker") if "_next_worker" in kept else None
    seen = tuple(type(fields[k]) for k in kept)
    read = _PLANS[(kind, *names)] = _reader(head, order, robin, slotted=False, seen=seen)
    _PLANNED.add(kind)
    if kind in _SLOTTED and robin is None:
        _SLOT_READERS[kind] = _reader(head, order, robin, slotted=True, seen=seen)
    return read


#: Each tuple of kept attribute names a plan reads, with its number (see :func:`_plan`).
_KEPT: dict[tuple[str, ...], int] = {}


def _reader(head: tuple, order: tuple, robin: int | None, slotted: bool,
            seen: tuple[type, ...] = ()) -> Callable[[Any, dict, dict], tuple]:
    """A plan's reader, compiled: ``read(fields, ids, memo)`` is ``head`` then, for each kept
    name in ``order``, its value as :func:`_canon` makes it (``_next_worker``, at ``robin``,
    modulo the workers); ``slotted``, it reads the attributes of the object itself (what a
    slotted object's dict of fields would hold: each slot, None if unset).

    Written out as Python, one block per name with its common leaves inline — a string, an
    int (an id if its family says so), None, a bool, bytes, an empty container — because a
    state is mostly objects of a few classes whose attributes are such leaves, and a call per
    attribute (the loop over the plan this replaces) was a third of what a state cost.

    ``seen``: the type of each name's value in the object the plan was made for.  That
    type's test comes first in the name's block (an attribute keeps its type from object to
    object: an empty dict stays a dict, an unset one None), the others after it, in their
    usual order: each test is of the value's exact type, so their order changes what is
    tested first, never what a value reads as.
    """
    lines = ["def read(src, ids, memo):"]
    if slotted:
        # Each slot read as an attribute (what Python's own attribute cache makes cheapest),
        # and only if one is unset again through getattr, as None.
        lines += ["    try:", *[f"        a{i} = src.{name}" for i, (name, _) in enumerate(order)],
                  "    except AttributeError:",
                  *[f"        a{i} = getattr(src, {name!r}, None)" for i, (name, _) in enumerate(order)]]
    for i, (name, fam) in enumerate(order):
        x = f"x{i}"
        # (test, body) for each kind of value, in the usual order; the else is the last.
        branches = [("t is str", [f"{x} = v if len(v) < 32 else sub(memo[NAMES], v)"])]
        if fam is None:
            branches.append(("t is int or v is None or t is bool or t is bytes", [f"{x} = v"]))
        else:
            branches += [("t is int", ["c = [v]", f"ids[{fam!r}].append(c)",
                                       f"{x} = ('#', {fam!r}, c)"]),
                         ("v is None or t is bool or t is bytes", [f"{x} = v"])]
        containers = {
            dict: ("t is dict", [f"{x} = canon_dict(v, {fam!r}, ids, memo) if v else EMPTY_DICT"]),
            set: ("t is set or t is frozenset",
                  [f"{x} = canon(v, {fam!r}, ids, memo) if v else EMPTY_SET"]),
            list: ("t is list or t is tuple or t is deque",
                   [f"{x} = canon(v, {fam!r}, ids, memo) if v else EMPTY_LIST"]),
        }
        branches += containers.values()
        kind = seen[i] if i < len(seen) else None
        family = {frozenset: set, tuple: list, deque: list}.get(kind, kind)
        if family in containers:
            first = containers[family]
            branches.remove(first)
            branches.insert(0, first)
        elif kind is bool or (kind is int and fam is None):
            # A leaf: its own test first (the usual one still tests it, further on).
            branches.insert(0, (f"t is {kind.__name__}", [f"{x} = v"]))
        elif kind is int:  # an id
            branches.insert(0, branches.pop(1))
        lines.append(f"    v = a{i}" if slotted else f"    v = src[{name!r}]")
        pad = "    "
        if kind is type(None):  # unset: tested before its type is asked
            lines += ["    if v is None:", f"        {x} = v", "    else:"]
            pad = "        "
        lines.append(f"{pad}t = type(v)")
        for j, (test, body) in enumerate(branches):
            lines += [f"{pad}{'if' if j == 0 else 'elif'} {test}:", *[f"{pad}    {b}" for b in body]]
        lines += [f"{pad}else:", f"{pad}    {x} = canon(v, {fam!r}, ids, memo)"]
    if robin is not None:  # the scheduler's round robin: read modulo its workers
        lines.append(f"    x{robin} %= max(1, len(src.get('workers', ())))")  # (not slotted)
    lines.append(f"    return ({''.join(f'{h!r}, ' for h in head)}"
                 f"{''.join(f'x{i}, ' for i in range(len(order)))})")
    scope = {"sub": _RANDOM.sub, "NAMES": _NAMES_AT, "canon": _canon, "canon_dict": _canon_dict,
             "EMPTY_DICT": _EMPTY_DICT, "EMPTY_SET": _EMPTY_SET, "EMPTY_LIST": _EMPTY_LIST,
             "deque": deque}
    exec(compile("\n".join(lines), f"<reader of {head[0]}>", "exec"), scope)  # noqa: S102 - our own source
    return scope["read"]


def _canon_dict(obj: dict, family: str | None, ids: dict, memo: dict) -> tuple:
    """A non-empty dict for :func:`_canon`: its items sorted, each value's leaf inline."""
    items = []
    append = items.append
    for k, v in obj.items():
        if type(k) is str:
            special = _SPECIAL_KEYS.get(k)
            if special is None:
                fam = family
                if len(k) >= 32:
                    k = _RANDOM.sub(memo[_NAMES_AT], k)
            elif special is _LEFT_OUT:
                continue
            elif special is _ROBIN:  # the scheduler's round robin: read modulo its workers
                fam = family
                v %= max(1, len(obj.get("workers", ())))
            else:
                fam = family or special
            # The value's common leaves inline, as a reader does them (see _reader).
            t = type(v)
            if t is str:
                if len(v) >= 32:
                    v = _RANDOM.sub(memo[_NAMES_AT], v)
            elif t is int:
                if fam is not None:
                    cell = [v]
                    ids[fam].append(cell)
                    v = ("#", fam, cell)
            elif t is dict:
                v = _canon_dict(v, fam, ids, memo) if v else _EMPTY_DICT
            elif t is set or t is frozenset:
                v = _canon(v, fam, ids, memo) if v else _EMPTY_SET
            elif not (v is None or t is bool or t is bytes):
                v = _canon(v, fam, ids, memo)
            append((k, v))
        else:
            append((_canon(k, None, ids, memo), _canon(v, family, ids, memo)))
    try:
        items.sort()
    except TypeError:
        items.sort(key=repr)
    return ("{", *items)


_NAMES_AT = "names"  # where ``_canon``'s memo keeps the renaming of random key parts
_LEFT_OUT, _ROBIN = object(), object()  # see _SPECIAL_KEYS
#: What :func:`_canon_dict` does with a key of its own, in one look-up (most keys are a task's
#: or a worker's name, none of these): an id family (:data:`_ID_FAMILIES`), left out
#: (:data:`_NOT_STATE`), or ``_next_worker`` (read modulo the workers).
_SPECIAL_KEYS: dict[str, Any] = {**_ID_FAMILIES, "_next_worker": _ROBIN,
                                 **dict.fromkeys(_NOT_STATE, _LEFT_OUT)}
_PROXIES = (weakref.ProxyType, weakref.CallableProxyType)
_EMPTY_DICT = ("{",)
_EMPTY_LIST = ("[",)
_EMPTY_SET = ("(",)


def state_of(cluster: Cluster) -> str:
    """The cluster's state as a canonical text (what :func:`state_digest` hashes, as text): an
    object of a class read by a plan (:func:`_plan`) is its class's name, ``"="``, the number
    of the plan's attribute names (``_KEPT``) and their values in that order.

    Covers every actor (scheduler, workers, every client: every attribute but the run's
    constants, see :data:`_NOT_STATE`), every channel's messages in order (sender,
    receiver, op, keys, payload, and the age rank of each message in flight), and the
    futures dropped but not yet released.  Ids are ranked within their family
    (:data:`_ID_FAMILIES`) and random key parts (``uuid4``, 32-digit tokens) renamed by
    their futures' creation order (:func:`_random_names`).
    """
    return repr(_state_parts(cluster))


def _state_parts(cluster: Cluster, memo: dict | None = None) -> list:
    """The cluster's state as nested tuples (see :func:`state_of`), its ids ranked; ``memo``
    gets every object read (by id), the cluster too if the state reached it (see
    :func:`_state_bytes`)."""
    ids: defaultdict[str, list] = defaultdict(list)
    if memo is None:
        memo = {}
    memo[_NAMES_AT] = _random_names(cluster)
    actors = cluster.actor_states
    parts: list = [("actor", name, _canon(actors[name], None, ids, memo)) for name in sorted(actors)]
    queues = cluster.network.queues
    for name in sorted(queues):
        queue = queues[name]
        if queue:
            # A channel of its own (an RPC's, a task run's) is numbered: ``run:worker:0#3``.
            base, hash_, number = name.rpartition("#")
            if hash_ and number.isdigit():
                cell = [int(number)]
                ids["chan"].append(cell)
                name = (base, ("#", "chan", cell))
            for m in queue:
                cell = [m.msg_id]
                ids["msg"].append(cell)
                parts.append(("channel", name, m.sender, m.receiver, m.op,
                              _canon(m.keys, None, ids, memo), ("#", "msg", cell),
                              _canon(m.payload, None, ids, memo)))
    parts.append(("drops", *((c.name, k) for c, k, _ in cluster.pending_drops)))
    _rank(ids)
    return parts


def _rank(ids: dict[str, list]) -> None:
    """Each id's cell set to its rank among the distinct values of its family (``ids``: each
    family's cells, in the order the state met them)."""
    for cells in ids.values():
        values = sorted({cell[0] for cell in cells})
        if values[0] == 0 and values[-1] == len(values) - 1:
            continue  # distinct ints from 0 to their number less one: their own ranks
        rank = {v: i for i, v in enumerate(values)}
        for cell in cells:
            cell[0] = rank[cell[0]]


def _random_names(cluster: Cluster) -> Callable[[re.Match], str]:
    """The renaming of random key parts (uuid4, 32-digit tokens) for ``cluster``'s states: each
    is numbered by when its future was created in the run (``future.created``, in the trace),
    which the scenario's order of calls decides — a bijection, so two states equal under it
    are the same up to the keys' random names; a part no future was created for reads ``…``."""
    cache = cluster.__dict__.setdefault("_explore_names", [0, {}])
    seen, names = cache
    trace = cluster.trace
    if trace.next_seq > seen:
        for event in trace.events(kind="future.created", since=seen):
            for part in _RANDOM.findall(event.key or ""):
                names.setdefault(part, f"~{len(names)}")
        cache[0] = trace.next_seq
    return lambda match: names.get(match[0], "…")


def state_digest(cluster: Cluster) -> bytes:
    """Eight bytes naming the cluster's state (:func:`state_of`), the same in every process.

    What is hashed is the state's nested tuples in ``marshal``'s format 2 — a faithful
    encoding of tuples, lists, strings, bytes and numbers with no back-references (the
    same bytes for equal values whatever object holds them), several times cheaper than
    their repr: two states share the bytes exactly when they share the text.
    """
    return hashlib.blake2b(_state_bytes(cluster)[0], digest_size=8).digest()


def _digest(cluster: Cluster, hashing: Callable[[bytes], int] = hash) -> tuple[int, bool]:
    """The search's name for the cluster's state, hashed by Python's own hash of bytes (64
    bits, as :func:`state_digest`'s eight bytes, in a third of the time) — a search's states
    are compared in its own process and its forked copies only; a search shared with a dask
    cluster's processes hashes by ``hashing`` (:func:`_stable_hash`) — and whether it is the
    run's own (see :func:`_state_bytes`).

    The bytes are the state's nested tuples as a pickle without a memo (``fast``: no
    back-references, the same bytes for equal values whatever object holds them), when
    they hold plain values only (:class:`_PlainPickler`): as faithful as marshal's format 2
    — each value's type and contents, in order — and cheaper (a string's UTF-8 is read
    where marshal's 2 encodes it again); else what :func:`state_digest` hashes.  Two
    states share the bytes exactly when they share marshal's, so the search counts the
    same states either way (its own test compares them).
    """
    memo: dict = {}
    parts = _state_parts(cluster, memo)
    buffer = io.BytesIO()
    pickler = _PlainPickler(buffer, 5)
    pickler.fast = True
    try:
        pickler.dump(parts)
        data = buffer.getvalue()
    except (_NotPlain, ValueError, RecursionError):  # (a cycle, too deep: as marshal fails)
        data = _encoded(parts)
    return hashing(data), id(cluster) in memo


def _stable_hash(data: bytes, size: int = 8) -> int:
    """``data`` hashed alike in every process, in ``size`` bytes: Python's hash of bytes is
    salted per process (``PYTHONHASHSEED``), and a dask worker is a process of its own, not a
    fork, so the states a search met here would be strangers there (measured on #5379's
    shared pass: 1,324 distinct states against 1,046, and 16 more runs)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=size).digest(), "little")


class _NotPlain(Exception):
    """A value :class:`_PlainPickler` does not write."""


class _PlainPickler(pickle.Pickler):
    """A pickler of plain values only: the exact builtin types (str, bytes, int, float, bool,
    None, tuples, lists — which pickle writes itself, never asking ``reducer_override``).
    Anything else (a subclass of str, an enum member) is refused, and the state is then
    encoded as :func:`state_digest` encodes it: a pickle would write such a value by its
    class's own reduction, which marshal refuses."""

    def reducer_override(self, obj: Any) -> Any:
        raise _NotPlain(type(obj).__qualname__)


def _state_bytes(cluster: Cluster) -> tuple[bytes, bool]:
    """The bytes :func:`state_digest` hashes, and whether they are the run's own: whether the
    state reached the cluster itself — a live future in a worker's data (#7498's,
    deserialized from a task's arguments) holds its client, and through it the cluster, whose
    clock, address and locks no other run shares — so that the same state in another run has
    another digest."""
    memo: dict = {}
    parts = _state_parts(cluster, memo)
    return _encoded(parts), id(cluster) in memo


def _encoded(parts: list) -> bytes:
    """A state's nested tuples in marshal's format 2 (see :func:`state_digest`)."""
    try:
        return marshal.dumps(parts, 2)
    except ValueError:  # a value marshal cannot write: the text instead
        return repr(parts).encode()


#: In a pickle, the name of the function a travelling future is rebuilt by (what the worker
#: looks for, ``serialize.reduce_future``).
_FUTURE_MARK = b"rebuild_future"


def _frame(cluster: Cluster, run: Any) -> tuple | None:
    """A task run inline, as part of the search states inside it: its worker, key and spec
    (the function and arguments, pickled, in :func:`state_of`'s form) — what it goes on to do
    is that code's, given what its calls answer.  None when its arguments hold more than the
    spec (dependencies' values, travelling futures): the states inside it are then left out."""
    task = cluster.workers[run.worker].tasks.get(run.key)
    spec = getattr(task, "spec", None)
    if not spec or spec.get("who_has") or any(
            _FUTURE_MARK in (spec.get(part) or b"") for part in ("func", "args")):
        return None
    parts = [spec.get(part) for part in ("func", "args", "kwargs")]
    if all(type(p) is bytes or p is None for p in parts):
        # Pickled, as nearly always: its form depends on nothing else (no ids, no random
        # names in bytes), so it is worked out once per search of a scenario (_FRAMES).
        key = (run.worker, run.key, *parts)
        frame = _FRAMES.get(key)
        if frame is None:
            if len(_FRAMES) >= 1024:
                _FRAMES.clear()
            frame = _FRAMES[key] = (run.worker, run.key, repr(("[", *parts)))
        return frame
    memo: dict = {_NAMES_AT: _random_names(cluster)}
    return (run.worker, run.key, repr(_canon(parts, None, defaultdict(list), memo)))


#: Task frames (see :func:`_frame`) by worker, key and pickled spec.
_FRAMES: dict[tuple, tuple] = {}


def _framed(progress: list) -> bool:
    """Whether every task run on the run's stack is known by its spec (see :func:`_frame`)."""
    return all(what is not None for what, _ in progress[2])


class _States:
    """The states a search has been in: every distinct one (``seen``, what the result
    reports), and this pass's table (``table``): per state, each visit that explored on
    from it — its sleep set, its delayed messages in flight (ranks) and the delays spent."""

    def __init__(self, hashing: Callable[[bytes], int] = hash) -> None:
        #: How a state's bytes are hashed (see :func:`_digest`).
        self.hashing = hashing
        self.seen: set = set()
        self.table: dict[tuple, list[tuple[frozenset, frozenset, int]]] = {}
        self.revisits = 0  # runs stopped at a state explored already
        self.own = 0  # states whose digest was their run's own, met again (see _remade)


def _visit(states: _States, cluster: Cluster, progress: list, sleep: frozenset,
           delayed: set[int], mine: dict, at: int, replayed: bool = False,
           log: list | None = None) -> None:
    """At a decision of the depth-first search: report a loop (:class:`_Livelock`) if this very
    run was in this state before with the same delayed messages in flight and no more delays
    spent — the picks between can be repeated for ever within the bound, as the search
    without states finds by going on to :data:`MAX_DELIVERIES` — else, at a new decision
    (not ``replayed``), stop the run (:class:`Stop`) if its state was explored already with
    no more delays spent, a superset of its delayed messages in flight and a subset of its
    sleep set (see :func:`explore`), and remember it.  See :func:`explore` on what a state
    is.

    ``log`` gets what the visit read — its state, delays, the trace's next event, the decision,
    its sleep set (None when ``replayed``) and whether its digest is the run's own (see
    :func:`_digest`) — and, after it, :data:`_STOPPED` if the table stopped the run here: all
    :func:`_remade` needs to do it again without the cluster.
    """
    trace = cluster.trace
    trace.flush()  # the checks' verdict so far is part of the state
    checks = cluster.checks
    verdict = tuple((v.name, _shape(v.explanation)) for v in checks.violations) if checks else ()
    digest, own = _digest(cluster, states.hashing)
    system = (digest, progress[0], progress[1], verdict,
              tuple((what, calls) for what, calls in progress[2]))
    states.seen.add(system)
    in_flight = cluster.network.in_flight
    rank = {m: i for i, m in enumerate(sorted(in_flight))}
    late = frozenset(rank[m] for m in delayed if m in in_flight)
    spent = len(delayed)
    seq = trace.next_seq
    loop = mine.get((system, late, spent))
    asleep = None if replayed or loop is not None else frozenset(
        (rank.get(m, -1), a) for m, a in sleep)
    if log is not None:
        log.append((system, late, spent, seq, at, asleep, own))
    if loop is not None:
        raise _Livelock(*loop)
    mine[system, late, spent] = (seq, at)
    if asleep is None:
        return
    visits = states.table.get(system)
    if visits is None:
        states.table[system] = [(asleep, late, spent)]
        return
    for asleep0, late0, spent0 in visits:
        if spent0 <= spent and asleep0 <= asleep and late0 >= late:
            states.revisits += 1
            if log is not None:
                log.append(_STOPPED)
            raise Stop
    visits.append((asleep, late, spent))


#: In a run's visits (see :func:`_visit`): the table stopped it at the visit before.
_STOPPED = None


# -- results ----------------------------------------------------------------------------------


@dataclass
class Failure:
    """A distinct failure: what broke, the smallest schedule that shows it, how often it came up."""

    names: tuple[str, ...]
    overtakes: tuple[str, ...]
    run: Run
    count: int = 1
    #: What real dask said (``jupyter_refs.dask.confirm``): "confirmed on distributed X.Y: …".
    confirmed: str | None = None

    @property
    def schedule(self) -> str:
        return self.run.schedule

    @property
    def violations(self) -> list[Violation]:
        return self.run.violations

    @property
    def raised(self) -> Raised | None:
        """What the scenario raised, for a ``scenario_raised`` failure."""
        return self.run.raised

    def explain(self) -> str:
        """Which messages overtook which, on which channels, and what each side believed."""
        lines = [f"schedule {short_schedule(self.schedule)}: {', '.join(self.names)}"]
        lines += [f"  - {text}" for text in short_list(_overtakes(self.run, verbose=True), 12)]
        violations = self.run.violations
        if self.run.raised is not None:
            raised = violations[-1]
            lines.append(f"  {raised.name} (event {raised.first_seq}): {raised.explanation}")
            violations = violations[:-1] or violations
        first = violations[0]
        if first.name != SCENARIO_RAISED:
            lines.append(f"  {first.name} on {first.key} (event {first.first_seq}): "
                         f"{first.explanation}")
        if not first.key:
            return "\n".join(lines)
        lines.append("  what each side believed then:")
        for refs in beliefs(self.run.trace, first.first_seq, first.key):
            clients = ", ".join(f"{c} refcount {n} ({s})" for c, (n, s) in refs.clients.items())
            workers = ", ".join(refs.on_workers) or "no worker"
            lines.append(f"    {clients or 'no client holds it'}; scheduler: {refs.scheduler}, "
                         f"who_wants {{{', '.join(refs.who_wants)}}}, on {workers}")
        return "\n".join(lines)


@dataclass
class ExploreResult:
    scenario: str
    protocol: str
    bound: int
    schedules: int  # runs made (pruned ones included)
    pruned: int
    exhaustive: bool  # every order within the bound was covered
    sampled: int  # random runs past the bound
    elapsed: float
    failures: list[Failure] = field(default_factory=list)
    #: Distinct states the systematic search was in at its decisions (see :func:`explore`;
    #: 0 with ``prune=False``, whose search does not fingerprint them).
    states: int = 0
    #: Runs of the systematic search stopped at a state it had explored already (counted
    #: in ``pruned`` too).
    revisited: int = 0
    #: Random runs whose order had been drawn before: counted, not run again (``sampling.Memo``).
    repeats: int = 0

    @property
    def distinct(self) -> int:
        """Orders run: the schedules less the random orders drawn again."""
        return self.schedules - self.repeats

    @property
    def systematic(self) -> int:
        """Runs of the bounded depth-first search (pruned ones included)."""
        return self.schedules - self.sampled

    @property
    def rate(self) -> float:
        return self.schedules / self.elapsed if self.elapsed else 0.0

    def summary(self) -> str:
        states = f", {self.states:,} distinct states" if self.states else ""
        scope = (f"every order within bound {self.bound} ({self.schedules - self.sampled} "
                 f"schedules, {self.pruned} pruned{states})" if self.exhaustive
                 else f"{self.schedules - self.sampled} schedules within bound {self.bound} "
                 f"(not exhausted{states})")
        again = f" ({self.repeats} of them orders drawn again)" if self.repeats else ""
        sampled = f", then {self.sampled} random{again}" if self.sampled else ""
        found = (f"{len(self.failures)} distinct failure(s); smallest: "
                 f"{short_schedule(self.failures[0].schedule)}"
                 if self.failures else "no failure")
        return (f"{self.protocol}: {scope}{sampled} in {self.elapsed:.2f} s "
                f"({self.rate:,.0f} schedules/s): {found}")

    def __repr__(self) -> str:
        return f"<ExploreResult {self.summary()}>"


def _overtakes(run: Run, verbose: bool = False) -> list[str]:
    """Each deviation: the message delivered, and the older ones it overtook."""
    out = []
    for d in run.decisions:
        if not d.pick:
            continue
        chosen = d.heads[d.pick]
        msg_id, op, channel = chosen.msg_id, chosen.op, chosen.channel
        older = [(m.msg_id, m.receiver, m.op, m.channel) for m in d.heads[:d.pick]]
        if verbose:
            skipped = ", ".join(f"#{m} {o} on {c}" for m, _, o, c in older)
            out.append(f"#{msg_id} {op} on {channel} was delivered before {skipped}, sent earlier")
        else:
            out.append(f"{op} overtook {'+'.join(o for _, _, o, _ in older)}")
    return out


#: Keys (hashed ``int-<hex>``, and dask's ``pure=False`` ``inc-<uuid4>`` whole), message ids,
#: actor names and numbers: what two failures of one kind differ in.
_NAMES = re.compile(r"[\w.]+-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[\w.]+-[0-9a-f]{8,}|#\d+"
                    r"|\b(client|worker):[\w:.]+|\d+")


@functools.lru_cache(maxsize=4096)
def _shape(explanation: str) -> str:
    """An explanation with its keys, ids and numbers taken out: what kind of failure it is."""
    return _NAMES.sub("_", explanation)


def beliefs(trace: Trace, upto: int, key: str) -> list:
    """Each side's beliefs about ``key`` right after event ``upto`` (no check is rerun)."""
    return Beliefs.of(trace, until=upto + 1).snapshot([key])


# -- the search -----------------------------------------------------------------------------------


#: Random runs worth a forked helper process (fewer are not worth the fork).
_FORK_MIN_RUNS = 400


def default_processes() -> int:
    """Processes for the random runs and a large last pass of the bounded search: one per core
    (up to 4) where ``fork`` exists, else 1."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(4, os.cpu_count() or 1))


def explore(scenario: Scenario, protocol: str | ProtocolVariant = "dask",
            max_schedules: int = 10_000,
            bound: int = 2, seed: int = 0, workers: int = 1, reduce: bool = True,
            sample: bool = True, first: bool = False,
            progress: Callable[[int, int, int], None] | None = None,
            processes: int | None = None,
            invariants: Sequence[Invariant] = (), prune: bool = True, sampler: str = "pct",
            depth: int = 3, client: Any = None) -> ExploreResult:
    """Run ``scenario`` under many delivery orders; group the failures, smallest first.

    ``sample=False`` stops once the bounded space is exhausted (no random runs);
    ``first=True`` stops at the first failure.  ``progress(done, max_schedules,
    failures)`` is called every 100 runs.  ``processes`` share the random runs, and the
    bounded search's last pass when it is large (default: one per core, see
    :func:`default_processes`; 1 runs them all here).
    The result depends on ``seed`` and ``processes``, never on timing.
    ``protocol`` is a registered name or a :class:`ProtocolVariant` of one's own (its
    ``name`` goes into the schedule strings; ``replay`` then needs the same variant).
    ``invariants`` are functions of one's own that judge each run beside the checks (see
    :func:`jupyter_refs.checks.judge`): a run one of them flags fails, named after it.

    **States** (``prune=True``, the default).  At every new decision of the depth-first
    search (past the replayed prefix, and not inside a task's own nested call) the run's
    *state* is fingerprinted, and a run that reaches a search state explored already stops
    there (``pruned``; ``ExploreResult.revisited`` counts them), as DSLabs' search does.  A
    state is:

    * every actor — the scheduler, each worker, each client (the worker's own client too) —
      every attribute but the run's constants (its protocol variant, its event recorder, the
      driver's hooks) and the stimulus names kept for the trace (:func:`state_of`);
    * every channel's messages, in order: sender, receiver, op, keys, payload, and each
      message's age among those in flight (which head is oldest decides the default pick and
      what a pick delays);
    * the futures dropped and not released yet;
    * the scenario's point: the user calls begun so far (a call of a task's nested client
      included) and, once it is over, its outcome (what it returned, or its exception's type
      and message shape);
    * the checks' verdict so far: each violation's name and explanation shape (the trace is
      flushed to the checks there, so the run's verdict, read at the end, is what it was).

    Canonical: message ids, run ids (incarnations), call and future counters, generations
    and numbered channels are replaced by their rank within their kind, so orders that
    allocated different numbers compare equal while every comparison the actors make (equal,
    newer) reads the same; random key parts (uuid4, 32-digit tokens) are renamed by the
    order their futures were created in the run (a bijection, :func:`_random_names`); the
    scheduler's round robin is kept modulo its workers.  Beside the state, a *search* state
    holds the run's sleep set and which messages in flight it delayed already, and is pruned
    only when reached before with no more delays spent, with every message it had delayed
    then still in flight delayed now too or more, and nothing asleep then that is awake now
    (Godefroid's state caching with sleep sets: the stored sleep set a subset of this one's)
    — so the earlier visit explored every continuation this one could within the pass's
    bound.  (Each pass of the iterative deepening starts a fresh table.)

    Why it is sound: the actors are sans-IO state machines, so what the cluster does from a
    state depends on nothing else; the scenario is at the same call with the same responses
    from the cluster (its futures' states are in the client's state) — the assumption
    ``replay`` already makes, that a scenario is deterministic given what its calls return;
    and a failure group is the violations' names and the first one's shape, which a run's
    verdict so far and its continuation fix.  Inside a task's nested call the task's frame is
    part of the state: each task run on the run's stack by its worker, key and spec, and the
    calls it began (the same assumption: a task is deterministic given what its calls
    answer); there a state is looked up at a run's first new decision only (see
    :func:`_frame`; a task whose arguments carry dependencies' values or travelling futures
    leaves its states out).  Left out, so never pruned on: the random runs (each is an
    independent sample).  A run that comes back to a state of its own path (its prefix
    included) with the same messages delayed and no delay spent since can repeat the picks
    between for ever within the bound: it stops there with the ``LivelockError`` the
    :data:`MAX_DELIVERIES` stop gives, its schedule the loop's picks repeated past that stop
    (so it replays without states).  With ``invariants`` of one's
    own (which may read a key's whole history) nothing is pruned.
    ``tests/test_explore.py`` checks that the exhaustive search finds the same failure groups
    with and without it, on the race zoo and #8576.  ``ExploreResult.states`` counts the
    distinct states the systematic search met.

    **Random runs** (``sampler``): ``"pct"`` (the default) runs PCT, probabilistic
    concurrency testing over channels (``sampling.Draw``), with 1, 2 … ``depth`` priority
    change points in turn (depth d = d-1 change points, d from 1 to ``depth``): a bug of
    depth d <= ``depth`` is found by each run of depth d with probability at least
    1/(n·k^(d-1)) (n channels, k decisions of the in-order run), so by one run in ``depth``;
    ``"uniform"`` picks uniformly at every decision, as before.  Each random run draws its
    numbers from a hash of ``"{seed}:{i}"`` for the i-th (``sampling.Draw``), and an
    order drawn again (PCT draws the likeliest orders many times) is counted as its first
    run was, not run again (``sampling.Memo``): the same counts, groups and smallest runs,
    for the cost of following the chooser down a tree of the orders run so far;
    ``ExploreResult.repeats`` says how many.

    **Shared** (``processes``, or ``client``): the random runs are split by order, not only
    by draw (:class:`_Share`): each order is run by one process, so the result — schedules,
    failures, counts, smallest schedules — is this process's alone, exactly, whatever the
    number of shares.  **On a dask cluster** (``client``): a share per worker process, a
    task pinned to its worker (a cluster of this process's own threads gets one
    share, run in this thread); the systematic search's last pass, when it is shared
    (``processes``' rule), goes to the cluster too, a task per worker, and counts
    exactly as forked helpers count it (a state is named alike in every process).  The
    scenario travels by cloudpickle: one that cannot is refused before anything runs, with
    what cloudpickle said.

    **On real dask**: ``jupyter_refs.explore(scenario, on=client)`` (the package's ``explore``)
    runs this search over distributed's own code (:func:`jupyter_refs.dask.explore.explore_on`).
    """
    # Every argument is refused before anything runs (arguments.py).
    arguments.scenario(scenario)
    arguments.protocol(protocol)
    protocol_name(protocol)  # and a variant whose name a schedule string could not carry
    arguments.count(max_schedules, "max_schedules")
    arguments.count(bound, "bound", minimum=0)
    arguments.expect(seed, int, "seed", "an int")
    arguments.count(workers, "workers")
    for name, value in (("reduce", reduce), ("sample", sample), ("first", first)):
        arguments.flag(value, name)
    arguments.function(progress, "progress", "a function (done, total, failures)", none=True)
    processes = default_processes() if processes is None else arguments.count(processes, "processes")
    arguments.flag(prune, "prune")
    if sampler not in ("pct", "uniform"):
        raise ArgumentValueError(f"sampler must be 'pct' or 'uniform', not {sampler!r}")
    arguments.count(depth, "depth")
    if client is not None:
        arguments.dask_client(client)
        picklable(scenario)
    invariants = _invariants(invariants)
    fp = fingerprint(scenario)
    start = time.perf_counter()
    with gcscope.paused():
        return _explore(scenario, protocol, max_schedules, bound, seed, workers, reduce, sample,
                        first, progress, fp, start, processes, invariants, prune,
                        depth if sampler == "pct" else 0, client)


def _invariants(invariants: Sequence[Invariant]) -> tuple[Invariant, ...]:
    """``invariants`` as a tuple, each refused before anything runs if it has no name of its own."""
    if callable(invariants) or isinstance(invariants, (str, bytes)):
        raise ArgumentTypeError("invariants must be a list of functions, not one")
    invariants = tuple(invariants)
    try:
        names = [invariant_name(f) for f in invariants]
    except ValueError as exc:
        raise ArgumentValueError(str(exc)) from None
    if len(set(names)) != len(names):
        raise ArgumentValueError(f"two invariants share a name: {names}")
    return invariants


def _group(run: Run) -> tuple:
    """What makes two failures the same: the violations' names, the first one's shape.

    A run whose scenario raised goes with the runs that raised the same type of
    exception with a message of the same shape, whatever the checks said besides.
    """
    if run.raised is not None:
        return ((SCENARIO_RAISED,), (run.raised.type, _shape(run.raised.message)))
    return (_names(run), tuple(_shape(v.explanation) for v in run.violations[:1]))


def _names(run: Run) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v.name for v in run.violations))


class Tally:
    """The runs counted so far and the failure groups, each keeping its smallest run."""

    def __init__(self, max_schedules: int, progress: Callable[[int, int, int], None] | None,
                 outcome: Outcome | None = None, runs: int = 0):
        """``outcome`` and ``runs``: a tally away from its search (a shared pass's subtrees on
        a dask worker, :func:`_subtrees_away`), which has the in-order run's outcome to judge
        by and counts on from the runs made before, but not the run itself."""
        self.max_schedules = max_schedules
        self.progress = progress
        self.runs = runs
        self.groups: dict[tuple, Failure] = {}
        #: The in-order run, whose outcome every other run is judged against.
        self.baseline: Run | None = None
        #: Runs that raised as the in-order run did.
        self.same = 0
        #: Random runs whose order was drawn before (see ``sampling.Memo``): counted, not run again.
        self.repeats = 0
        #: Called once the in-order run is made (see :class:`_Remote`).
        self.on_baseline: Callable[[Tally], None] | None = None
        #: Called after each run counted here (see :class:`_Remote`).
        self.between_runs: Callable[[], None] | None = None
        #: How many draws other processes have counted so far (forked helpers), for progress.
        self.elsewhere: Callable[[], int] | None = None
        self._outcome: tuple[Run, Outcome] | None = None  # the baseline's (see outcome)
        self._given = outcome

    @property
    def outcome(self) -> Outcome | None:
        """The in-order run's outcome: made once per baseline (every run is judged against
        it, and a frozen dataclass costs a few attribute sets to make)."""
        baseline = self.baseline
        if baseline is None:
            return self._given
        made = self._outcome
        if made is None or made[0] is not baseline:
            made = self._outcome = (baseline, baseline.outcome)
        return made[1]

    def count(self, run: Run) -> None:
        """Count a run made here, judge it, and every 100 runs collect and report progress."""
        self.record(run)
        self._counted()
        if self.between_runs is not None:
            self.between_runs()

    def _counted(self) -> None:
        """One more run counted: every 100, collect the young cycles and report progress."""
        self.runs += 1
        if self.runs % 100 == 0:
            gc.collect(0)
            self.report()

    def report(self, elsewhere: int = 0) -> None:
        """Tell ``progress``, if there is one, how far the search has got: the runs counted
        here, and those counted elsewhere so far (``elsewhere``, and :attr:`elsewhere`'s)."""
        if self.progress is None:
            return
        if self.elsewhere is not None:
            elsewhere += self.elsewhere()
        self.progress(min(self.runs + elsewhere, self.max_schedules), self.max_schedules,
                      len(self.groups))

    def count_again(self, seen: Seen) -> None:
        """Count a sampled run whose order was run already (see ``sampling.Memo``): as
        :meth:`count` would count the same run again — its group's count grows, and its
        group keeps its smallest run (this one is no smaller: it was counted before)."""
        self.repeats += 1
        self.same += seen.same
        if seen.group is not None:
            self.groups[seen.group].count += 1
        self._counted()

    def found(self) -> bool:
        """Whether the search has its finding (``first=True`` stops there): a failure, or — when
        the in-order run raised — a failure whose outcome is another."""
        return bool(self.groups) if self.outcome is None or self.outcome.raised is None \
            else self.differs() is not None

    def differs(self) -> Run | None:
        """A failure whose outcome is not the in-order run's, if one was found."""
        outcome = self.outcome
        return next((f.run for f in self.groups.values() if f.run.outcome != outcome), None)

    def settle(self) -> None:
        """The in-order run that raised: a failure once another order did not; otherwise the
        scenario's own error — unless a check failed on the way."""
        run = self.baseline
        if run is None or run.raised is None:
            return
        other = self.differs()
        if other is None:
            if not self.groups:
                raise ScenarioError(run.schedule, run.raised, self.runs)
            run.cluster.dispose()
            return
        _judge_baseline(run, other)
        self.record(run, 1 + self.same)

    def record(self, run: Run, count: int = 1) -> None:
        """Keep the run if it is the smallest of its failure group; free anything else at once."""
        if not run.failed:
            if run.raised is not None:  # as the in-order run raised (or it would have failed)
                self.same += count
            run.cluster.dispose()
            return
        group = _group(run)
        known = self.groups.get(group)
        if known is None:
            self.groups[group] = Failure(_names(run), tuple(_overtakes(run)), run, count)
            return
        known.count += count
        if _smallest(run) < _smallest(known.run):
            run, known.run = known.run, run
            known.overtakes = tuple(_overtakes(known.run))
            known.names = _names(known.run)
        run.cluster.dispose()


def _explore(scenario: Scenario, protocol: str | ProtocolVariant, max_schedules: int, bound: int, seed: int,
             workers: int, reduce: bool, sample: bool, first: bool,
             progress: Callable[[int, int, int], None] | None, fp: str,
             start: float, processes: int = 1, invariants: tuple = (), prune: bool = True,
             depth: int = 0, client: Any = None) -> ExploreResult:
    """The bounded search, then random runs with what budget is left (shared among processes)."""
    tally = Tally(max_schedules, progress)
    remote = None
    if client is not None and not first:
        remote = _Remote.of(client, scenario, protocol, workers, fp, seed, invariants, depth)
        if remote is None:
            processes = 1
        else:
            if sample:
                tally.on_baseline = remote.start
            tally.between_runs = _Remote.let_go
    states = (_States(hash if remote is None else _stable_hash)
              if prune and reduce and not invariants else None)
    try:
        exhaustive, pruned = _search(scenario, protocol, workers, fp, bound, reduce, first,
                                     tally, invariants, states,
                                     processes if remote is None else len(remote.addresses),
                                     remote)
        found = first and tally.found()
        left = max_schedules - tally.runs if exhaustive and sample and not found else 0
        if remote is not None:
            sampled = remote.finish(tally, left)
        else:
            length = len(tally.baseline.picks) if tally.baseline is not None else 1
            sampled = _sample_runs(scenario, protocol, workers, fp, seed, left, first,
                                   processes, tally, invariants,
                                   (depth, max(1, length)) if depth else None)
    finally:
        if remote is not None:
            remote.close()
    tally.settle()
    failures = sorted(tally.groups.values(), key=lambda f: _smallest(f.run))
    return ExploreResult(getattr(scenario, "__name__", "scenario"), protocol_name(protocol), bound,
                         tally.runs, pruned, exhaustive, sampled, time.perf_counter() - start,
                         failures, len(states.seen) if states is not None else 0,
                         states.revisits if states is not None else 0, tally.repeats)


def _search(scenario: Scenario, protocol: str | ProtocolVariant, workers: int, fp: str, bound: int,
            reduce: bool, first: bool, tally: Tally, invariants: tuple = (),
            states: _States | None = None, processes: int = 1, away: _Remote | None = None
            ) -> tuple[bool, int]:
    """Depth-first over the orders within each bound from 0 up to ``bound``: whether every
    order within ``bound`` was covered, and how many runs the sleep sets pruned.

    Iterative deepening: the orders that delay one message are all run before any that
    delays two, so a one-message race is found in a few runs whatever the size of the
    two-message space (dask#8215's is found in 20 runs; depth-first at bound 2 alone walked
    thousands of two-message orders, many of them livelocks, first).  A pass whose bound
    never cut an order covered every order: deeper passes are not run.

    Each pass makes again every run of the pass before (they delay fewer messages than its
    bound: counted then, made again only to backtrack from); those it follows from what the
    pass before kept of them instead of running them (see :func:`_remade`).

    With ``processes``, the last pass — the largest, by far — is shared with forked helpers
    (:func:`_shared_pass`) once the passes before it have made :data:`_SHARED_PASS_MIN_RUNS`
    runs (a smaller search is over before a helper would start); with ``away`` (a dask
    cluster's, ``explore(client=…)``), with a task per worker there instead.
    """
    pruned = 0
    previous: dict | None = None
    for b in range(bound + 1):
        if states is not None:
            # A state's budget is this pass's bound less its delays.  Keeping the table across
            # passes, each visit with its budget, prunes next to nothing more: this pass
            # follows every run of the pass before (_remade) at its place in the depth-first
            # order, meeting its states again with one more delay to spend, so an older entry
            # would stop only a deeper run that meets such a state first.  Measured at bound 2
            # on the zoo: the same runs for every race (#5379: 1,262, one more revisit).
            states.table.clear()
        made: dict | None = {} if b < bound and _REMAKE else None  # (the last pass's: no use)
        # (No fork once a dask client's shares are out: its threads would be copied mid-step.)
        if (b == bound > 0 and processes > 1 and not first
                and (away is not None or tally.on_baseline is None)
                and tally.runs >= _SHARED_PASS_MIN_RUNS):
            exhaustive, cut, p = _shared_pass(scenario, protocol, workers, fp, b, reduce, tally,
                                              invariants, states, previous, processes, away)
        else:
            exhaustive, cut, p = _pass(scenario, protocol, workers, fp, b, reduce, first, tally,
                                       invariants, states, previous, made)
        previous = made
        pruned += p
        if not exhaustive or (first and tally.found()):
            return False, pruned
        if not cut:
            break
    return True, pruned


def _pass(scenario: Scenario, protocol: str | ProtocolVariant, workers: int, fp: str, bound: int,
          reduce: bool, first: bool, tally: Tally, invariants: tuple = (),
          states: _States | None = None, previous: dict | None = None,
          made: dict | None = None, root: _Root | None = None,
          roots: list[_Root] | None = None) -> tuple[bool, bool, int]:
    """One depth-first pass at ``bound``: whether it was exhausted, whether the bound cut an
    order, and how many runs the sleep sets pruned.  A run delaying fewer than ``bound``
    messages was counted by an earlier pass; it is made again only to backtrack from —
    followed from ``previous`` (the pass before's ``made``) when it is there.  ``made`` gets
    what the next pass needs of each run, by the run's start (see :func:`_remade`).

    ``root``: only the subtree of the pass below it (see :func:`_shared_pass`); ``roots``:
    only the first run (the pass's, or ``root``'s), the roots of the subtrees below it
    appended there."""
    prefix: list[int] = []
    entry_sleep: frozenset = frozenset()
    tried: frozenset = frozenset()
    path: dict | None = None
    sleeps: list[frozenset] = []
    floor = -1  # backtracking to a decision at or above it leaves the subtree
    if root is not None:
        floor, prefix, entry_sleep, tried, sleeps, path = root
        prefix, sleeps = list(prefix), list(sleeps)
    pruned = 0
    cut = [False]
    room = _MADE_DECISIONS
    while tally.runs < tally.max_schedules:
        in_order = not tally.runs
        start = (tuple(prefix), entry_sleep, tried, tuple(sleeps))
        kept = previous.get(start) if previous else None
        run = _remade(kept, states, prefix, path, bound) if kept is not None else None
        if run is None:
            run = _run(scenario, protocol, workers, fp, prefix, strict=False,
                       entry_sleep=entry_sleep, explored=tried, baseline=tally.outcome,
                       judge=not in_order, invariants=invariants, states=states, path=path,
                       sleeps=sleeps)
        if made is not None and room > 0:
            room -= len(run.decisions)
            made[start] = (run.shape, _kept(run.decisions) if run.cluster is not None
                           else tuple(run.decisions), tuple(run.visits or ()), run.pruned,
                           run.raised)
        path = run.path
        if in_order:
            # The first run is the in-order one (the oldest message first at every decision):
            # the baseline.  Raised before any decision, no order can avoid it.
            if run.raised is not None and not run.raised.decisions:
                run.cluster.dispose()
                raise ScenarioError(run.schedule, run.raised)
            tally.baseline = run
            if tally.on_baseline is not None:
                tally.on_baseline(tally)
        if in_order and run.raised is not None:
            tally.runs += 1  # kept aside: a failure only if another order does not raise it
        elif run.delays < bound:
            if run.cluster is not None:  # (a run followed, not made, has none)
                run.cluster.dispose()  # an earlier pass counted it
        else:
            pruned += run.pruned
            tally.count(run)
        if first and tally.found():
            return False, cut[0], pruned
        if run.raised is not None and run.raised.name == LivelockError.__name__:
            # Every order inside the loop loops too: go on from the prefix's own siblings.
            del run.decisions[len(prefix):]
        if roots is not None:
            roots += [r for r in _roots(run, bound, reduce, cut) if r[0] > floor]
            return True, cut[0], pruned
        nxt = backtrack(run, bound, reduce, cut)
        if nxt is None or len(nxt[0]) - 1 <= floor:
            return True, cut[0], pruned
        prefix, entry_sleep, tried = nxt
        sleeps = [d.sleep for d in run.decisions[:len(prefix) - 1]]
    return False, cut[0], pruned


def _shared_pass(scenario: Scenario, protocol: str | ProtocolVariant, workers: int, fp: str,
                 bound: int, reduce: bool, tally: Tally, invariants: tuple, states: _States | None,
                 previous: dict | None, processes: int, away: _Remote | None = None
                 ) -> tuple[bool, bool, int]:
    """The search's last pass shared with a forked helper per process, as :func:`_pass`
    returns it; with ``away``, shared among a dask cluster's workers instead, each
    share a task there, while this process waits (:meth:`_Remote.subtrees`).

    The pass's first run is made here, then the first run of each subtree below it
    (:func:`_roots`), and the subtrees below those are dealt out before any is entered:
    largest first (the nearer the root, the more decisions below), each to the process with
    the least so far — a deal that depends on the roots alone, so the result depends on
    ``processes`` and never on timing.  Each process searches its subtrees depth-first with
    a state table of its own; a state reached in two of them is explored in both (more runs
    than one process makes), and a search state stops a run only when its own process
    explored on from it — every continuation of it in a subtree is that subtree's process's,
    and the continuations of a state on a first run made here are every subtree below it,
    each searched by its process.  What each helper counted comes back as :func:`_merge`
    takes it: each failure group's smallest run, replayed here.
    """
    top: list[_Root] = []
    exhaustive, cut, pruned = _pass(scenario, protocol, workers, fp, bound, reduce, False, tally,
                                    invariants, states, previous, None, roots=top)
    # The first run of each subtree below it too, here: one of them can hold nearly half the
    # pass (#5379: 44% of its runs, 47% of its time, below the first run's third decision);
    # the subtrees below theirs are many and small (169), and dealt out they fall evenly.
    roots: list[_Root] = []
    for root in top:
        done, more_cut, more = _pass(scenario, protocol, workers, fp, bound, reduce, False,
                                     tally, invariants, states, previous, None, root=root,
                                     roots=roots)
        exhaustive, cut, pruned = exhaustive and done, cut or more_cut, pruned + more
    if not exhaustive or not roots:
        return exhaustive, cut, pruned
    shares = min(processes, len(roots))
    length = 1 + max(root[0] for root in roots)  # the first run's decisions, near enough
    dealt: list[list[_Root]] = [[] for _ in range(shares)]
    load = [0] * shares
    for root in sorted(roots, key=lambda r: r[0]):  # (a stable sort: ties in the pass's order)
        least = load.index(min(load))
        dealt[least].append(root)
        load[least] += length - root[0]
    budget = (tally.max_schedules - tally.runs) // shares
    args = (scenario, protocol, workers, fp, bound, reduce, tally, invariants, states, previous)
    if away is not None:
        results = away.subtrees(args, dealt, budget)
    else:
        done, more_cut, more, results = _forked_subtrees(args, dealt, budget)
        exhaustive, cut, pruned = done, cut or more_cut, pruned + more
    for done, more_cut, more, counted, same, failing, seen, revisits, own_states in results:
        exhaustive, cut, pruned = exhaustive and done, cut or more_cut, pruned + more
        tally.same += same
        if states is not None:
            states.seen |= seen
            states.revisits += revisits
            states.own += own_states
        for count, picks in failing:
            run = _run(scenario, protocol, workers, fp, picks, strict=True,
                       baseline=tally.outcome, invariants=invariants)
            tally.record(run, count)
        tally.runs += counted
    tally.report()
    return exhaustive, cut, pruned


def _forked_subtrees(args: tuple, dealt: list[list[_Root]], budget: int
                     ) -> tuple[bool, bool, int, list]:
    """A shared pass's ``dealt`` subtrees, the first share here and each other in a forked
    helper: this share's ``(exhausted, cut, pruned)`` (counted into its tally as it goes),
    and what each helper sent back (:func:`_subtrees`)."""
    tally = args[6]
    forked: list[_Helper] = []
    try:
        for mine in dealt[1:]:
            shield = interrupts.enter()
            try:
                forked.append(_fork(functools.partial(_subtrees, *args, mine, budget)))
            finally:
                interrupts.leave(shield)
        tally.elsewhere = lambda: sum(helper.made.value for helper in forked)
        own = tally.max_schedules
        tally.max_schedules = tally.runs + budget
        try:
            done, cut, pruned = _subtrees(*args, dealt[0], budget)[:3]
        finally:
            tally.max_schedules = own
        return done, cut, pruned, _collect(forked, tally)
    finally:
        tally.elsewhere = None
        _reap(forked)  # interrupted, or a run raised: no helper outlives the search


def _subtrees(scenario: Scenario, protocol: str | ProtocolVariant, workers: int, fp: str,
              bound: int, reduce: bool, tally: Tally, invariants: tuple, states: _States | None,
              previous: dict | None, roots: list[_Root], budget: int,
              going: Callable[[int], bool] | None = None, name: object = None) -> tuple:
    """A process's subtrees of a shared pass (:func:`_shared_pass`), searched one after the
    other within ``budget`` runs: ``(exhausted, cut, pruned, runs counted, same, failing,
    states seen, revisits, own states)``, ``failing`` each new count of a failure group with
    its smallest run's picks.  ``going``, in a helper (forked, or a dask task), is told the
    runs counted so far; ``name`` tells its states apart from every other share's (the
    process id by default; a dask task's key, since a worker may run a second share once
    another worker leaves)."""
    runs, same, before = tally.runs, tally.same, {g: f.count for g, f in tally.groups.items()}
    revisits, own = (states.revisits, states.own) if states is not None else (0, 0)
    if going is not None:
        # A forked copy: nothing of the parent's is told from here (its progress bar, a
        # dask cluster's shares); its count goes back through ``going``.
        tally.progress = tally.on_baseline = tally.elsewhere = None
        tally.max_schedules = tally.runs + budget
        tally.between_runs = lambda: going(tally.runs - runs)
    exhaustive, cut, pruned = True, False, 0
    for root in roots:
        done, more_cut, more = _pass(scenario, protocol, workers, fp, bound, reduce, False, tally,
                                     invariants, states, previous, None, root=root)
        exhaustive, cut, pruned = exhaustive and done, cut or more_cut, pruned + more
        if not done:
            break
    failing = [(f.count - before.get(g, 0), f.run.picks) for g, f in tally.groups.items()
               if f.count > before.get(g, 0)]
    seen: set = set()
    if states is not None:
        # A state met again whose digest was its run's own is a token numbered here: renamed
        # apart from the other processes' numbers (see _remade).
        name = os.getpid() if name is None else name
        seen = {("own", name, t[1]) if t[0] == "own" and t[1] >= own else t for t in states.seen}
    return (exhaustive, cut, pruned, tally.runs - runs, tally.same - same, failing, seen,
            states.revisits - revisits if states is not None else 0,
            states.own - own if states is not None else 0)


#: The runs the passes before the last must have made for the last to be shared among
#: processes (see :func:`_search`): #5379's bound 2 makes 85 before its last pass (1,177 runs,
#: 1.2 s), #8576's under fixed 28 before 84 (0.1 s).  Shared at any size, the zoo's other
#: races (0.01–0.26 s each) came out from 0.05 s faster to 0.12 s slower (a loaded machine).
_SHARED_PASS_MIN_RUNS = 50


#: Whether a pass follows the runs of the pass before from what it kept of them (see
#: :func:`_remade`) rather than running them again: the same search either way (a test
#: turns it off to compare).
_REMAKE = True
#: How many decisions a pass keeps of its runs for the next pass (see :func:`_remade`), about
#: 300 bytes each: past that, the next pass runs the rest again.
_MADE_DECISIONS = 200_000


class _Head:
    """A deliverable message as a kept decision holds it: what the search reads of it (its id,
    and its op and receiver, whose delivery it is: :func:`_actor`) — not the message itself,
    whose payload a pass would otherwise keep alive for every decision of every run."""

    __slots__ = ("msg_id", "op", "receiver")

    def __init__(self, msg: Message):
        self.msg_id, self.op, self.receiver = msg.msg_id, msg.op, msg.receiver


def _kept(decisions: list[_Decision]) -> tuple[_Decision, ...]:
    """A run's decisions as a pass keeps them for the next (see :data:`_MADE_DECISIONS`):
    each message a :class:`_Head`, made once per run (a message is a head of many)."""
    heads: dict[int, _Head] = {}
    kept = []
    for d in decisions:
        light = []
        for h in d.heads:
            head = heads.get(h.msg_id)
            if head is None:
                head = heads[h.msg_id] = _Head(h)
            light.append(head)
        kept.append(_Decision(light, d.pick, d.sleep))
    return tuple(kept)


def _remade(kept: tuple, states: _States | None, prefix: Sequence[int], path: dict | None,
            bound: int) -> Run | None:
    """A run of the pass before made again without running it: what the pass before ``kept``
    of it — its decisions, what it did at each state it fingerprinted (:func:`_visit`'s log),
    whether it was pruned, what it raised — followed against this pass's table.  None when
    it must run: the table stopped it at its last state then and does not now.

    A run is its picks: the same prefix (with the same sleep and explored sets at its last
    decision) replays to the same decisions and the same states, and so to the same visits
    — only the table they are looked up in differs from pass to pass.  Each visit is done
    again as :func:`_visit` does it (the states of the path, the table, the revisits): a
    visit the table now stops ends the run there, pruned, as the run would have ended.
    The run is one the pass counts no more (it delays fewer messages than ``bound``): it is
    only backtracked from, so its trace, checks and outcome are not needed.
    """
    shape, decisions, visits, pruned, raised = kept
    stopped = bool(visits) and visits[-1] is _STOPPED
    last = len(prefix) - 1
    mine: dict = {k: v for k, v in path.items() if v[1] <= last} if path else {}
    n = len(visits) - stopped
    if states is None:  # a search without states: its runs are their decisions alone
        states = _States()
    table, seen = states.table, states.seen
    added: list = []
    fresh: list = []  # the states that run would have met as new (see below)
    end = None  # the visit the table stops it at now, before where it stopped then
    revisits = 0
    for i in range(n):
        system, late, spent, seq, at, asleep, own = visits[i]
        if own:
            # A digest that was the run's own (_digest): made again, the run would have met
            # it as a state never seen, with a digest of its own again — counted so.
            token = ("own", states.own)
            states.own += 1
            seen.add(token)
            fresh.append(token)
        if (system, late, spent) in mine:
            if i + 1 != n:  # a loop the run did not stop at: not the run kept
                break
            end = n  # the loop it stopped at then
            break
        mine[system, late, spent] = (seq, at)
        if asleep is None:
            continue
        known = table.get(system)
        if known is not None and any(spent0 <= spent and asleep0 <= asleep and late0 >= late
                                     for asleep0, late0, spent0 in known):
            revisits += 1
            end = i
            break
        if stopped and i + 1 == n:
            break  # stopped here then, not now: it goes on past what was kept
        entry = (asleep, late, spent)
        if known is None:
            table[system] = [entry]
        else:
            known.append(entry)
        added.append((system, known))
    else:
        end = n
    if end is not None and end < n:  # stopped earlier than then
        at = visits[end][4]
        run = Run(shape, [d.pick for d in decisions[:at]], list(decisions[:at]), None, [],
                  None, True, None, path=mine, visits=[*visits[:end + 1], _STOPPED])
    elif end == n and not stopped:
        run = Run(shape, [d.pick for d in decisions], list(decisions), None, [], None, pruned,
                  raised, path=mine, visits=list(visits))
    else:
        run = None
    if run is None or run.delays >= bound:  # not what the run would do: run it
        seen.difference_update(fresh)
        for system, known in reversed(added):
            if known is None:
                del table[system]
            else:
                known.pop()
        return None
    states.revisits += revisits
    return run


def _sample_runs(scenario: Scenario, protocol: str | ProtocolVariant, workers: int, fp: str,
                 seed: int, left: int, first: bool, processes: int, tally: Tally,
                 invariants: tuple = (), pct: tuple[int, int] | None = None) -> int:
    """``left`` random runs, the draws ``0 … left - 1`` of :class:`_Share`: here alone, or
    shared with a forked helper per process; how many were counted.  Whatever the shares,
    each draw is counted once and the result is the one this process alone gives (the
    failures that come back as picks are replayed here)."""
    shares = 1 + (min(processes - 1, left // _FORK_MIN_RUNS) if not first else 0)
    args = (scenario, protocol, workers, fp, seed, tally.outcome, invariants, pct)
    own = _Share(*args, 0, shares)
    forked: list[_Helper] = []
    try:
        for i in range(1, shares):
            # Started and kept in one shielded step: an interrupt between the two would leave
            # a helper nobody reaps.
            shield = interrupts.enter()
            try:
                forked.append(_fork(functools.partial(_Share(*args, i, shares).summary,
                                                      range(left))))
            finally:
                interrupts.leave(shield)
        if forked:
            tally.elsewhere = lambda: sum(helper.made.value for helper in forked)
        sampled = own.count(tally, range(left), first)
        if forked:
            results = _collect(forked, tally)
            sampled += _merge(scenario, protocol, workers, fp, tally, results, invariants)
            tally.report()
    finally:
        tally.elsewhere = None
        _reap(forked)  # interrupted, or a run raised: no helper outlives the search
    return sampled


class _Remote:
    """A search's work on a dask cluster (``explore(client=…)``), a task per worker — per
    process, not per thread: runs are pure Python, so two in one interpreter take turns on
    its GIL, and they do not stay replayable there (a worker of two threads made #5379's
    shared pass meet 1,083 and 1,187 distinct states in two searches, against 1,046, and
    turned a share's memo off on #8576) — each pinned to its worker: the random runs' shares
    (:func:`_share_away`), and the last pass's subtrees when it is shared
    (:func:`_subtrees_away`).

    The random shares start as soon as the in-order run is made (what the random runs are
    judged against), while this process searches: it cannot know yet how many draws the
    search will leave, so each takes every draw the search could (``max_schedules - 1``),
    and only those below what it left are counted (:func:`_merge`'s ``below``).  A search
    whose last pass turns out large enough to share lets them go first (each would keep its
    worker's thread until done, and the subtrees would wait behind it), and sends them
    again, for exactly the draws left, once the pass is over.
    """

    def __init__(self, client: Any, addresses: list[str], search: tuple):
        self.client = client
        #: The workers' addresses: a share each.
        self.addresses = addresses
        self.search = search
        fp, seed = search[3:5]
        self.token = f"explore-{fp}-{seed}-{os.getpid()}-{next(_SEARCHES)}"
        self.args: tuple = ()
        self.futures: list = []
        self._sent = itertools.count()  # each sending's keys are new (see start)
        self._again = False  # the random shares were let go for a shared pass

    @classmethod
    def of(cls, client: Any, scenario: Scenario, protocol: str | ProtocolVariant, workers: int,
           fp: str, seed: int, invariants: tuple, depth: int) -> _Remote | None:
        """The search's remote, or None when every worker is in this process: their threads
        share this interpreter (its GIL, and the state every run's clients set, such as
        dask's default scheduler), so shares side by side would neither run faster nor stay
        replayable — the search is then made here, in one process.  A worker of this
        process beside others takes no share (by its ``inproc://`` address, or as one of
        this process's workers: ``LocalCluster(processes=False, protocol="tcp")``'s)."""
        nthreads = client.nthreads()
        if not any(nthreads.values()):
            raise ArgumentValueError("explore(client=…): the client's cluster has no worker")
        here = _workers_here()
        addresses = sorted(address for address, n in nthreads.items()
                           if n and address not in here and not address.startswith("inproc://"))
        if not addresses:
            return None
        return cls(client, addresses, (scenario, protocol, workers, fp, seed, invariants, depth))

    def start(self, tally: Tally, left: int | None = None) -> None:
        """The random shares sent, on the in-order run (``Tally.on_baseline``), for every draw
        the search could leave; or for the ``left`` draws it did leave.  Each sending's keys
        are new: a released task may still run on its worker (see ``dask/share.py``), and
        dask would hand a task sent again under its key that run's result."""
        scenario, protocol, workers, fp, seed, invariants, depth = self.search
        length = max(1, len(tally.baseline.picks)) if tally.baseline is not None else 1
        self.args = (scenario, protocol, workers, fp, seed, tally.outcome, invariants,
                     (depth, length) if depth else None)
        draws = range(tally.max_schedules - 1 if left is None else left)
        sent = next(self._sent)
        self.futures = [self.client.submit(_share_away, self.args, s, len(self.addresses),
                                           draws, key=f"{self.token}-draws-{sent}-{s}",
                                           workers=[address], allow_other_workers=True,
                                           pure=False)
                        for s, address in enumerate(self.addresses)]

    @staticmethod
    def let_go() -> None:
        """Between two runs of the search here: the GIL let go for a moment.  The shares
        travel through this process's event loop (the client's; a ``LocalCluster``'s
        scheduler too), which a search holding the GIL starves — each of its steps waited
        out the 5 ms switch interval, and the shares began only once the search was over
        (0.22 s after they were sent, measured on #8576; within 17 ms with this)."""
        time.sleep(0)

    def subtrees(self, args: tuple, dealt: list[list[_Root]], budget: int) -> list[tuple]:
        """A shared pass's ``dealt`` subtrees, a task per worker (:func:`_subtrees_away`):
        what each searched, as :func:`_subtrees` returns it.  The random shares out are let
        go first, and sent again by :meth:`finish`."""
        if self.futures:
            self.close()
            self._again = True
        scenario, protocol, workers, fp, bound, reduce, tally, invariants, states, previous = args
        job = (scenario, protocol, workers, fp, bound, reduce, tally.outcome, tally.runs,
               invariants, states, previous)
        prefix = f"{self.token}-pass-"
        futures = [self.client.submit(_subtrees_away, job, roots, budget, key=f"{prefix}{s}",
                                      workers=[address], allow_other_workers=True, pure=False)
                   for s, (roots, address) in enumerate(zip(dealt, self.addresses))]
        try:
            if tally.progress is not None:
                self._wait(futures, prefix, tally, tally.max_schedules - tally.runs)
            return self.client.gather(futures)
        finally:
            for future in futures:
                future.release()

    def finish(self, tally: Tally, left: int) -> int:
        """The draws ``0 … left - 1`` counted in; how many were counted.  While the shares
        run, ``tally.progress`` hears how far they have got, every :data:`_PROGRESS_SECONDS`."""
        if self._again and left:
            self.start(tally, left)
        if not self.futures or not left:
            return 0
        try:
            if tally.progress is not None:
                self._wait(self.futures, f"{self.token}-draws-", tally, left - 1)
            results = self.client.gather(self.futures)
        finally:
            self.close()
        scenario, protocol, workers, fp = self.args[:4]
        sampled = _merge(scenario, protocol, workers, fp, tally, results, self.args[6],
                         below=left)
        tally.report()
        return sampled

    def _wait(self, futures: list, prefix: str, tally: Tally, most: int) -> None:
        """Until every one of ``futures`` is done: the runs their tasks (keys beginning with
        ``prefix``) have counted so far, read on each worker (``dask.share.made``), told to
        ``tally.progress``, at most ``most`` (the failures they found come back with their
        results)."""
        from distributed import wait

        from .dask.share import made

        while True:
            try:
                wait(futures, timeout=_PROGRESS_SECONDS)
                return
            except TimeoutError:
                # (A worker leaving meanwhile is no error of the search's: its share's count
                # is left out, and dask runs the share again elsewhere.)
                done = sum(self.client.run(made, prefix, on_error="ignore").values())
                tally.report(min(done, most))

    def close(self) -> None:
        """Let go of the shares still out (the search raised, or its budget ran out first:
        released, a share not begun is never run)."""
        for future in self.futures:
            future.release()
        self.futures = []


def _workers_here() -> set[str]:
    """The addresses of the dask workers running in this process (``distributed`` keeps
    every worker it makes in ``Worker._instances``)."""
    from distributed import Worker

    return {worker.address for worker in list(Worker._instances)}


#: Numbers the searches sent to a dask cluster, for their shares' names there.
_SEARCHES = itertools.count()
#: How often a search waiting for its shares (forked, or on a dask cluster) reports their progress.
_PROGRESS_SECONDS = 0.5


def _share_away(args: tuple, share: int, shares: int, draws: Sequence[int]) -> tuple:
    """A share's runs (:meth:`_Share.summary`) in a dask worker.  With the garbage collector
    paused, as :func:`explore` pauses it here (each run leaves young cycles; collected every
    100 runs); out of the worker's profiler, whose samples would hold a run's frames and so
    decide when a dropped future is released; noting how far it got, for the search's
    progress; and stopped once its future is let go (interrupted, the search released it),
    which dask cannot do to a running task (``jupyter_refs/dask/share.py``)."""
    from .dask.share import going, unprofiled

    go = going()  # (asked before it leaves the profiler: it reads the worker's threads)
    with gcscope.paused(), unprofiled():
        return _Share(*args, share, shares).summary(draws, go)


class _LetGo(Exception):
    """A dask task of the search's whose future the search let go of: it stops there."""


def _subtrees_away(job: tuple, roots: list[_Root], budget: int) -> tuple | None:
    """A shared pass's subtrees (:func:`_subtrees`) in a dask worker, as :func:`_share_away`
    runs a share of the random runs there: with a tally of its own, which judges by the
    in-order run's outcome and counts on from the runs made before the pass, and the
    search's states and last pass's runs as they were when the subtrees were dealt.  None
    once its future was let go (dask cannot stop its thread: it stops at its next run)."""
    from distributed import get_worker

    from .dask.share import going, unprofiled

    scenario, protocol, workers, fp, bound, reduce, outcome, runs, invariants, states, \
        previous = job
    go, name = going(), get_worker().get_current_task()  # (before it leaves the profiler)

    def counted(n: int) -> bool:
        if not go(n):
            raise _LetGo
        return True

    tally = Tally(runs + budget, None, outcome, runs)
    with gcscope.paused(), unprofiled():
        try:
            return _subtrees(scenario, protocol, workers, fp, bound, reduce, tally, invariants,
                             states, previous, roots, budget, counted, name)
        except _LetGo:
            return None


#: How many of its draws a share (forked, or on a dask worker) counts between two notes of
#: how far it got, each a look at whether the search still wants it (well under a µs).
_ASK_EVERY = 32


def picklable(scenario: Scenario) -> None:
    """Refuse, with what cloudpickle said, a scenario that cannot travel to a dask cluster's
    workers (``explore(client=…)`` runs it there)."""
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - dask brings it
        raise ArgumentValueError("explore(client=…) needs cloudpickle (pip install cloudpickle)"
                                 ) from None
    try:
        cloudpickle.dumps(scenario)
    except Exception as exc:  # noqa: BLE001 - any pickling error says the same to the user
        name = getattr(scenario, "__qualname__", None) or repr(scenario)
        raise ArgumentValueError(
            f"explore(client=…) runs the scenario on the dask cluster's workers, so it must be "
            f"picklable by cloudpickle, and {name} is not: {type(exc).__name__}: "
            f"{_one_line(exc)} (a scenario that closes over a lock, a file, a live cluster or "
            "a client cannot travel; explore it without client=)") from None


def _merge(scenario: Scenario, protocol: str | ProtocolVariant, workers: int, fp: str,
           tally: Tally, results: list[_Counted], invariants: tuple, below: int | None = None
           ) -> int:
    """Helpers' runs counted in (:meth:`_Share.summary`), their draws below ``below``
    only: each failure group's smallest run (least size, then least picks: see
    :func:`_smallest`) replayed here (exact), with its count; how many draws were counted."""
    counted = 0
    best: dict[tuple, list] = {}  # group -> [count, size, picks, draw]
    for share in results:
        n = len(share.draws) if below is None else bisect.bisect_left(share.draws, below)
        counted += n
        if below is None:
            tally.same += len(share.same)
            tally.repeats += n - len(share.made)
        else:
            tally.same += bisect.bisect_left(share.same, below)
            tally.repeats += n - bisect.bisect_left(share.made, below)
        for draw, order in share.failed:
            if below is not None and draw >= below:
                break
            group, size, picks = share.failing[order]
            known = best.get(group)
            if known is None:
                best[group] = [1, size, picks, draw]
            else:
                known[0] += 1
                if (size, picks) < (known[1], known[2]):
                    known[1:] = size, picks, draw
    tally.runs += counted
    for count, _size, picks, draw in best.values():
        run = _run(scenario, protocol, workers, fp, picks, strict=True, baseline=tally.outcome,
                   invariants=invariants)
        run.draw = draw
        tally.record(run, count)
    return counted


class _Counted(NamedTuple):
    """What a helper's share sends back (:meth:`_Share.summary`): its counted draws as columns
    of increasing draw numbers, which a merge below a limit cuts with a bisection — not a
    tuple per draw: on a dask cluster the 20,000 tuples of #8576's two shares took 9 ms to
    gather and 3 ms to merge, on the search's last stretch, with the cores idle."""

    #: Every draw it counted.
    draws: array.array
    #: Those it ran (the rest it counted from its memo).
    made: array.array
    #: Those that passed while raising as the in-order run did (``Tally.same``).
    same: array.array
    #: Those that failed: ``(draw, order)``, the order its place in ``failing``.
    failed: list[tuple[int, int]]
    #: The failing orders it ran: ``(group, size, picks)``.
    failing: list[tuple[tuple, tuple, list[int]]]


#: No limit on the decisions a walk down the memo makes.
_ALL = sys.maxsize


class _Share:
    """One share of a random phase: the draws it counts, each an order drawn with numbers of
    its own (:class:`~jupyter_refs.sampling.Draw`, so any share can make any draw), each
    counted by exactly one share whatever their number.

    Every share is given every draw and follows each as far as its first picks
    (:data:`~jupyter_refs.sampling.SPLIT_PICKS`), which name the share whose order it is
    (:class:`~jupyter_refs.sampling.Owners`: every share deals each prefix alike, to the
    share with the least load when it is first met); it goes on only with its own.  So the shares
    split the tree of orders, not only the draws: each order is run by one share, once, and
    drawn again it is counted from its :class:`~jupyter_refs.sampling.Memo` without running
    — the memo pays as much to two shares as to one (PCT draws an order again often: 1,100
    distinct of 4,843 on #8576).  Following a draw down the memo costs about 8 µs, so the
    first picks of the other shares' draws cost a share less than a second round of
    messages did, and the shares never wait for each other.  A draw whose first picks the
    memo does not know yet is run, and stopped there when they are another share's.
    """

    def __init__(self, scenario: Scenario, protocol: str | ProtocolVariant, workers: int,
                 fp: str, seed: int, baseline: Outcome | None, invariants: tuple,
                 pct: tuple[int, int] | None, share: int = 0, shares: int = 1):
        self.args = (scenario, protocol, workers, fp)
        self.seed = seed
        self.baseline, self.invariants, self.pct = baseline, invariants, pct
        self.share, self.shares = share, shares
        self.memo = Memo()
        #: Which share counts each order, by its first picks: dealt alike in every share,
        #: each told every draw's prefix in order.
        self.owners = Owners(shares)
        #: The failing orders this share ran: ``(group, size, picks)``, by ``Seen.order``.
        self.failing: list[tuple[tuple, tuple, list[int]]] = []

    def runs(self, draws: Sequence[int]) -> Any:
        """Each of ``draws`` that is this share's: made, as a :class:`Run` (its ``draw``
        set), or counted from the memo, as a :class:`~jupyter_refs.sampling.Seen`; as
        ``(draw, made, verdict)``, the verdict of its order a ``Seen`` (``made`` itself when
        counted from the memo)."""
        seed, pct, memo = self.seed, self.pct, self.memo
        share, shares, took = self.share, self.shares, self.owners.took
        for i in draws:
            draw = Draw(seed, i, pct)
            picks: list[int] = []
            node = memo.root if memo.on else None
            mine = shares == 1
            if node is not None and not mine:
                # Most of a share's draws end here, the other shares' orders: followed in
                # this loop to their first picks, with no call of their own (1 µs a draw).
                node = draw.follow(node, picks, SPLIT_PICKS)
                if node is not None and (len(picks) == SPLIT_PICKS or node[2] is not None):
                    # Its first picks, or all of a shorter order's: whose it is.
                    if took(picks) != share:
                        continue
                    mine = True
            made = self._draw(i, draw, picks, node, mine)
            if made is not None:
                yield i, *made

    def count(self, tally: Tally, draws: Sequence[int], first: bool = False) -> int:
        """Count this share's runs of ``draws`` into ``tally`` as they come (its progress
        too); ``first``: stop once it has its finding.  How many were counted."""
        n = 0
        for _draw, made, seen in self.runs(draws):
            n += 1
            if made is seen:
                tally.count_again(seen)
            else:
                tally.count(made)
            if first and tally.found():
                break
        return n

    def summary(self, draws: Sequence[int], going: Callable[[int], bool] | None = None
                ) -> _Counted:
        """This share's runs of ``draws`` as a helper sends them back (:func:`_merge` counts
        them).  ``going(n)`` is told every :data:`_ASK_EVERY` draws how many it has counted,
        and cuts it short when false (the search let go of it)."""
        counted, made, same = array.array("q"), array.array("q"), array.array("q")
        failed: list[tuple[int, int]] = []
        for n, (draw, run, seen) in enumerate(self.runs(draws), 1):
            counted.append(draw)
            if run is not seen:
                made.append(draw)
                run.cluster.dispose()
            if seen.same:
                same.append(draw)
            if seen.order >= 0:
                failed.append((draw, seen.order))
            if n % 100 == 0:
                gc.collect(0)
            if going is not None and n % _ASK_EVERY == 0 and not going(n):
                break
        return _Counted(counted, made, same, failed, list(self.failing))

    def _draw(self, i: int, draw: Draw, picks: list[int], node: list | None, mine: bool
              ) -> tuple[Run | Seen, Seen] | None:
        """Draw ``i``, followed in the memo (by :meth:`runs`) to ``node`` with ``picks`` and
        ``mine`` if its first picks are this share's (so already told to :attr:`owners`):
        followed on as far as the memo knows the channels, drawing on them exactly what the
        run would draw; then made for real, by the same chooser.  None: it is another
        share's order."""
        share = self.share
        if node is not None and mine:
            node = draw.follow(node, picks, _ALL)
        if node is not None and node[2] is not None:
            return node[2], node[2]  # a leaf: this order again
        # Past what the memo knows (or where a run stopped before): made for real.
        walked = self.memo.channels(picks)
        decisions: list[_Decision] = []
        policy, differs = self._resumed(draw, walked, picks, decisions, mine)
        scenario, protocol, workers, fp = self.args
        run = _run(scenario, protocol, workers, fp, [], strict=False, baseline=self.baseline,
                   invariants=self.invariants, chooser=(policy, decisions))
        if len(decisions) < len(walked) or differs[0]:
            # The run did not make the decisions its memo remembered (fewer of them, or on
            # other channels): the scenario answers otherwise under one order.  The memo is
            # off, and the draw made again from its start, as every draw is from now on.
            self.memo.on = False
            run.cluster.dispose()
            return self._draw(i, Draw(self.seed, i, self.pct), [], None, mine)
        run.draw = i
        made = [(tuple([h.channel for h in d.heads]), d.pick) for d in decisions]
        if not mine:  # its prefix known only now: dealt once the run stands
            mine = self.owners.took([pick for _, pick in made]) == share
        if run.pruned:  # stopped after its first picks: another share's order
            self.memo.add(made, None)
            run.cluster.dispose()
            return None
        if run.failed:
            seen = Seen(_group(run), 0, len(self.failing) if mine else -1)
            if mine:
                self.failing.append((seen.group, run_size(run), run.picks))
        else:
            seen = Seen(None, int(run.raised is not None))
        self.memo.add(made, seen)
        if not mine:
            run.cluster.dispose()
            return None
        return run, seen

    def _resumed(self, draw: Draw, walked: list[tuple[str, ...]], picks: list[int],
                 decisions: list[_Decision], mine: bool) -> tuple[_Policy, list[int]]:
        """A sampled run's policy: ``picks``, drawn on the memo's ``walked`` channels, made
        again on the run's real heads, then ``draw``'s own picks — and, unless ``mine``, a
        :class:`Stop` at the decision after the first :data:`SPLIT_PICKS` picks when they
        name another share.  With it, a flag set once real heads were not the remembered
        ones."""
        differs = [0]
        share, owners = self.share, self.owners
        done = len(walked)

        def choose(heads: Sequence[Message]) -> Message:
            i = len(decisions)
            if i == SPLIT_PICKS and not mine and \
                    owners.of([d.pick for d in decisions]) != share:
                raise Stop
            if i < done:
                chosen = picks[i]
                if len(heads) != len(walked[i]) or any(
                        h.channel != c for h, c in zip(heads, walked[i], strict=True)):
                    differs[0] = 1  # not the run its memo knew: _draw makes it again without
                    chosen = 0
            else:
                chosen = draw.pick(tuple([h.channel for h in heads]))
            decisions.append(_Decision(heads, chosen))
            return heads[chosen]

        return _Policy(choose, set()), differs


class _Helper(NamedTuple):
    """A helper forked off this process (:func:`_fork`): a share of the random runs, or of a
    pass's subtrees."""

    process: Any
    #: Its end of their pipe, on which what its job returns comes back.
    pipe: Any
    #: How many runs it has counted so far (shared memory), for the search's progress.
    made: Any


def _fork(job: Callable[[Callable[[int], bool]], Any]) -> _Helper:
    """Start ``job(going)`` in a forked copy of this process: a share of the random runs
    (:meth:`_Share.summary`), or of a pass's subtrees (:func:`_subtrees`); what it returns
    comes back on the helper's pipe.

    The copy writes nothing (a scenario's prints would repeat once per run) and leaves
    with ``os._exit``, so nothing of the parent — a kernel's sockets and threads — is
    touched or closed there.  A run whose scenario raised is a failure like any other,
    reported by its picks; replaying them here gives it its trace and traceback.  As it goes
    it notes how many it has counted (``going``: a share every :data:`_ASK_EVERY` draws, a
    pass's helper every run), in memory both share.
    """
    ctx = multiprocessing.get_context("fork")
    mine, theirs = ctx.Pipe()
    made = ctx.RawValue("q", 0)

    def going(n: int) -> bool:
        made.value = n
        return True

    def work() -> None:
        code = 0
        try:
            sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - dies with the process
            theirs.send(job(going))
        except BaseException:  # noqa: BLE001 - reported as a failed helper, never raised here
            code = 1
        finally:
            os._exit(code)

    process = ctx.Process(target=work, daemon=True)
    process.start()
    theirs.close()
    return _Helper(process, mine, made)


def _reap(helpers: list[_Helper]) -> None:
    """Stop the helpers not joined yet and wait for each (a child never waited for stays a
    zombie in the kernel until it exits: one per interrupted ``%%explore``).  A second
    interrupt waits until they are reaped."""
    shield = interrupts.enter()
    try:
        for helper in helpers:
            helper.pipe.close()
            if helper.process.is_alive():
                helper.process.kill()  # SIGKILL: the copy runs no handler of the kernel's
            helper.process.join()
        helpers.clear()
    finally:
        interrupts.leave(shield)


def _collect(forked: list[_Helper], tally: Tally) -> list:
    """What each helper sent back, once they are all done (their progress told meanwhile,
    every :data:`_PROGRESS_SECONDS`); each is joined, and ``forked`` left empty."""
    for helper in forked:
        while tally.progress is not None and not helper.pipe.poll(_PROGRESS_SECONDS):
            tally.report()
    tally.elsewhere = None
    results = [_receive(helper) for helper in forked]
    for helper in forked:
        helper.pipe.close()
        helper.process.join()
    forked.clear()
    return results


def _receive(helper: _Helper) -> tuple:
    """A helper's runs (:meth:`_Share.summary`)."""
    try:
        return helper.pipe.recv()
    except EOFError:
        raise _died(helper.process) from None


def _died(process: Any) -> RuntimeError:
    process.join()
    return RuntimeError(f"an explorer process died (exit code {process.exitcode})")


def _smallest(run: Run) -> tuple:
    """What a failure group keeps the least of: its runs' size; a systematic run before a
    random one (and the first of equal systematic runs, the search's own order); of equal
    random ones, the least picks — not the earliest drawn, which depends on how the draws
    were shared (see :class:`_Share`)."""
    return (run_size(run), 1, run.picks) if run.draw >= 0 else (run_size(run), 0, ())


def run_size(run: Run) -> tuple[int, int, int]:
    """Smaller is simpler: fewer delayed messages, fewer deviations, a shorter run."""
    return (run.delays, run.deviations, len(run.picks))


def _skipped(d: _Decision, pick: int) -> set[int]:
    """The messages a pick delays: the older deliverable heads it overtakes (awake ones)."""
    if not pick:
        return set()
    if not d.sleep:  # (nearly every decision: nothing asleep, every older head delayed)
        return {h.msg_id for h in d.heads[:pick]}
    asleep = {m for m, _ in d.sleep}
    return {h.msg_id for h in d.heads[:pick] if h.msg_id not in asleep}


def _branches(run: Run, bound: int, reduce: bool, cut: list[bool] | None
              ) -> Iterator[tuple[int, list[int], frozenset, frozenset]]:
    """Every later sibling of ``run``'s picks within ``bound``, deepest decision first (the
    order a depth-first pass enters them): the decision it branches at, and its first run's
    prefix, last node's sleep set and explored set — what it has whenever it is entered,
    since the runs of the subtrees before it pass every decision above it through unchanged.
    ``cut[0]`` is set as the bound keeps an order out."""
    decisions = run.decisions
    delayed: list[frozenset[int]] = [_EMPTY]  # messages delayed before decision i
    so_far = _EMPTY
    for d in decisions:
        if d.pick:  # (most picks delay nothing: the set is shared, not copied, till one does)
            skipped = _skipped(d, d.pick)
            if skipped:
                so_far = so_far | skipped
        delayed.append(so_far)
    for i in range(len(decisions) - 1, -1, -1):
        d = decisions[i]
        heads = d.heads
        if d.pick + 1 >= len(heads):
            continue  # no later sibling
        asleep = {m for m, _ in d.sleep}
        for j in range(d.pick + 1, len(heads)):
            if heads[j].msg_id in asleep:
                continue
            if len(delayed[i] | _skipped(d, j)) > bound:
                if cut is not None:
                    cut[0] = True
                break  # later picks delay even more
            prefix = [x.pick for x in decisions[:i]] + [j]
            if not reduce:
                yield i, prefix, _EMPTY, _EMPTY
                continue
            tried = frozenset((h.msg_id, _actor(h)) for h in heads[:j] if h.msg_id not in asleep)
            yield i, prefix, d.sleep, tried


def backtrack(run: Run, bound: int, reduce: bool = True, cut: list[bool] | None = None
               ) -> tuple[list[int], frozenset, frozenset] | None:
    """The next run in depth-first order: its prefix, and its last node's sleep and explored sets.

    The bound counts *delayed messages*: a message is delayed when a younger one is
    delivered before it while it could have gone.  Race #8576-A needs one: the release.
    ``cut[0]`` is set when the bound kept an order out.
    """
    for _, prefix, entry_sleep, tried in _branches(run, bound, reduce, cut):
        return prefix, entry_sleep, tried
    return None


def _roots(run: Run, bound: int, reduce: bool, cut: list[bool]) -> list[_Root]:
    """Every subtree a depth-first pass enters from ``run``'s decisions (:func:`_branches`), as
    :func:`_pass` starts it."""
    sleeps = tuple(d.sleep for d in run.decisions)
    return [(i, tuple(prefix), entry_sleep, tried, sleeps[:i], run.path)
            for i, prefix, entry_sleep, tried in _branches(run, bound, reduce, cut)]


#: A subtree of a pass (:func:`_roots`): the decision it branches at (backtracking there or
#: above leaves it), and its first run's prefix, entry sleep set, explored set, the sleep sets
#: of the prefix's decisions and the path of states it comes from.
_Root = tuple[int, tuple[int, ...], frozenset, frozenset, tuple[frozenset, ...], dict | None]


def replay(scenario: Scenario, schedule: str, workers: int | None = None,
           keep_open: bool = False, protocol: ProtocolVariant | None = None,
           invariants: Sequence[Invariant] = ()) -> Run:
    """Rerun the run ``schedule`` names; raises :class:`ScheduleError` if it is not this scenario's.

    The cluster has the workers and clients the schedule names (one of each for a
    schedule that names none).  What the scenario raises under it is in
    ``run.raised`` (and ``run.violations``, as ``scenario_raised``), not raised here.
    With ``keep_open`` the replayed cluster stays usable (past the schedule, the oldest
    deliverable message goes first).  A schedule explored under a :class:`ProtocolVariant`
    of one's own replays with that variant as ``protocol`` (the string names it only).
    ``invariants`` judge the run as :func:`explore` judges each (after the checks').
    """
    arguments.scenario(scenario)
    arguments.text(schedule, "schedule")
    arguments.count(workers, "workers", none=True)
    arguments.flag(keep_open, "keep_open")
    arguments.expect(protocol, (ProtocolVariant, type(None)), "protocol",
                     "the ProtocolVariant the schedule was explored under, or None")
    parsed = parse_schedule(schedule)
    fp, devs = parsed.fingerprint, parsed.deviations
    if protocol is None:
        if not is_registered(parsed.protocol):
            raise ScheduleError(f"schedule {schedule} names protocol {parsed.protocol!r}, which is "
                                "not registered: pass the ProtocolVariant it was explored with "
                                "as protocol=")
        protocol = parsed.protocol
    elif protocol_name(protocol) != protocol_name(parsed.protocol):
        raise ScheduleError(f"schedule {schedule} was recorded under protocol {parsed.protocol!r}, "
                            f"not {protocol.name!r}")
    if fp != fingerprint(scenario):
        raise ScheduleError(f"schedule {schedule} was recorded for another scenario "
                            f"(fingerprint {fp}, this one is {fingerprint(scenario)})")
    if workers is not None and workers != parsed.workers:
        raise ScheduleError(f"schedule {schedule} was recorded with {parsed.workers} worker(s), "
                            f"not {workers}")
    arity = scenario_arity(scenario)
    if parsed.clients != arity:
        raise ScheduleError(f"schedule {schedule} was recorded with {parsed.clients} client(s); "
                            f"this scenario takes {arity}")
    length = max(devs) + 1 if devs else 0
    prefix = [devs.get(i, 0) for i in range(length)]
    return _run(scenario, protocol, parsed.workers, fp, prefix, strict=True, keep_open=keep_open,
                invariants=_invariants(invariants))


def judge_as_explored(scenario: Scenario, run: Run, protocol: ProtocolVariant | None = None) -> None:
    """A replayed order the checks found nothing in, judged as :func:`explore` judged it: its
    outcome against the in-order run's (``outcome_differs``).  A replay alone has no in-order
    run to compare with, so #8215's order that returns where in order it raises read as no
    failure in ``%replay`` and was refused by ``confirm``."""
    parsed = parse_schedule(run.schedule)
    if run.violations or not parsed.deviations:
        return
    in_order = format_schedule(parsed.protocol, parsed.fingerprint, (), parsed.workers,
                               parsed.clients)
    judge_outcome(run, replay(scenario, in_order, protocol=protocol).outcome)


def _is_future(value: Any) -> bool:
    """A future of the model or of dask (or a collection of them)."""
    if isinstance(value, list | tuple | set | frozenset):
        return bool(value) and all(_is_future(v) for v in value)
    return type(value).__name__ == "Future" and hasattr(value, "key")


#: Builtins through which code reads names it does not write out (``eval("x")``,
#: ``globals()["x"]``): a cell that calls one gets the whole namespace.
_DYNAMIC_NAMES = frozenset({"eval", "exec", "globals", "locals", "vars"})


def _names_read(code: types.CodeType) -> set[str]:
    """Every global name ``code`` and the code nested in it (functions, classes, comprehensions)
    may read: their ``co_names`` (attribute names among them, harmless: only those the
    namespace has are kept)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def cell_scenario(source: str, namespace: dict[str, Any], client_name: str = "client",
                  filename: str = "<%%explore>", first_line: int = 1) -> Scenario:
    """A scenario from notebook code: ``source`` runs with ``client_name`` bound to the run's client.

    Each run gets a fresh copy of the names the code reads from ``namespace`` (the whole
    namespace if it reads names by ``eval``, ``globals()`` and the like): the scenario then
    carries no more of a notebook than the cell uses, and travels to a dask cluster's
    workers with it.  The names the code binds die when it ends, as a function's locals do,
    so the futures it dropped or kept are released then.  The code's last expression, when
    it ends with one, is what the scenario returns — the run's outcome — unless it is a
    future (or futures), which die with the other names.
    ``filename`` and ``first_line`` say where the code is (``%%explore``: its cell, from
    the line after the magic's), so its events name the user's cell and line.
    """
    padded = "\n" * (first_line - 1) + source
    if filename != "<%%explore>":
        # The body's own file, at the cell's line numbers: a traceback through it shows the
        # user's lines, and IPython's formatter, which parses a frame's whole file, finds
        # Python there (the cell's own file starts with the ``%%explore`` line).
        filename = f"{filename}:%%explore"
        linecache.cache[filename] = (len(padded), None, padded.splitlines(True), filename)
    tree = ast.parse(padded, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        # The cell's last expression is its outcome, as IPython shows it (`new.result()`).
        last = compile(ast.Expression(tree.body.pop().value), filename, "eval")
    code = compile(tree, filename, "exec")
    read = _names_read(code) | (_names_read(last) if last is not None else set())
    base = (dict(namespace) if read & _DYNAMIC_NAMES
            else {name: namespace[name] for name in read if name in namespace})
    # The cell's module, as a notebook's code has one: a function the cell defines then names
    # it, so pickle finds it at once, not by asking every module for it (where a library's
    # ``__getattr__`` can make a cycle that keeps the run's frames, and a dropped future with
    # them, past the ``del`` — the explorer's runs collect no cycles).
    base.setdefault("__name__", namespace.get("__name__", "__main__"))

    def scenario(client: Any) -> Any:
        env = base.copy()
        env[client_name] = client
        try:
            exec(code, env)
            value = eval(last, env) if last is not None else None
            # A future is not an outcome: its repr is its status at that moment, and the run
            # releases it with the cell's other names when it ends.
            return None if _is_future(value) else value
        finally:
            env.clear()

    scenario.fingerprint = hashlib.blake2b(source.strip().encode(), digest_size=3).hexdigest()
    scenario.__name__ = "cell"
    return scenario
