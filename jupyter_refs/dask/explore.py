"""Explore real dask itself: every order of distributed's own messages, deterministically.

``explore_dask(scenario)`` is :func:`jupyter_refs.explore.explore` with each run a fresh
:class:`~jupyter_refs.dask.sim.SimCluster` — distributed's own Scheduler, Workers and Clients
on a virtual-time loop — instead of the kernel-side model: the same depth-first search with
iterative deepening over delayed messages, sleep sets, seeded random runs past the bound,
failure groups (:class:`~jupyter_refs.explore.Failure`, ``explain()``), schedule strings
and :func:`replay_dask`.  The scenario is the same function of clients; it gets dask's own
``distributed.Client`` objects.

Why a function of its own and not ``explore(scenario, on=...)``: the model's ``protocol=``
names a variant of the model, while here the protocol is whatever distributed is installed
(the schedule strings say ``distributed-<version>``); and ``explore.py`` stays free of any
import of distributed.

**Verdicts.**  What the scenario did (returned, raised), judged against the in-order run as
the model's explorer judges it (``scenario_raised``, ``outcome_differs``); and, after every
delivery, the project's ``dangling_future`` read off dask's own state rather than off the
trace: a client holds a future (refcount > 0) that says finished, and the scheduler has
forgotten the key (#8576 form A: a late release), or has it in memory on a worker whose data
no longer holds it (form B: a release inside the scatter; the worker's ``free-keys`` deleted
the fresh copy).  A run's trace is the messages as the network saw them (``msg.sent`` /
``msg.received``, dask's op names mapped by :data:`MESSAGE_NAMES`), plus the violations.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import gc
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from .. import arguments, gcscope
from ..checks import Violation
from ..errors import ArgumentTypeError, ArgumentValueError, LivelockError
from ..explore import (
    OUTCOME_DIFFERS,
    SCENARIO_RAISED,
    THREADS_PER_WORKER,
    Abort,
    ExploreResult,
    Failure,
    Run,
    ScenarioError,
    ScheduleError,
    Stop,
    Tally,
    backtrack,
    choosing_policy,
    fingerprint,
    judge_outcome,
    parse_schedule,
    raised_from,
    run_size,
    scenario_arity,
    value_text,
)
from ..promises import BY_NAME
from ..trace import Trace
from . import sim as sim_mod
from .sim import SimCluster, SimError, SimMessage

#: The promises this explorer judges on dask's own state (declared in ``promises.py``).
DANGLING_FUTURE, DASK_RAISED = BY_NAME["dangling_future"].name, BY_NAME["dask_raised"].name

#: dask's message names where the model's differ (dask -> model).  The rest are the same:
#: update-graph, client-releases-keys, client-desires-keys, scatter, gather, key-in-memory,
#: lost-data, cancelled-keys, compute-task, free-keys, task-finished, task-erred,
#: release-worker-data, execute (a task run).
MESSAGE_NAMES: dict[str, str] = {
    "update_data": "update-data",
    "update_data-reply": "update-data-reply",
    "get_data": "get-data",
    "get_data-reply": "get-data-reply",
}


def model_op(op: str) -> str:
    """A write's op (``a+b`` for a batch) in the model's names."""
    return "+".join(MESSAGE_NAMES.get(part, part) for part in op.split("+"))


def protocol_label() -> str:
    """The protocol a schedule string names: the installed distributed, ``distributed-2026.8.0``."""
    import distributed

    return f"distributed-{distributed.__version__}"


#: Deliveries after which a run is taken to repeat for ever (a LivelockError): #8576's runs
#: take about 30, #8215's about 40; a gather retried for ever reaches it in ~0.2 s.
MAX_DELIVERIES = 1_000


#: Runs between two collections (the collector is off during a search, as on the model).
_COLLECT_EVERY = 50


class _Finished:
    """What a Run keeps of its cluster: closed already, so disposing is nothing."""

    def dispose(self) -> None:
        pass


# -- verdicts on dask's own state ---------------------------------------------------------------


#: A client's messages that make the scheduler want a key again (dask's op names).
_WANTS_AGAIN = ("update-graph", "client-desires-keys")


class _Judge:
    """``dangling_future`` judged on dask's objects after each delivery, as the model's check
    judges it on the trace (see the module doc and ``checks.py``): a finished future whose key
    the scheduler forgets, on that delivery; whose key the scheduler registers in memory on
    workers that no longer hold it, or that finishes while its key stands so, on that
    delivery; and one whose data a worker deletes under a registration, only if the run ends
    (drained: :meth:`settle`) without the client being told — a late ``release-worker-data``
    or ``lost-data`` then ends the future cancelled, which is dask saying the data is lost,
    not a reference lost unseen."""

    def __init__(self, sim: SimCluster):
        self.sim = sim
        self.found: list[tuple[str, str, str, int, str]] = []  # name, key, client, seq, why
        self._open: set[tuple[str, str]] = set()
        #: key -> the workers the scheduler had it in memory on, at the last delivery.
        self._memory: dict[str, frozenset[str]] = {}
        #: (client, key) pairs whose future was finished at the last delivery.
        self._finished: set[tuple[str, str]] = set()
        #: (client, key) -> (seq, why, state): unbacked since seq, not reported yet.
        self._unbacked: dict[tuple[str, str], tuple[int, str, list[str]]] = {}
        self.states: list[list[str]] = []  # dask's state at each violation (see state_of)
        self._errors = 0

    def __call__(self) -> None:
        sim = self.sim
        scheduler = sim.scheduler
        if scheduler is None:
            return
        while len(sim.errors) > self._errors:
            seq, text = sim.errors[self._errors]
            self._errors += 1
            self.found.append((DASK_RAISED, "", "", seq, f"distributed raised {text} (on "
                               "its event loop, uncaught: the connection it served is dropped)"))
            self.states.append([])
        #: The holders the scheduler names for each held, finished key in memory (only those:
        #: this runs after every delivery, and a run's other tasks are not judged).
        memory: dict[str, frozenset[str]] = {}
        finished: set[tuple[str, str]] = set()
        for i, client in enumerate(sim.clients):
            name = f"client:{i + 1}"
            for key, count in list(client.refcount.items()):
                st = client.futures.get(key)
                if count <= 0 or st is None or st.status != "finished":
                    continue
                pair = (name, key)
                finished.add(pair)
                if key not in scheduler.tasks:
                    if self._wanted_again(name, key) or (
                            pair not in self._finished and self._cancel_coming(name, key)):
                        continue  # the key comes back, or the future ends cancelled
                    if pair not in self._open:
                        self._open.add(pair)
                        self._report(name, key, (
                            f"{name} holds a finished future of {key} (refcount {count}) and "
                            f"the scheduler has forgotten the key{form_of(sim.trace, key)}"))
                    continue
                self._open.discard(pair)
                ts = scheduler.tasks[key]
                if ts.state == "memory" and key not in memory:
                    memory[key] = frozenset(ws.address for ws in ts.who_has or ())
                if key not in memory or not self._unbacked_now(key, memory[key]):
                    self._unbacked.pop(pair, None)
                    continue
                why = (f"{name} holds a finished future of {key} (refcount {count}); the "
                       "scheduler has it in memory on a worker that no longer holds the data")
                registered = self._memory.get(key) != memory[key]
                if registered or pair not in self._finished:
                    if self._unbacked.pop(pair, None) is None or registered:
                        self._report(name, key, why)
                else:
                    self._unbacked.setdefault(pair, (len(sim.trace), why, state_of(sim, key)))
        for pair in [p for p in self._unbacked if p not in finished]:
            del self._unbacked[pair]
        self._memory, self._finished = memory, finished

    def _wanted_again(self, name: str, key: str) -> bool:
        """``name``'s release forgot ``key``, and its own graph or desire for it, sent after
        that release, is still on its way to the scheduler: the task is made again when it
        lands.  A future finished by news of the key's previous life is late news then, not a
        lost reference — the model's ``dangling_future`` waits for it the same way (a cancel
        that forgot the key is no such release: there the future is lost)."""
        trace, delivered = self.sim.trace, self._delivered()
        release = next((e for e in reversed(trace) if e[0] == "delivered" and e[2] == name
                        and e[3] == "scheduler" and key in e[6]
                        and ("cancel-keys" in e[4] or "client-releases-keys" in e[4])), None)
        if release is None or "client-releases-keys" not in release[4]:
            return False
        return any(e[0] == "sent" and e[1] > release[1] and e[1] not in delivered
                   and e[2] == name and e[3] == "scheduler" and key in e[6]
                   and any(wants in e[4] for wants in _WANTS_AGAIN) for e in trace)

    def _cancel_coming(self, name: str, key: str) -> bool:
        """``name`` cancelled ``key`` and the ``cancelled-keys`` answering it is on its way: a
        future that has just finished ends cancelled, not dangling (the model's check waits
        for that report the same way — for a cancel's, not for lost data's; a finished future
        whose key is then forgotten is judged at once, as there)."""
        trace, delivered = self.sim.trace, self._delivered()
        return any(e[0] == "sent" and e[1] in delivered and e[2] == name and key in e[6]
                   and "cancel-keys" in e[4] for e in trace) and any(
            e[0] == "sent" and e[1] not in delivered and e[3] == name and key in e[6]
            and "cancelled-keys" in e[4] for e in trace)

    def _delivered(self) -> set[int]:
        """The messages delivered so far (both rules above ask which are still on their way)."""
        return {e[1] for e in self.sim.trace if e[0] == "delivered"}

    def _report(self, name: str, key: str, why: str) -> None:
        self.found.append((DANGLING_FUTURE, key, name, len(self.sim.trace), why))
        self.states.append(state_of(self.sim, key))

    def _unbacked_now(self, key: str, holders: frozenset[str]) -> bool:
        """In memory on workers none of which has the data."""
        return bool(holders) and not any(w.address in holders and key in w.data
                                         for w in self.sim.workers)

    def settle(self) -> None:
        """The run is drained: what is still in memory on no worker that has it is lost."""
        for (name, key), (seq, why, state) in self._unbacked.items():
            self.found.append((DANGLING_FUTURE, key, name, seq, why))
            self.states.append(state)
        self._unbacked.clear()
        # In the order they became true, as the run's trace will show them.
        order = sorted(range(len(self.found)), key=lambda i: self.found[i][3])
        self.found = [self.found[i] for i in order]
        self.states = [self.states[i] for i in order]


def form_of(trace: Sequence[tuple], key: str) -> str:
    """Which form of dask#8576 a loss of ``key`` is, read off the messages so far.

    Form A: the late ``client-releases-keys`` reached the scheduler after the scatter that
    re-made the key had registered it (the worker's ``update_data`` reply delivered: the
    scheduler's ``update_data`` runs then).  Form B: it arrived inside that scatter, after
    the request and before the registration.
    """
    release = last_scatter = registered = None
    for i, event in enumerate(trace):
        if event[0] != "delivered":
            continue
        op, keys = event[4], event[6]
        if "client-releases-keys" in op and key in keys:
            release = i
        elif op == "scatter" and key in keys:
            last_scatter, registered = i, None
        elif (op == "update_data-reply" and key in keys and last_scatter is not None
              and registered is None):
            registered = i
    if release is None or last_scatter is None:
        return ""
    if registered is not None and release > registered:
        return " (#8576 form A: the release arrived after the scatter that re-made the key " \
               "had registered it)"
    if release > last_scatter:
        return " (#8576 form B: the release arrived inside the scatter that re-made the key, " \
               "before it registered)"
    return ""


def state_of(sim: SimCluster, key: str) -> list[str]:
    """What each side of the real cluster holds about ``key`` now, a line per side."""
    lines = []
    for i, client in enumerate(sim.clients):
        st = client.futures.get(key)
        lines.append(f"client:{i + 1}: refcount {client.refcount.get(key, 0)}, future "
                     f"{st.status if st is not None else 'none'}")
    ts = sim.scheduler.tasks.get(key) if sim.scheduler is not None else None
    if ts is None:
        lines.append("scheduler: forgotten")
    else:
        wants = ", ".join(sorted(cs.client_key for cs in ts.who_wants or ()))
        has = ", ".join(sorted(sim.actor_name(ws.address) for ws in ts.who_has or ()))
        lines.append(f"scheduler: {ts.state}, who_wants {{{wants}}}, who_has {{{has}}}")
    for w in sim.workers:
        lines.append(f"{sim.actor_name(w.address)}: {'holds the data' if key in w.data else 'no data'}")
    return lines


class DaskFailure(Failure):
    """A failure found on real dask: ``explain()`` shows dask's own state, not the beliefs
    a trace of the model's events would give."""

    def explain(self) -> str:
        lines = [f"schedule {self.schedule}: {', '.join(self.names)}"]
        for d in self.run.decisions:  # as explore._overtakes, in the model's message names
            if d.pick:
                m = d.heads[d.pick]
                older = ", ".join(f"#{h.msg_id} {model_op(h.op)} on {h.channel}"
                                  for h in d.heads[:d.pick])
                lines.append(f"  - #{m.msg_id} {model_op(m.op)} on {m.channel} was delivered "
                             f"before {older}, sent earlier")
        states = getattr(self.run, "states", [])
        for i, v in enumerate(self.run.violations):
            lines.append(f"  {v.name} on {v.key or '-'} (event {v.first_seq}): {v.explanation}")
            if v.name not in (SCENARIO_RAISED, OUTCOME_DIFFERS) and i < len(states):
                lines.append("  what dask held then:")
                lines += [f"    {line}" for line in states[i]]
        return "\n".join(lines)


def _trace_of(sim: SimCluster, judge: _Judge | None) -> Trace:
    """The run's messages as the project's events (sent / received, in the order they happened)."""
    trace = Trace(capacity=1_000_000, clock=lambda: 0)
    violations = {}
    if judge is not None:
        for name, key, client, seq, why in judge.found:
            violations.setdefault(seq, []).append((name, key, client, why))
    seqs: dict[int, int] = {}
    for i, event in enumerate(sim.trace):
        for name, key, client, why in violations.get(i, ()):
            seqs[(name, key, client)] = trace.next_seq
            trace.add(0, "checks", "checks", "violation", key, extra=(name, seqs[(name, key,
                                                                                   client)],
                                                                      client, why))
        what = event[0]
        if what == "time":
            continue
        _, msg_id, sender, receiver, op, channel, keys, t = event
        kind, actor = (("msg.sent", sender) if what == "sent" else ("msg.received", receiver))
        trace.add(int(t * 1e9), actor, "loop", kind, keys[0] if len(keys) == 1 else None,
                  msg_id, channel, model_op(op), (keys,))
    for name, key, client, why in violations.get(len(sim.trace), ()):
        trace.add(0, "checks", "checks", "violation", key, extra=(name, trace.next_seq, client,
                                                                    why))
    return trace


# -- one run -----------------------------------------------------------------------------------


def _run(scenario: Callable[..., Any], workers: int, fp: str, prefix: Sequence[int],
         strict: bool, entry_sleep: frozenset = frozenset(), explored: frozenset = frozenset(),
         rng: random.Random | None = None, baseline: Any = None, judge: bool = True,
         keep_open: bool = False) -> Run:
    """One run on a fresh real cluster: follow ``prefix``, then the oldest awake message."""
    decisions: list = []
    policy = choosing_policy(decisions, prefix, strict, entry_sleep, explored, rng)
    choose, sleeping = policy.choose, policy.sleeping

    def chooser(heads: Sequence[SimMessage]) -> SimMessage:
        if len(heads) == 1 and not sleeping:
            return heads[0]
        return choose(list(heads))

    n_clients = scenario_arity(scenario)
    sim = SimCluster(chooser, workers=workers, clients=n_clients,
                     threads_per_worker=THREADS_PER_WORKER, max_deliveries=MAX_DELIVERIES)
    verdict = _Judge(sim)
    sim.after_delivery = verdict
    pruned = False
    raised = returned = None
    try:
        try:
            returned = value_text(sim.play(scenario))
        except Exception as exc:  # noqa: BLE001 - the scenario's own error: judged below
            raised = raised_from(exc, len(sim.trace), len(decisions))
        sim.drain()
        verdict.settle()
    except Stop:
        pruned = True
    except Abort as abort:
        sim.close(fast=True)
        raise abort.error from None
    except LivelockError as exc:  # the drain went on for ever: that is the run's outcome
        raised, returned = raised_from(exc, len(sim.trace), len(decisions)), None
    except Exception as exc:  # noqa: BLE001 - raised while draining
        if raised is None:
            raised, returned = raised_from(exc, len(sim.trace), len(decisions)), None
    i = next((j for j in range(len(decisions), len(prefix)) if prefix[j]), None) if strict else None
    if i is not None:
        sim.close(fast=True)
        raise ScheduleError(f"the schedule does not fit this scenario: it deviates at decision "
                            f"{i} ({i}>{prefix[i]}), but the run makes only {len(decisions)} "
                            "decisions")
    trace = _trace_of(sim, None if pruned else verdict)
    violations = [] if pruned else [Violation(name, key, client, seq, seq, why)
                                    for name, key, client, seq, why in verdict.found]
    # the violation's first_seq in the project's trace: where it was recorded
    if violations:
        marks = [e.seq for e in trace.events(kind="violation")]
        violations = [Violation(v.name, v.key, v.client, m, m, v.explanation)
                      for v, m in zip(violations, marks)]
    run = Run((protocol_label(), fp, workers, n_clients), [d.pick for d in decisions], decisions,
              trace, violations, _Finished(), pruned, raised, returned,
              "client:1" if n_clients == 1 else None)
    run.sim_trace = sim.trace  # the simulator's own events (for compare)
    run.states = verdict.states
    if keep_open:
        run.sim = sim
    else:
        sim.close(fast=True)
    if judge:
        judge_outcome(run, baseline)
    return run


# -- the search (the model explorer's, over real runs) ------------------------------------------


def _search(scenario: Callable[..., Any], workers: int, fp: str, bound: int, reduce: bool,
            first: bool, tally: Tally) -> tuple[bool, int]:
    pruned = 0
    for b in range(bound + 1):
        exhaustive, cut, p = _pass(scenario, workers, fp, b, reduce, first, tally)
        pruned += p
        if not exhaustive or (first and tally.found()):
            return False, pruned
        if not cut:
            break
    return True, pruned


def _pass(scenario: Callable[..., Any], workers: int, fp: str, bound: int, reduce: bool,
          first: bool, tally: Tally) -> tuple[bool, bool, int]:
    prefix: list[int] = []
    entry_sleep: frozenset = frozenset()
    tried: frozenset = frozenset()
    pruned = 0
    cut = [False]
    while tally.runs < tally.max_schedules:
        in_order = not tally.runs
        run = _run(scenario, workers, fp, prefix, strict=False, entry_sleep=entry_sleep,
                   explored=tried, baseline=tally.outcome, judge=not in_order)
        if in_order:
            if run.raised is not None and not run.raised.decisions:
                raise ScenarioError(run.schedule, run.raised)
            tally.baseline = run
        if in_order and run.raised is not None:
            tally.runs += 1
        elif run.delays < bound:
            pass  # an earlier pass counted it
        else:
            pruned += run.pruned
            tally.count(run)
        if tally.runs % _COLLECT_EVERY == 0:
            gc.collect(0)  # a closed cluster is a few MB of cycles: never many waiting
        if first and tally.found():
            return False, cut[0], pruned
        if run.raised is not None and run.raised.name == LivelockError.__name__:
            # Every order inside the loop loops too: go on from the prefix's own siblings.
            del run.decisions[len(prefix):]
        nxt = backtrack(run, bound, reduce, cut)
        if nxt is None:
            return True, cut[0], pruned
        prefix, entry_sleep, tried = nxt
    return False, cut[0], pruned



def _beside_a_running_loop(search: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``search`` in a thread of its own when this thread already runs an event loop.

    A notebook's kernel runs its asyncio loop in the thread that runs the cell, and the
    simulated cluster drives a loop of its own to completion, which asyncio refuses inside a
    running one ("Cannot run the event loop while another loop is running").  The search
    owns everything it touches, so it runs whole in another thread while this one waits.
    """

    @functools.wraps(search)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return search(*args, **kwargs)
        with concurrent.futures.ThreadPoolExecutor(1, "jupyter-refs-explore-dask") as pool:
            return pool.submit(search, *args, **kwargs).result()

    return wrapper


class _Visiting(Tally):
    """A tally that shows each run to ``visit`` before counting it (the in-order one when it
    becomes the baseline, as it may not be counted)."""

    def __init__(self, max_schedules: int, progress: Callable[[int, int, int], None] | None,
                 visit: Callable[[Run], None]):
        super().__init__(max_schedules, progress)
        self.visit = visit
        self._baseline: Run | None = None

    def count(self, run: Run) -> None:
        self._show_baseline()
        if run is not self._baseline:
            self.visit(run)
        super().count(run)

    def _show_baseline(self) -> None:
        if self.baseline is not None and self._baseline is None:
            self._baseline = self.baseline
            self.visit(self.baseline)

    def settle(self) -> None:
        self._show_baseline()
        super().settle()


@_beside_a_running_loop
def explore_dask(scenario: Callable[..., Any], max_schedules: int = 1_000, bound: int = 2,
                 seed: int = 0, workers: int = 1, reduce: bool = True, sample: bool = True,
                 first: bool = False,
                 progress: Callable[[int, int, int], None] | None = None,
                 visit: Callable[[Run], None] | None = None) -> ExploreResult:
    """Run ``scenario`` on real distributed under many delivery orders; group the failures.

    The arguments mean what they mean to :func:`jupyter_refs.explore.explore` (random runs
    past the bound run in this process only).  Each run starts a fresh cluster (about 15 ms).
    ``visit`` is called with every run the search makes, the in-order one first (trace
    validation compares each with the model: ``jupyter_refs.dask.validate``).
    """
    arguments.scenario(scenario)
    arguments.count(max_schedules, "max_schedules")
    arguments.count(bound, "bound", minimum=0)
    arguments.expect(seed, int, "seed", "an int")
    arguments.count(workers, "workers")
    for name, value in (("reduce", reduce), ("sample", sample), ("first", first)):
        arguments.flag(value, name)
    fp = fingerprint(scenario)
    start = time.perf_counter()
    with gcscope.paused():
        tally = Tally(max_schedules, progress) if visit is None else _Visiting(
            max_schedules, progress, visit)
        exhaustive, pruned = _search(scenario, workers, fp, bound, reduce, first, tally)
        found = first and tally.found()
        left = max_schedules - tally.runs if exhaustive and sample and not found else 0
        rng = random.Random(seed)
        sampled = 0
        baseline = tally.outcome
        while left > 0 and not (first and tally.found()):
            tally.count(_run(scenario, workers, fp, [], strict=False, rng=rng,
                             baseline=baseline))
            if tally.runs % _COLLECT_EVERY == 0:
                gc.collect(0)
            sampled += 1
            left -= 1
        tally.settle()
        failures = sorted(tally.groups.values(), key=lambda f: run_size(f.run))
        for f in failures:
            f.__class__ = DaskFailure
        return ExploreResult(getattr(scenario, "__name__", "scenario"), protocol_label(), bound,
                             tally.runs, pruned, exhaustive, sampled,
                             time.perf_counter() - start, failures)


def explore_on(on: Any, scenario: Callable[..., Any], protocol: Any = "dask",
               max_schedules: int = 1_000, bound: int = 2, seed: int = 0,
               workers: int | None = None, reduce: bool = True, sample: bool = True,
               first: bool = False, progress: Callable[[int, int, int], None] | None = None,
               **model_only: Any) -> ExploreResult:
    """``jupyter_refs.explore(scenario, on=client_or_cluster)``: :func:`explore_dask` with as
    many workers as ``on``'s cluster has (a ``distributed.Client`` or ``LocalCluster``).

    ``on``'s own cluster runs nothing: a cluster whose threads and sockets run free cannot be
    steered order by order, so each run is a fresh simulated one of the installed distributed.
    The arguments are :func:`jupyter_refs.explore.explore`'s, in its order; ``workers`` is
    the cluster's, and the model's own options (``protocol`` other than ``dask``, ``processes``, ``client``,
    ``invariants``, the sampler…) are refused: the protocol is distributed itself.
    """
    import distributed

    if isinstance(on, distributed.Client):
        n_workers = len(arguments.dask_client(on, "on").scheduler_info()["workers"])
    elif isinstance(on, distributed.SpecCluster):
        n_workers = len(on.workers)
    else:
        raise ArgumentTypeError(f"on must be a distributed.Client or LocalCluster (the search "
                                f"runs on the installed distributed), not {type(on).__name__}")
    if workers is not None:
        raise ArgumentValueError("workers= comes from on's cluster: the search runs with as "
                                 f"many workers as it has ({n_workers})")
    given = [name for name, value in model_only.items() if value not in (None, (), [])]
    if protocol != "dask" or given:
        raise ArgumentValueError(f"{(given or ['protocol'])[0]}= is the model's: with on=, the "
                                 f"search explores distributed {distributed.__version__} itself")
    return explore_dask(scenario, max_schedules=max_schedules, bound=bound, seed=seed,
                        workers=max(n_workers, 1), reduce=reduce, sample=sample, first=first,
                        progress=progress)


@_beside_a_running_loop
def replay_dask(scenario: Callable[..., Any], schedule: str, keep_open: bool = False) -> Run:
    """Rerun on real distributed the run ``schedule`` names (``run.sim_trace``: its events).

    With ``keep_open`` the cluster stays up (``run.sim``; close it with ``run.sim.close()``).
    """
    arguments.scenario(scenario)
    arguments.text(schedule, "schedule")
    parsed = parse_schedule(schedule)
    if parsed.protocol != protocol_label():
        raise ScheduleError(f"schedule {schedule} was recorded on {parsed.protocol}, "
                            f"this is {protocol_label()}")
    if parsed.fingerprint != fingerprint(scenario):
        raise ScheduleError(f"schedule {schedule} was recorded for another scenario "
                            f"(fingerprint {parsed.fingerprint}, this one is "
                            f"{fingerprint(scenario)})")
    if parsed.clients != scenario_arity(scenario):
        raise ScheduleError(f"schedule {schedule} was recorded with {parsed.clients} client(s); "
                            f"this scenario takes {scenario_arity(scenario)}")
    devs = parsed.deviations
    prefix = [devs.get(i, 0) for i in range(max(devs) + 1 if devs else 0)]
    return _run(scenario, parsed.workers, parsed.fingerprint, prefix, strict=True,
                keep_open=keep_open)


@_beside_a_running_loop
def check_determinism(scenario: Callable[..., Any], schedule: str) -> Run:
    """Replay ``schedule`` twice; raise :class:`~jupyter_refs.dask.sim.DivergenceError` naming
    the first event where the two runs part.  Returns the first run."""
    a = replay_dask(scenario, schedule)
    b = replay_dask(scenario, schedule)
    sim_mod.compare(a.sim_trace, b.sim_trace)
    return a


__all__ = ["MESSAGE_NAMES", "SimError", "check_determinism", "explore_dask", "explore_on", "model_op",
           "protocol_label", "replay_dask"]
