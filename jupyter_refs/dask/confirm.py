"""``confirm(scenario, schedule, client)``: does real dask fail the way the model did?

The explorer finds a failing schedule on the kernel-side cluster.  This replays it there,
reads which messages it delayed and which overtook them, and runs the same scenario with a
real dask ``Client`` (an in-process cluster) while the holds of :mod:`.holds` enforce the
same overtakes: a message the schedule delays is held at its gate — and its channel behind
it — until every message that overtook it has been delivered.  The model runs the user's
code until it waits, and real dask's user thread may lag behind its event loop: so a message
to the client also waits until the client sent what the model's had sent before it came
(:func:`sent_first`).  Nothing else is steered: real dask delivers the rest in its own order
(``orders="every"`` makes each default choice of the model too).  Real dask then *confirms* the failure when
its own trace shows the same check failing on the same key: the model's first violation a
dask trace can judge.  One judged only once the channels drain cannot be (a dask trace
records no drain), and a failure with nothing else is refused rather than reported as
not confirmed.

Messages are matched by what they are — sender, receiver, operation, keys — and by how
many such messages came before (dask's messages carry no ids); the model's ``worker:0`` is
the real cluster's first worker by address.  A task run (``execute``) has no gate and is
not steered.  When an overtaking message never comes (the real code does not send it, or
it waits for the held one — as under ``ordered_scatter``, where the scatter waits behind
the release), the order cannot be enforced: nothing moves for ``stall`` seconds, everything
held is let go, and the result says which overtakes could not be made.
"""

from __future__ import annotations

import gc
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dask.utils import key_split

from .. import arguments
from ..checks import Violation
from ..errors import ArgumentValueError, JupyterRefsError
from ..explore import (
    OUTCOME_DIFFERS,
    SCENARIO_RAISED,
    Failure,
    Run,
    Scenario,
    judge_as_explored,
    replay,
    value_text,
)
from ..promises import AT_DRAIN
from ..protocol.payloads import CLIENT, kind_of
from ..protocol.variants import VARIANTS, ProtocolVariant
from ..trace import Trace
from .tracer import DaskTracer, attach

Sig = tuple[tuple[str, str, str, tuple[str, ...]], int]  # (sender, receiver, op, keys), occurrence


class ConfirmError(JupyterRefsError, ValueError):
    """The schedule cannot be confirmed as asked (it does not fail, or needs more clients)."""


@dataclass
class Confirmation:
    """What real dask did under a model schedule's overtakes."""

    schedule: str
    expected: Violation  # the model's first violation real dask can judge (not one at a drain)
    confirmed: bool
    enforced: bool  # every overtake of the schedule was made on real dask
    overtakes: list[str]  # each enforced overtake, in words
    unmet: list[str]  # overtakes that could not be made, and why
    violations: list[Violation]  # real dask's
    trace: Trace  # real dask's
    version: str
    tracer: DaskTracer | None = field(default=None, repr=False)
    attempts: int = 1  # runs made until this verdict
    #: What the scenario did on real dask ("raised …" or "returned …"): the verdict when the
    #: model's failure is the scenario's own outcome (``scenario_raised``, ``outcome_differs``).
    outcome: str | None = None

    def __str__(self) -> str:
        # The scenario's own outcome is about no key: what it did on real dask says it.
        what = (f"{self.expected.name} on {self.expected.key}" if self.expected.key
                else f"{self.expected.name}: the scenario {self.outcome}")
        runs = f", run {self.attempts}" if self.attempts > 1 else ""
        if self.confirmed:
            return (f"confirmed on distributed {self.version}: {what} ({len(self.trace)} events "
                    f"traced{runs})")
        if not self.enforced:
            more = f"; and {len(self.unmet) - 2} more" if len(self.unmet) > 2 else ""
            return (f"not confirmed on distributed {self.version}: the order could not be made "
                    f"({'; '.join(self.unmet[:2])}{more})")
        found = ", ".join(v.brief for v in self.violations) or "no violation"
        if self.outcome and (self.expected.name in (SCENARIO_RAISED, OUTCOME_DIFFERS)
                             or self.outcome.startswith("raised")):
            found += f", and the scenario {self.outcome}"
        return f"not confirmed on distributed {self.version}: expected {what}, real dask showed {found}"

    def __bool__(self) -> bool:
        return self.confirmed


class _Overtakes:
    """The holds' controller: a message waits until everything that overtook it is delivered,
    and, on its way to a client, until that client sent what the model's client sent first.

    Real dask's messages are translated to the model's by key first (:class:`_Keys`): a
    task's key holds its arguments' futures' ids, which no two runs share.
    """

    def __init__(self, waits: dict[Sig, set[Sig]], sends: dict[Sig, set[Sig]], keys: _Keys):
        self.waits = waits
        self.sends = sends
        self.keys = keys
        self.done: set[Sig] = set()
        self.out: set[Sig] = set()  # sent

    def must_wait(self, sig: tuple, occurrence: int) -> bool:
        at = (self.keys.sig(sig), occurrence)
        need = self.waits.get(at)
        if need and not need <= self.done:
            return True
        first = self.sends.get(at)
        return bool(first) and not first <= self.out

    def delivered(self, sig: tuple, occurrence: int) -> None:
        self.done.add((self.keys.sig(sig), occurrence))

    def sent(self, sig: tuple, occurrence: int) -> None:
        self.out.add((self.keys.sig(sig), occurrence))

    def unmet(self) -> list[str]:
        """Each wait not met, in words."""
        out = [f"{_say(d)} was to wait for {', '.join(_say(n) for n in sorted(need - self.done))}"
               for d, need in self.waits.items() if d not in self.done and not need <= self.done]
        # A message real dask never sent did not wait: only one that came and waits counts.
        out += [f"{_say(d)} was to wait until its receiver sent "
                f"{', '.join(_say(n) for n in sorted(first - self.out))}"
                for d, first in self.sends.items()
                if d in self.out and d not in self.done and not first <= self.out]
        return out


class _Keys:
    """Real dask's keys → the model's, for the keys no two runs share.

    ``scatter(123)`` is keyed by its value, the same in every run; ``submit(inc, x)`` by
    ``tokenize(inc, x)``, and a future's token holds its id (process uuid, counter), in
    dask as in the model.  ``fresh`` are the model keys that came out differently when the
    schedule was replayed twice.  A real key the model does not have takes the first fresh
    key of its prefix (``key_split``) not yet taken, in the order the model first sent
    them; the real run meets them in its own order, so two fresh keys of one prefix pair
    up by first arrival, as messages pair up by how many such came before.
    """

    def __init__(self, model: list[str], fresh: set[str]):
        self.model = set(model)
        self.free: dict[str, list[str]] = {}
        for key in model:
            if key in fresh:
                self.free.setdefault(key_split(key), []).append(key)
        self.real: dict[str, str] = {}  # real key → model key, once paired
        self._sigs: dict[tuple, tuple] = {}

    def key(self, real: str | None) -> str | None:
        if real is None or real in self.model:
            return real
        model = self.real.get(real)
        if model is None:
            free = self.free.get(key_split(real))
            model = self.real[real] = free.pop(0) if free else real
        return model

    def sig(self, sig: tuple) -> tuple:
        known = self._sigs.get(sig)
        if known is None:
            sender, receiver, op, keys = sig
            known = self._sigs[sig] = (sender, receiver, op, tuple(self.key(k) for k in keys))
        return known


def _occurrences(run: Run, names: dict[str, str]) -> dict[int, tuple[Sig, str]]:
    """Each message of ``run`` (by id) → its signature, renamed by ``names``, and its receiver
    as the model names it; a task run (``execute``) and a message never received are left out."""
    receivers = {e.msg_id: e.actor for e in run.trace.events(kind="msg.received")}
    occurrence: dict[int, tuple[Sig, str]] = {}
    counts: dict[tuple, int] = {}
    for e in run.trace.events(kind="msg.sent"):
        receiver = receivers.get(e.msg_id)
        if receiver is None or e.op == "execute":
            continue
        sig = (names.get(e.actor, e.actor), names.get(receiver, receiver), e.op,
               tuple(e.fields["keys"]))
        counts[sig] = counts.get(sig, 0) + 1
        occurrence[e.msg_id] = ((sig, counts[sig]), receiver)
    return occurrence


def overtakes(run: Run, names: dict[str, str], every: bool = False,
              held: Callable[[str, str], bool] | None = None) -> dict[Sig, set[Sig]]:
    """Each delayed message of ``run`` → the messages that overtook it (renamed by ``names``).

    With ``every``, each choice the run made counts, the default ones too: at every
    decision, the messages not picked wait for the one picked — among those ``held(receiver,
    op)`` says a gate holds: the order of the others cannot be made, and a wait for one
    would never end.
    """
    occurrence = _occurrences(run, names)
    if every and held is not None:
        occurrence = {i: (sig, receiver) for i, (sig, receiver) in occurrence.items()
                      if held(receiver, sig[0][2])}
    waits: dict[Sig, set[Sig]] = {}
    for d in run.decisions:
        if not d.pick and not every:
            continue
        chosen = occurrence.get(d.heads[d.pick].msg_id)
        if chosen is None:
            continue
        for late in (d.heads[:d.pick] + d.heads[d.pick + 1:] if every else d.heads[:d.pick]):
            if late.msg_id in occurrence:
                waits.setdefault(occurrence[late.msg_id][0], set()).add(chosen[0])
    return waits


def sent_first(run: Run, names: dict[str, str],
               held: Callable[[str, str], bool]) -> dict[Sig, set[Sig]]:
    """Each message to a client in ``run`` → what that client sent before it came, on each
    channel the last such message (a channel keeps its order): the model runs the user's code
    until it waits, real dask's user thread may lag behind its event loop.  Only messages a
    gate holds (``held(receiver, op)``) can wait, or be seen sent (they reach a gate)."""
    occurrence = _occurrences(run, names)
    last: dict[str, dict[tuple[str, str], Sig]] = {}  # client → (receiver, channel) → last sent
    sends: dict[Sig, set[Sig]] = {}
    for e in run.trace.events():
        if kind_of(e.actor) != CLIENT or e.msg_id not in occurrence:
            continue
        sig, receiver = occurrence[e.msg_id]
        (_, _, op, _), _ = sig
        if e.kind == "msg.sent" and held(receiver, op):
            last.setdefault(e.actor, {})[(receiver, e.channel or "")] = sig
        elif e.kind == "msg.received" and held(e.actor, op) and last.get(e.actor):
            sends[sig] = set(last[e.actor].values())
    return sends


def _forgotten(client: Any, keys: set[str], timeout: float) -> None:
    """Wait until dask's scheduler knows none of ``keys`` (or ``timeout``): a run starts, as
    the model's did, on a cluster that has not seen them.  A key left over from the run
    before (``scatter(123)`` gives the same key each time) whose release is still on its
    way would make this run another race than the one confirmed."""

    def known(dask_scheduler: Any, keys: tuple = tuple(keys)) -> list[str]:
        return [k for k in keys if k in dask_scheduler.tasks]

    deadline = time.monotonic() + timeout
    while client.run_on_scheduler(known) and time.monotonic() < deadline:
        time.sleep(0.02)


def _say(sig: Sig) -> str:
    (sender, receiver, op, keys), n = sig
    return f"{op}[{','.join(keys)}] {sender}->{receiver} (#{n} such)"


def confirm(scenario: Scenario, schedule: str | Failure, client: Any, *, ordered_scatter: bool = False,
            orders: str = "auto", attempts: int = 3, stall: float = 3.0,
            timeout: float = 60.0, protocol: ProtocolVariant | None = None) -> Confirmation:
    """Run ``scenario`` on real dask with the overtakes of ``schedule`` enforced; compare.

    ``client`` is a ``distributed.Client`` of an in-process cluster (a tracer is attached
    for each run and detached after; ``ordered_scatter`` is passed to it), or an attached
    :class:`DaskTracer`.  The scenario takes one client.  ``orders``: ``"delays"``
    enforces only the schedule's overtakes; ``"every"`` also the order of each choice the
    model made by default (a release that went *before* a scatter, say); ``"auto"`` tries
    the first, then the second if real dask did not fail the same way.  What is not
    steered follows real dask's own timing, so up to ``attempts`` runs are made; the result
    says how many it took.  A schedule explored under a :class:`ProtocolVariant` of one's
    own replays under it: a :class:`Failure` brings its own, a schedule string needs
    ``protocol=``, as :func:`replay` does.
    """
    arguments.scenario(scenario)
    if not isinstance(schedule, Failure):
        arguments.text(schedule, "schedule")
    if not isinstance(client, DaskTracer):
        arguments.dask_client(client)
    arguments.flag(ordered_scatter, "ordered_scatter")
    if orders not in ("auto", "delays", "every"):
        raise ArgumentValueError(f"orders must be 'auto', 'delays' or 'every', not {orders!r}")
    arguments.count(attempts, "attempts")
    arguments.number(stall, "stall")
    arguments.number(timeout, "timeout")
    if isinstance(client, DaskTracer) and ordered_scatter and not client.ordered_scatter:
        raise ConfirmError("this tracer was attached without ordered scatter: attach one with "
                           "attach(client, ordered_scatter=True) (%cluster --attach NAME "
                           "--ordered-scatter), or pass the dask Client itself")
    failure = schedule if isinstance(schedule, Failure) else None
    schedule = failure.schedule if failure is not None else schedule
    variant = failure.run.cluster.variant if failure is not None else None
    if protocol is None and variant is not None and variant.name not in VARIANTS:
        protocol = variant  # a registered one replays by the name its schedule carries
    run = replay(scenario, schedule, protocol=protocol)
    judge_as_explored(scenario, run, protocol)
    if not run.violations:
        raise ConfirmError(f"schedule {schedule} does not fail on the kernel-side cluster: "
                           "nothing to confirm")
    expected = _expected(run)
    again = _keys(replay(scenario, schedule, protocol=protocol))
    fresh = {k for k in _keys(run) if k not in again}
    result = None
    # Only the steered messages are ordered: the rest follows real dask's timing, so an
    # unconfirmed run is tried again (``attempts`` in all), and says how many it took.
    plan = ([False] + [True] * (attempts - 1) if orders == "auto"
            else [orders == "every"] * attempts)
    for n, every in enumerate(plan, 1):
        result = _confirm(scenario, run, expected, fresh, client, ordered_scatter, every, stall,
                          timeout)
        result.attempts = n
        if result.confirmed:
            break
    assert result is not None
    if failure is not None:
        failure.confirmed = str(result)
    return result


def _keys(run: Run) -> list[str]:
    """The keys ``run``'s messages name, in the order they were first sent."""
    keys: dict[str, None] = {}
    for e in run.trace.events(kind="msg.sent"):
        keys.update(dict.fromkeys(e.fields["keys"]))
    return list(keys)


def _expected(run: Run) -> Violation:
    """The violation real dask is to show: the run's first that a dask trace can judge.  One
    judged only at a drain cannot be (see ``promises.AT_DRAIN``): dask would be said not to
    fail where the tracer never looked."""
    for violation in run.violations:
        if violation.name not in AT_DRAIN:
            return violation
    names = ", ".join(sorted({v.name for v in run.violations}))
    raise ConfirmError(f"schedule {run.schedule} fails only by {names}, judged once every channel "
                       "has drained; a traced dask cluster records no drain, so real dask can "
                       "neither confirm nor refute it")


def _confirm(scenario: Scenario, run: Run, expected: Violation, fresh: set[str], client: Any,
             ordered_scatter: bool, every: bool, stall: float, timeout: float) -> Confirmation:
    import distributed

    schedule = run.schedule
    own = not isinstance(client, DaskTracer)
    tracer = attach(client, ordered_scatter=ordered_scatter) if own else client
    dask_client = tracer.client
    try:
        holds = tracer.need_holds()
        workers = sorted(holds.workers)
        model_workers = sorted({e.actor for e in run.trace.events() if e.actor.startswith("worker:")})
        if len(model_workers) > len(workers) or holds.elsewhere:
            raise ConfirmError(f"the schedule needs {len(model_workers)} worker(s) in this process; "
                               f"the cluster has {len(workers)} here and {len(holds.elsewhere)} "
                               "elsewhere")
        names = {m: holds.actor_name(w) for m, w in zip(model_workers, workers)}
        names.update({"client:1": tracer.me})
        waits = overtakes(run, names, every, holds.can_hold)
        sends = sent_first(run, names, holds.can_hold)
        keys = _Keys(_keys(run), fresh)
        control = _Overtakes(waits, sends, keys)
        # A future of an earlier run kept alive by a cycle releases its key whenever the
        # collector next finds it — in the middle of this run, where its release looked
        # like the run's own (dask#8215's key was cancelled under a test suite's load of
        # garbage): collected now, its release goes before the run and is waited for.
        gc.collect()
        _forgotten(dask_client, {e.key for e in run.trace.events() if e.key} - fresh, timeout)
        holds.steer(control)
        errors: list[BaseException] = []
        returned: list[Any] = []

        def body() -> None:
            try:
                returned.append(scenario(dask_client))
            except BaseException as exc:  # noqa: BLE001 - reported with the verdict
                # The scenario's futures go as when it returns: its frames, kept by the
                # traceback (a cycle through ``errors``), held them — and their keys in the
                # cluster — until a collection, so the next run met a key still in memory.
                traceback.clear_frames(exc.__traceback__)
                errors.append(exc)

        thread = threading.Thread(target=body, name="jupyter-refs-confirm", daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        unmet: list[str] = []
        while True:
            thread.join(0.05)
            quiet = time.monotonic() - holds.last_activity
            held = holds.held_count()
            if not thread.is_alive() and not held and quiet > 0.3:
                break
            if held and quiet > stall or time.monotonic() > deadline:
                unmet = [f"{wait}, which never came" for wait in control.unmet()]
                unmet = unmet or [f"still busy after {timeout} s"]
                holds.controller = None
                holds.release()
                thread.join(10)
                break
        if not unmet:
            # The run ended with a delayed message never matched: real dask sent it under
            # another name (another sender, another op) or not at all, ungated — the order
            # was not made, whatever real dask then showed.
            unmet = [f"{wait}, but real dask's run never sent it as such"
                     for wait in control.unmet()]
        holds.steer(None)
        # The run's own task keys are new to every later run's wait: it waits for them here.
        _forgotten(dask_client, set(keys.real), stall)
        tracer.sync()
        violations = tracer.violations
    finally:
        if own:
            tracer.detach()
    if expected.name == SCENARIO_RAISED:
        # The scenario's own outcome: real dask raised the same type (dask#8215's in-order run).
        confirmed = bool(errors) and type(errors[0]).__name__ == run.raised.name
    elif expected.name == OUTCOME_DIFFERS:
        confirmed = not errors and bool(returned) and value_text(returned[0]) == run.returned
    else:
        confirmed = any(v.name == expected.name and keys.key(v.key) == expected.key
                        for v in violations)
    outcome = (f"raised {type(errors[0]).__name__}: {errors[0]}" if errors
               else f"returned {value_text(returned[0])}" if returned else None)
    said = [f"{_say(d)} after {', '.join(_say(n) for n in sorted(need))}" for d, need in waits.items()]
    return Confirmation(schedule, expected, confirmed, not unmet, said, unmet, violations,
                        tracer.trace, distributed.__version__, None if own else tracer,
                        outcome=outcome)
