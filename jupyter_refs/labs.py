"""The course's labs: the student writes the code, the explorer grades it.

Two labs and the capstone use it:

* **write the fix** (lesson 07): the student writes a *rule* — a function of an
  :class:`~jupyter_refs.protocol.variants.Arrival` returning True when a late message still
  applies — and the protocol calls it where the scheduler handles ``client-releases-keys``
  (:func:`fix_protocol`; ``ProtocolVariant.rules`` says why that is the hook).
  :func:`grade_fix` explores dask#8576's scenario at bound 2 under it: every order within
  the bound, no random runs, so a pass is the same pass every time — and, with it,
  :func:`cancel_then_release`, where a release reaches a scheduler that has already let the
  client go (``held`` None), as dask 2026.8.0 sends it after ``cancel``;
* **the worker hop** (lesson 07, section 4): a second rule, about *copies* — a ``free-keys``
  reaching a worker, a ``release-worker-data`` reaching the scheduler (:data:`COPY_OPS`) —
  graded with the first by :func:`grade_worker_fix` on ``base="dask"``, where nothing reads
  the copies' numbers but the student's rule; its own check :func:`copy_left_behind`, judged
  when each run is over, catches a rule that keeps copies by never freeing them;
* **write an invariant** (lesson 08): the student writes a check — a function of what each
  side believes about one key (a :class:`~jupyter_refs.checks.KeyRefs`) returning None or
  what is wrong — and :func:`grade_check` runs it beside the course's checks: it must flag
  every order where ``dangling_future`` fires under ``dask``, and stay quiet under ``fixed``;
* **an invariant nobody wrote** (lesson 08, part 4): a check for a property the course has no
  check for — *a future its client never cancelled ends cancelled* — graded by
  :func:`grade_cancel_check` against the runs' traces themselves (which futures were cancelled,
  and whether their client had sent ``cancel-keys`` for them), not against a course check;
  the scenario cancels one future itself, which a check tells apart by
  ``KeyRefs.cancel_requested``;
* **the capstone** (lesson 09): the user's side of dask#8215 — a ``restart(client, old, fn,
  *args)`` that cancels and resubmits under the same key without the cancel's answer
  cancelling the new future — graded by :func:`grade_restart` in every order within bound 2
  and on real dask; dask's side, the same rule as lesson 07's on the client, is
  :func:`grade_fix` with ``race="8215"`` (its going further).

The base protocol of the fixes is today's dask with its worker copies numbered
(:data:`LAB_BASE`, ``incarnations``): a release the student's rule lets through can then no
longer free the data of the key's next life, so what is left to decide is the scheduler's
(or the client's) — whether a message is about the hold it has now.  The lab shows, with
``base="dask"``, that the rule alone does not stop #8576 on dask's workers, and has the student
write the worker hop's rule (:func:`grade_worker_fix`).

Graders print their verdict and return a :class:`Grade` (true when it passed); the
failing schedule and its ``explain()`` are part of the verdict.  Reference solutions live
apart, outside the installed package, in ``tests/labs_solutions.py``: the notebooks never
import them, and a student's ``inspect.getsource`` cannot reach them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .checks import Invariant, invariant_name
from .explore import (
    SCENARIO_RAISED,
    ExploreResult,
    Failure,
    Scenario,
    ScenarioError,
    beliefs,
    explore,
    replay,
    short_schedule,
)
from .protocol import messages as m
from .protocol.variants import (
    COPY_OPS,
    DASK,
    Arrival,
    ProtocolVariant,
    Rule,
    get_variant,
    with_rules,
)
from .zoo import RACES, cancel_then_same_key

__all__ = ["ALSO", "COPY_OPS", "LAB_BASE", "TRIED", "Grade", "LabError", "arrivals", "cancel_then_release",
           "copy_left_behind", "fix_protocol", "grade_cancel_check", "grade_check", "grade_fix",
           "grade_worker_fix", "rescatter_and_use", "the_report", "tried", "uncancelled_cancels",
           "reproduced"]

#: Today's dask with every worker copy numbered (``incarnations``): the base of the labs' fixes.
LAB_BASE = dataclasses.replace(
    DASK, name="dask-numbered-copies", incarnations=True,
    summary="today's dask (distributed 2026.8) with each worker copy of a key numbered: "
            "free-keys deletes the copy it names (this project's incarnations, not dask's)")

#: The operations each race's rule judges by default: the release (8576), the reports (8215).
RACE_OPS = {"8576": (m.CLIENT_RELEASES_KEYS,), "8215": (m.CANCELLED_KEYS,)}
#: Bound and budget of the graders: every order within bound 2 (a few hundred runs).
BOUND, MAX_SCHEDULES = 2, 5_000


def cancel_then_release(client: Any) -> None:
    """A release the scheduler no longer waits for: the client cancels its scatter — the
    scheduler lets the client go and forgets the key — then drops the future, whose
    ``client-releases-keys`` still goes out (dask 2026.8.0's ``Client._release_key`` sends it
    whatever the future's state; checked on a LocalCluster).  A rule meets ``held`` None here."""
    x = client.scatter(123)
    client.cancel([x])
    del x


#: The scenarios a race's rule is graded on besides the race's own (or the one given).
ALSO: dict[str, tuple[Scenario, ...]] = {"8576": (cancel_then_release,)}


class LabError(Exception):
    """The student's function broke a rule of the lab (it raised, or returned a non-bool)."""


@dataclass
class Grade:
    """A grader's verdict: ``passed``, what it ran, and the failure that decided it."""

    passed: bool
    verdict: str
    results: list[ExploreResult] = field(default_factory=list)
    failure: Failure | None = None

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.verdict

    def __repr__(self) -> str:
        # short: a cell ending in a grader's call has printed the verdict already (review 4)
        return f"<Grade {'PASS' if self.passed else 'FAIL'}>"


class _Guarded:
    """The student's rule, called as the protocol calls it; its first mistake is kept, and
    the message then applies as in dask, so the search goes on and the grade can say where."""

    def __init__(self, rule: Rule):
        self.rule = rule
        self.__name__ = getattr(rule, "__name__", "rule")
        self.mistake: str | None = None
        #: The scenario the grader is exploring (set by it): a mistake says where it was made.
        self.scenario: str | None = None

    def __call__(self, arrival: Arrival) -> bool:
        try:
            said = self.rule(arrival)
        except Exception as exc:  # noqa: BLE001 - the student's bug, reported in the grade
            said = exc
        if isinstance(said, bool):
            return said
        if self.mistake is None:
            self.mistake = (f"raised {type(said).__name__}: {said}" if isinstance(said, Exception)
                            else f"returned {said!r}, not True or False")
            self.mistake += f", for {arrival}"
            if self.scenario is not None:
                self.mistake += f", in the scenario {self.scenario}"
        return True


def _shown(schedule: str) -> str:
    """``schedule`` as the graders print it: shortened, and the in-order one said in words
    (``dask@a17369:`` has nothing after its colon: no message was late)."""
    return short_schedule(schedule) + (" (in order)" if schedule.endswith(":") else "")


def _explained(f: Failure, mine: str | None = None) -> str:
    """``f.explain()`` with its first line as the graders print it: the schedule via
    :func:`_shown`, and — with ``mine``, the student's check — each name labelled by whose it is,
    the grader's own notes (:data:`_GRADER_NOTES`: its net, and the scenario's exception, which
    a line below says in words) left out."""
    names = ", ".join(f.names)
    if mine is not None:
        theirs = [n for n in f.names if n != mine and n not in _GRADER_NOTES]
        parts = [f"{', '.join(theirs)} (the course's checks)"] if theirs else []
        parts += [f"{mine} (yours)"] if mine in f.names else []
        names = " | ".join(parts) or "no check fired"
    lines = f.explain().splitlines()
    return "\n".join([f"schedule {_shown(f.schedule)}: {names}", *lines[1:]])


def _dropped_current(f: Failure) -> str | None:
    """When the student's rule dropped the release that ended the hold the scheduler had (gen =
    held: ``release.stale`` in the run's trace) and that key leaked: the failure, said as it was."""
    events = list(f.run.trace)
    leaked = {v.key for v in f.violations if v.name == "leaked_key"}
    dropped = [e for e in events if e.kind == "release.stale" and e.key in leaked
               and e.get("gen") is not None and e.get("gen") == e.get("current_gen")]
    if not dropped:
        return None
    e = dropped[0]
    client, key, gen = e.get("client"), e.key, e.get("gen")
    origin = next((c.get("origin") for c in events if c.kind == "future.created"
                   and c.key == key and c.actor == client), None)
    made = f" (the key of your {origin})" if origin else ""
    head = (f"your rule dropped the release that ended the current hold (gen {gen} = held {gen}): "
            f"{client}'s client-releases-keys for {key}{made}")
    if f.schedule.endswith(":"):
        order = [f"{head}, and nothing was late: schedule {_shown(f.schedule)}."]
    else:
        order = [f"{head}, under schedule {_shown(f.schedule)}:",
                 *(line for line in f.explain().splitlines() if line.startswith("  - "))]
    others = sorted(leaked - {key})
    lines = [*order,
             f"  {client} has let go of that hold and sends no other release for it, so the "
             f"scheduler keeps {key} for {client} for the life of the cluster: leaked_key"
             + (f" (and the same for {', '.join(others)})" if others else "") + "."]
    for refs in beliefs(f.run.trace, events[-1].seq, key):
        clients = ", ".join(f"{c} refcount {n} ({s})" for c, (n, s) in refs.clients.items())
        lines.append(f"  at the end of the run: {clients or 'no client holds it'}; scheduler: "
                     f"{refs.scheduler}, who_wants {{{', '.join(refs.who_wants)}}}")
    return "\n".join(lines)


def _given(grade: Grade, quiet: bool) -> Grade:
    """``grade``, printed first unless ``quiet``: every grader's last step."""
    if not quiet:
        print(grade)
    return grade


def _raised_everywhere(what: str, bound: int, exc: ScenarioError, who: str) -> str:
    """The FAIL of a search where every order raised the same (no failure to show)."""
    raised = exc.exception
    return (f"FAIL: {what}: in every order within bound {bound}, the in-order one "
            f"({_shown(exc.schedule)}) too, {who} raised "
            f"{getattr(raised, 'name', type(raised).__name__)}: "
            f"{getattr(raised, 'message', raised)}")


def _verdict(what: str, bound: int, scenarios: Sequence[Scenario],
             results: list[ExploreResult], mistake: str | None,
             said: Callable[[Failure], str | None], told: Callable[[Failure, Scenario], str],
             passed: str) -> Grade:
    """A rule grader's verdict on its explored ``results`` (one per scenario): the rule's own
    ``mistake`` (a FAIL already worded), else the first failing scenario's smallest failure —
    in one sentence when ``said`` has one, else ``told`` in full — else a search cut short;
    else PASS, saying what held (``passed``)."""
    failed = next((r for r in results if r.failures), None)
    if mistake is not None:
        return Grade(False, mistake, results)
    if failed is not None:
        first = failed.failures[0]
        one = scenarios[results.index(failed)]
        where = "" if failed is results[0] else f" in {one.__name__}"
        count = f"{len(failed.failures)} distinct failure(s){where} within bound {bound}"
        sentence = said(first)
        if sentence:
            return Grade(False, f"FAIL: {what}: {sentence}\n({count}; this is the smallest.)",
                         results, first)
        return Grade(False, f"FAIL: {what}: {count}. The smallest:\n{told(first, one)}",
                     results, first)
    partial = next((r for r in results if not r.exhaustive), None)
    if partial is not None:
        return Grade(False, f"FAIL: {what}: the orders within bound {bound} were not all run "
                            f"({partial.schedules} schedules)", results)
    runs = " + ".join(str(r.systematic) for r in results)
    return Grade(True, f"PASS: {what}: every order within bound {bound} ({runs} schedules), "
                       f"{passed}", results)


def fix_protocol(rule: Rule, ops: Sequence[str] | None = None, *,
                 base: str | ProtocolVariant = LAB_BASE, name: str = "your-fix",
                 race: str = "8576") -> ProtocolVariant:
    """``base`` with ``rule`` deciding, for each of ``ops`` (the race's by default), whether a
    late message applies: a protocol for ``explore``, ``%%explore --protocol`` or ``Cluster``."""
    if not callable(rule):
        raise LabError(f"a rule is a function of an Arrival, not {type(rule).__name__}")
    ops = RACE_OPS[race] if ops is None else tuple(ops)
    return with_rules(base, name, dict.fromkeys(ops, rule),
                      summary=f"{get_variant(base).name} with your rule "
                              f"{getattr(rule, '__name__', '')} for {', '.join(ops)}")


def grade_fix(rule: Rule, ops: Sequence[str] | None = None, *, race: str = "8576",
              base: str | ProtocolVariant = LAB_BASE, bound: int = BOUND,
              scenario: Scenario | None = None, also: Sequence[Scenario] | None = None,
              quiet: bool = False) -> Grade:
    """Explore ``race``'s scenario (or ``scenario``), then each of ``also`` (by default the
    race's :data:`ALSO`), at ``bound`` under ``rule``: pass when no order of any fails.

    Prints the verdict (unless ``quiet``): PASS with what was explored, or FAIL with the
    smallest failing schedule (of the first scenario that fails) and its ``explain()``.
    """
    guarded = _Guarded(rule)
    protocol = fix_protocol(guarded, ops, base=base, race=race)
    scenario = RACES[race].scenario if scenario is None else scenario
    scenarios = [scenario, *(ALSO.get(race, ()) if also is None else also)]
    names = ", ".join(s.__name__ for s in scenarios)
    what = (f"{race}'s scenario{'s' if len(scenarios) > 1 else ''} ({names}) under "
            f"{get_variant(base).name} with your rule for "
            f"{', '.join(RACE_OPS[race] if ops is None else ops)}")
    results: list[ExploreResult] = []
    try:
        for one in scenarios:
            guarded.scenario = one.__name__
            results.append(explore(one, protocol=protocol, bound=bound, max_schedules=MAX_SCHEDULES,
                                   sample=False, processes=1))
    except ScenarioError as exc:
        # Every order raised the same: no failure to show, but the grade is a FAIL all the same.
        return _given(Grade(False, _raised_everywhere(what, bound, exc, one.__name__), results),
                      quiet)
    mistake = None if guarded.mistake is None else (
        f"FAIL: your rule {guarded.mistake}. A rule returns True (the message applies) or False "
        "(it is about an older hold: drop it).")
    told = _explained_at_check if race == "8215" else _explained
    return _given(_verdict(what, bound, scenarios, results, mistake, _dropped_current,
                           lambda first, _: told(first), "no failure"), quiet)


def copy_left_behind(key: Any) -> str | None:
    """The worker-hop grader's own check, judged once, when a run is over (every channel
    drained): a worker still holds a copy of a key the scheduler has forgotten.  Nothing will
    free it — the scheduler sends one ``free-keys`` per copy, and knows of none — so the data
    stays on the worker for the life of the cluster.  No course check watches for this."""
    if key.scheduler == "forgotten" and key.on_workers:
        return (f"with every channel drained, {', '.join(key.on_workers)} still holds a copy of "
                f"{key.key}, which the scheduler has forgotten: nothing will free it")
    return None


copy_left_behind.at_end = True  # type: ignore[attr-defined]


def _kept_copies(f: Failure) -> str | None:
    """When the student's rule dropped a ``free-keys`` naming the copy the worker held (traced
    as ``worker.free_stale`` with the two numbers equal) and the copy was left behind: the
    failure, said as it was."""
    left = {v.key for v in f.violations if v.name == "copy_left_behind"}
    events = list(f.run.trace)
    dropped = [e for e in events if e.kind == "worker.free_stale" and e.key in left
               and e.get("incarnation") == e.get("held_incarnation")]
    if not dropped:
        return None
    e = dropped[0]
    copy = e.get("incarnation")
    head = (f"your rule dropped the free-keys for copy {copy} of {e.key} on {e.actor}, the copy "
            f"{e.actor} holds (gen {copy} = held {copy})")
    if f.schedule.endswith(":"):
        order = f"{head}, and nothing was late: schedule {_shown(f.schedule)}."
    else:
        order = "\n".join([f"{head}, under schedule {_shown(f.schedule)}:",
                           *(line for line in f.explain().splitlines() if line.startswith("  - "))])
    return (f"{order}\n"
            f"  The scheduler had already stopped counting that copy and sends one free per copy: "
            f"when the run is over, {e.actor} still holds {e.key}, which the scheduler has "
            "forgotten — data nobody can reach or free, for the life of the cluster "
            "(copy_left_behind: the grader's own check, judged when every channel is drained).")


def _let_through(f: Failure, scenario: Scenario, rules: dict[str, Rule]) -> str:
    """What the student's rules let through in ``f``'s order: ``f`` replayed with each rule
    watched, and the first message they applied that was about another copy (or an older
    hold) than the receiver's, in words; '' if none was."""
    seen: list[tuple[Arrival, bool]] = []

    def watch(rule: Rule) -> Rule:
        def watched(arrival: Arrival) -> bool:
            said = rule(arrival)
            seen.append((arrival, said))
            return said
        return watched

    variant = f.run.cluster.variant
    watched = dataclasses.replace(variant, rules=tuple((op, watch(r)) for op, r in rules.items()))
    replay(scenario, f.schedule, protocol=watched)
    for a, said in seen:
        if not said or a.held is None or a.gen == a.held:
            continue
        if a.op == m.FREE_KEYS:
            return (f"\n  Your rule applied a free-keys naming copy {a.gen} of {a.key} on "
                    f"{a.receiver}, which held copy {a.held} (gen {a.gen}, held {a.held}): "
                    "dask's worker deletes the key's data, whichever copy it is — the fresh one.")
        if a.op == m.RELEASE_WORKER_DATA:
            return (f"\n  Your rule applied {a.client}'s release-worker-data about copy {a.gen} "
                    f"of {a.key}, on a scheduler that had registered copy {a.held} there (gen "
                    f"{a.gen}, held {a.held}): it took {a.client} out of who_has, and with no "
                    "copy left forgot the key — lesson 1's form C.")
        if a.op == m.CLIENT_RELEASES_KEYS and a.gen < a.held:
            return (f"\n  Your release rule applied {a.client}'s client-releases-keys for hold "
                    f"{a.gen} of {a.key} while the scheduler had applied hold {a.held}: form A, "
                    "section 2's race.")
    return ""


def grade_worker_fix(copy_rule: Rule, release_rule: Rule, *, base: str | ProtocolVariant = "dask",
                     bound: int = BOUND, scenario: Scenario | None = None,
                     also: Sequence[Scenario] | None = None, quiet: bool = False) -> Grade:
    """Lesson 7, part 3: ``copy_rule`` decides the worker hop — a ``free-keys`` reaching a
    worker and a ``release-worker-data`` reaching the scheduler, each about one copy of a key
    (:data:`COPY_OPS`) — and ``release_rule`` the client hop (``client-releases-keys``), on
    ``base`` (dask's own workers: one copy of a key per worker, nothing numbered but the
    messages).  #8576's scenario (or ``scenario``) and each of ``also`` (:data:`ALSO`) are
    explored at ``bound`` with the grader's check :func:`copy_left_behind` judged at each run's
    end: pass when no order of any fails."""
    guarded, guarded_release = _Guarded(copy_rule), _Guarded(release_rule)
    rules = {m.CLIENT_RELEASES_KEYS: guarded_release, **dict.fromkeys(COPY_OPS, guarded)}
    protocol = with_rules(base, "your-fix", rules,
                          summary=f"{get_variant(base).name} with your rules "
                                  f"{getattr(release_rule, '__name__', '')} for "
                                  f"client-releases-keys and {getattr(copy_rule, '__name__', '')} "
                                  f"for {', '.join(COPY_OPS)}")
    scenario = RACES["8576"].scenario if scenario is None else scenario
    scenarios = [scenario, *(ALSO["8576"] if also is None else also)]
    what = (f"8576's scenarios ({', '.join(s.__name__ for s in scenarios)}) under "
            f"{get_variant(base).name} with your rules for client-releases-keys and "
            f"{', '.join(COPY_OPS)}")
    results = []
    for one in scenarios:
        guarded.scenario = guarded_release.scenario = one.__name__
        results.append(explore(one, protocol=protocol, bound=bound, max_schedules=MAX_SCHEDULES,
                               sample=False, processes=1, invariants=[copy_left_behind]))
    mistake = guarded.mistake or guarded_release.mistake
    if mistake is not None:
        whose = "rule for the worker hop" if guarded.mistake else "rule for the release"
        mistake = (f"FAIL: your {whose} {mistake}. A rule returns True (the message applies) or "
                   "False (it is about another copy or hold: drop it).")
    return _given(_verdict(what, bound, scenarios, results, mistake,
                           lambda first: _kept_copies(first) or _dropped_current(first),
                           lambda first, one: _explained(first) + _let_through(first, one, rules),
                           "no failure, no copy left behind"), quiet)


def grade_check(check: Invariant, *, race: str = "8576", name: str = "dangling_future",
                bound: int = BOUND, quiet: bool = False) -> Grade:
    """Run ``check`` beside the course's checks on ``race``'s scenario at ``bound``: pass when
    it flags every order where ``name`` fires under ``dask``, and none under ``fixed``."""
    try:
        mine = invariant_name(check)
    except ValueError as exc:
        raise LabError(str(exc)) from None
    scenario = RACES[race].scenario
    kwargs: dict[str, Any] = dict(bound=bound, max_schedules=MAX_SCHEDULES, sample=False,
                                  processes=1, invariants=[check])
    racy = explore(scenario, protocol="dask", **kwargs)
    fixed = explore(scenario, protocol="fixed", **kwargs)
    missed = [f for f in racy.failures if name in f.names and mine not in f.names]
    flagged = [f for f in racy.failures if name in f.names and mine in f.names]
    alarms = [f for f in fixed.failures if mine in f.names]
    if missed:
        f = missed[0]
        grade = Grade(False, f"FAIL: {mine} stayed quiet on {_shown(f.schedule)}, where {name} "
                             f"fired ({len(missed)} of {len(missed) + len(flagged)} such orders "
                             f"missed):\n{_explained(f)}", [racy, fixed], f)
    elif alarms:
        f = alarms[0]
        said = next(v for v in f.violations if v.name == mine)
        grade = Grade(False, f"FAIL: {mine} fired under fixed, where no check finds anything "
                             f"wrong, on {_shown(f.schedule)} (event {said.first_seq}): "
                             f"{said.explanation}\n{_explained(f)}", [racy, fixed], f)
    elif not flagged:
        grade = Grade(False, f"FAIL: no order within bound {bound} made {name} fire: nothing to "
                             "flag", [racy, fixed])
    else:
        grade = Grade(True, f"PASS: {mine} flagged all {len(flagged)} distinct failure(s) where "
                            f"{name} fired under dask ({racy.systematic} schedules), and stayed "
                            f"quiet under fixed ({fixed.systematic} schedules)", [racy, fixed])
    return _given(grade, quiet)


def inc(v: int) -> int:
    return v + 1


def rescatter_and_use(client: Any) -> int:
    """#8576's scenario, then the user's computation on the re-scattered value, to the result;
    then a computation the user no longer wants, cancelled.  That is its only ``cancel``: any
    other future of it that ends cancelled, its client did not cancel."""
    x = client.scatter(123)
    del x
    x = client.scatter(123)
    result = client.submit(inc, x).result()
    unwanted = client.submit(inc, 0)
    client.cancel([unwanted])  # a cancel the client asks for: not a bug
    return result


def _asked_cancels(trace: Any) -> set[tuple[str, str]]:
    """``(client, key)`` for every ``cancel-keys`` a client sent in the run."""
    return {(e.actor, k) for e in trace if e.kind == "msg.sent" and e.op == m.CANCEL_KEYS
            for k in (e.fields.get("keys") or (e.key,))}


def uncancelled_cancels(trace: Any) -> dict[tuple[str, str], int]:
    """``(client, key)`` -> the event at which the client's future for ``key`` became
    ``cancelled`` although the client sent no ``cancel-keys`` naming ``key`` in the whole run
    (its own ``cancel`` marks the future just before sending it): read from the trace's events
    alone — what the grader of lesson 8's part 4 takes as the truth."""
    asked = _asked_cancels(trace)
    found: dict[tuple[str, str], int] = {}
    for e in trace:
        if (e.kind == "future.state" and e.get("to") == "cancelled"
                and (e.actor, e.key) not in asked):
            found.setdefault((e.actor, e.key), e.seq)
    return found


def grader_saw_a_cancel(key: Any) -> str | None:
    """The grader's net: every run in which a held future is cancelled becomes a failure, so
    the explorer hands it over whether or not the student's check or a course check fires."""
    if any(state == "cancelled" for _, state in key.clients.values()):
        return "a held future is cancelled"
    return None


#: The names a grader's failure carries that are no check's: its own notes, left out of the
#: names it prints (what they mean, for a reader of ``Failure.names``).
_GRADER_NOTES = {
    "grader_saw_a_cancel": "a held future was cancelled in this run (the grader's net)",
    SCENARIO_RAISED: "the scenario raised (its line below)",
}


def grade_cancel_check(check: Invariant, *, bound: int = BOUND, quiet: bool = False) -> Grade:
    """Lesson 8, part 4: ``check`` must fire on every future that ends cancelled without its
    client having cancelled it, in every order of :func:`rescatter_and_use` within ``bound``
    under ``dask`` — on that future's key — and on no other key; and stay quiet under
    ``fixed``.  The truth is read from each run's trace (:func:`uncancelled_cancels`), not
    from a course check: the course has none for this property."""
    try:
        mine = invariant_name(check)
    except ValueError as exc:
        raise LabError(str(exc)) from None
    if mine == invariant_name(grader_saw_a_cancel):
        raise LabError(f"{mine} is the grader's own name: name your invariant otherwise")
    kwargs: dict[str, Any] = dict(bound=bound, max_schedules=MAX_SCHEDULES, sample=False,
                                  processes=1, invariants=[check, grader_saw_a_cancel])
    racy = explore(rescatter_and_use, protocol="dask", **kwargs)
    fixed = explore(rescatter_and_use, protocol="fixed", **kwargs)
    missed: list[tuple[Failure, tuple[str, str], int]] = []
    alarms: list[tuple[Failure, Any]] = []
    caught = 0
    for f in [*racy.failures, *fixed.failures]:
        truth = uncancelled_cancels(f.run.trace)
        fired = [v for v in f.violations if v.name == mine]
        flagged = {v.key for v in fired}
        for (client, key), seq in truth.items():
            if key in flagged:
                caught += 1
            else:
                missed.append((f, (client, key), seq))
        alarms += [(f, v) for v in fired if v.key not in {k for _, k in truth}]
    if missed:
        f, (client, key), seq = missed[0]
        grade = Grade(False, f"FAIL: {mine} stayed quiet on {_shown(f.schedule)}, where "
                             f"{client}'s future for {key} became cancelled (event {seq}) "
                             f"though {client} never cancelled it ({len(missed)} such "
                             f"future(s) missed):\n{_explained(f, mine)}", [racy, fixed], f)
    elif alarms:
        f, said = alarms[0]
        asked = [c for c, k in _asked_cancels(f.run.trace) if k == said.key]
        why = (f"— but the client cancelled this one itself ({', '.join(asked)})" if asked else
               "— but no future of that key was cancelled behind its client's back in that run")
        # what the check was given there, printed whole: the student reads its fields (review 3:
        # the field that tells a cancel of the client's own is found, not named in the text)
        given = "\n".join(f"  {refs}" for refs in beliefs(f.run.trace, said.first_seq, said.key))
        grade = Grade(False, f"FAIL: {mine} fired on {said.key} under "
                             f"{_shown(f.schedule)} (event {said.first_seq}): "
                             f"{said.explanation} {why}\nwhat {mine} was given there:\n{given}",
                      [racy, fixed], f)
    elif not caught:
        grade = Grade(False, f"FAIL: no order within bound {bound} cancelled a future behind its "
                             "client's back: nothing to flag", [racy, fixed])
    else:
        grade = Grade(True, f"PASS: {mine} fired on all {caught} future(s) cancelled behind "
                            f"their client's back ({racy.systematic} schedules under dask), on "
                            f"no other key, and stayed quiet under fixed ({fixed.systematic} "
                            "schedules)", [racy, fixed])
    return _given(grade, quiet)


def _outcome_of(f: Failure) -> str:
    """What the scenario did under ``f``'s order, in a parenthesis."""
    if f.run.raised is not None:
        return f" (the scenario raised {f.run.raised.name})"
    if f.run.returned is not None:
        return f" (the scenario returned {f.run.returned})"
    return ""


def _livelock(f: Failure) -> bool:
    """A run the explorer stopped as one that goes on for ever: the model's, not dask's (the
    explorer can run a task between two messages of one batch, whose stale result sends it
    again; dask's batched handling never does)."""
    return f.run.raised is not None and f.run.raised.name == "LivelockError"


def reproduced(result: ExploreResult | ScenarioError, error: str = "FutureCancelledError",
               says: str = "cancelled for reason: unknown") -> Failure:
    """The failure of ``result`` (an ``explore`` or ``%%explore`` result) that shows the
    report's error, printed with the orders that did otherwise; :class:`LabError` if none does
    — and if ``result`` is the :class:`ScenarioError` a ``%%explore`` cell binds when every
    order raised the same: the report's "once in a while it works" says some order does not.

    A run the explorer stopped as a loop (``LivelockError``) is left out of what is printed,
    and said to be: it is the model's (see :func:`_livelock`), not the report's.
    """
    if isinstance(result, ScenarioError):
        raised = result.exception
        name = getattr(raised, "name", type(raised).__name__)
        text = getattr(raised, "message", raised)
        raise LabError(f"not the report yet: every order raises — {name}: {text} — the in-order "
                       f"one ({_shown(result.schedule)}) too. The report says 'once in a while it "
                       "works': some order must not raise. Stop the computation while it still "
                       "runs, as the user does, rather than after its result().")
    shown = [f for f in result.failures if not _livelock(f)]
    left_out = len(result.failures) - len(shown)
    note = (f"  ({left_out} group(s) left out: runs the explorer stopped as loops, LivelockError — "
            "a task run between two messages of one batch, which dask never does; they are in "
            "`explored.failures`)") if left_out else None
    for f in shown:
        raised = f.raised
        if raised is not None and raised.name == error and says in raised.message:
            print(f"reproduced: under {short_schedule(f.schedule)} ({f.run.delays} messages "
                  f"late) the scenario raised {raised.name}: {raised.message}")
            for other in shown:
                if other is not f:
                    print(f"  and under {short_schedule(other.schedule)}: {', '.join(other.names)}"
                          + _outcome_of(other))
            if note:
                print(note)
            return f
    seen = "; ".join(f"{short_schedule(f.schedule)}: {', '.join(f.names)}{_outcome_of(f)}"
                     for f in shown) or "no failure"
    returned = {f.run.returned for f in shown if f.run.raised is None}
    if any(r is not None and "Future" in r for r in returned) or not shown:
        # The report's error comes out of a result(): a cell that ends without one returns
        # a Future (or nothing) in every order, and nothing raises.
        why = (" Check the cell against the report: does it stop the computation and start it "
               "again with the same key, as the user does — and end with the result() of the "
               "new future? The report's error comes out of a result(), and a cell's last "
               "expression is what %%explore compares between orders: a cell that ends in a "
               "submit returns a pending Future in every order, and nothing raises.")
    else:
        why = ""
    raise LabError(f"not the report yet: no order raised {error} ({says}); the explorer found "
                   f"{seen}.{why} Write the report as dask calls in the %%explore cell, with "
                   "`client`.")


def _explained_at_check(f: Failure) -> str:
    """:func:`_explained`, with each side's beliefs read when the check fired (the check's own
    event), not at the first event it names: a check that says the scheduler forgot the key
    then shows it forgotten (at its first event the scheduler had let the client go, and
    forgot the key one event later)."""
    lines = _explained(f).splitlines()
    if "  what each side believed then:" not in lines:
        return "\n".join(lines)
    lines = lines[:lines.index("  what each side believed then:")]
    first = next((v for v in f.violations if v.name != SCENARIO_RAISED), f.violations[0])
    # the scenario's own outcome is judged when the run is over: its first event is the moment
    at = first.first_seq if first.name == SCENARIO_RAISED else max(first.first_seq, first.seq - 1)
    lines.append(f"  what each side believed when {first.name} fired (event {at}):")
    for refs in beliefs(f.run.trace, at, first.key):
        clients = ", ".join(f"{c} refcount {n} ({s})" for c, (n, s) in refs.clients.items())
        workers = ", ".join(refs.on_workers) or "no worker"
        lines.append(f"    {clients or 'no client holds it'}; scheduler: {refs.scheduler}, "
                     f"who_wants {{{', '.join(refs.who_wants)}}}, on {workers}")
    return "\n".join(lines)


# -- the capstone's fix: the user's restart, graded in the model and on real dask ---------------

#: Runs of a restart on real dask in :func:`grade_restart`.
REAL_RUNS = 20


def restart_scenario(restart: Callable[..., Any]) -> Scenario:
    """The report's scenario with the user's ``restart(client, old, fn, *args)`` in place of
    its cancel and second submit: what :func:`grade_restart` explores."""

    def restart_same_key(client: Any) -> int:
        old = client.submit(inc, 1, key="k")
        new = restart(client, old, inc, 1)
        return new.result()

    return restart_same_key


def the_report(client: Any) -> int:
    """The capstone's report as a scenario (section 1's answer, kept out of the notebook's
    visible cells): what the going-further section explores — the zoo's #8215 as reported."""
    return cancel_then_same_key(client)


#: What people try first against the report (the capstone's section 4), as :func:`tried` names them.
TRIED = ("the report's steps", "an RPC round trip first (who_has)",
         "wait until the scheduler forgot the key", "a fresh key (not what the user asked)")


def _known(dask_scheduler: Any, key: str) -> bool:
    return key in dask_scheduler.tasks


def tried(dask_client: Any, i: int, how: str) -> Any:
    """The report's steps on real dask, run ``i`` of one thing tried (or none, ``TRIED[0]``):
    the new future's result, or ``"FutureCancelledError"``."""
    import time

    import distributed

    if how not in TRIED:
        raise ValueError(f"{how!r} is not one of {TRIED}")
    key = f"tried-{TRIED.index(how)}-{i}"
    old = dask_client.submit(inc, 1, key=key)
    dask_client.cancel(old)
    if how == TRIED[1]:
        dask_client.who_has()
    elif how == TRIED[2]:
        deadline = time.monotonic() + 10
        while dask_client.run_on_scheduler(_known, key=key):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the scheduler still knows {key} 10 s after its cancel: "
                                   "it did not forget the cancelled key")
            time.sleep(0.01)  # a poll of the scheduler's state: the order stays dask's own
    new = dask_client.submit(inc, 1, key=key + "-again" if how == TRIED[3] else key)
    try:
        return new.result(timeout=10)
    except distributed.client.FutureCancelledError:
        return "FutureCancelledError"


def _restart_refused(restart: Callable[..., Any]) -> str | None:
    """What the user's requirement refuses in ``restart``, on one in-order run of the model:
    the new computation must be a new future for the *same* key, the old one cancelled."""
    from .cluster import Cluster

    with Cluster(protocol="dask", network="immediate") as cluster:
        client = cluster.client()
        old = client.submit(inc, 1, key="k")
        try:
            new = restart(client, old, inc, 1)
        except Exception as exc:  # noqa: BLE001 - the student's bug, reported in the grade
            return f"raised {type(exc).__name__}: {exc}"
        cluster.run_until_idle()
        if not (hasattr(new, "key") and hasattr(new, "result")):
            return (f"returned {new!r}, not a future: return the new future "
                    "(what the user waits on)")
        if new is old:
            return "returned the old future: the user asked to start the computation again"
        if new.key != old.key:
            return (f"made the new future with key {new.key!r}: the user restarts with the same "
                    f"key ({old.key!r}) — their keys name their computations")
        if old.status != "cancelled":
            return (f"left the old future {old.status}, not cancelled: the user stops the old "
                    "computation (cancel it)")
    return None


@dataclass
class _Habits:
    """How a restart stops the old computation, seen on one in-order run: whether its client
    sent ``cancel-keys`` for the key, and whether the restart called ``time.sleep``."""

    cancelled: bool
    slept: bool


def _habits(restart: Callable[..., Any]) -> _Habits:
    """:class:`_Habits` of ``restart`` (one in-order run of the model; ``time.sleep`` counted
    only when this thread calls it, and still slept)."""
    import threading
    import time

    from .cluster import Cluster

    me, sleep, slept = threading.get_ident(), time.sleep, []

    def counted(seconds: float) -> None:
        if threading.get_ident() == me:
            slept.append(seconds)
        sleep(seconds)

    time.sleep = counted
    try:
        with Cluster(protocol="dask", network="immediate") as cluster:
            client = cluster.client()
            old = client.submit(inc, 1, key="k")
            try:
                restart(client, old, inc, 1)
            except Exception:  # noqa: BLE001, S110 - _restart_refused has reported it already
                pass
            cluster.run_until_idle()
            asked = any(e.kind == "msg.sent" and e.op == m.CANCEL_KEYS for e in cluster.trace)
    finally:
        time.sleep = sleep
    return _Habits(cancelled=asked, slept=bool(slept))


#: What the grader adds to a FAIL when the restart sleeps (review 3: the FAIL said only "under
#: the in-order schedule", as if the wait had been too short).
_SLEEP_NOTE = ("\n  Your restart waits (time.sleep): waiting moves no message here — the explorer "
               "delivers each message when it chooses, so the order above is the same with or "
               "without the sleep; on dask a sleep only bets that the answer arrives in time, "
               "and nothing makes it.")

#: What the grader adds to a PASS when the restart never sent cancel-keys (review 3: old.release()
#: passes, and skips the lesson's point unless the student says why; review 6: the note says what
#: passed, not why — that is Question 3's answer).
_RELEASE_NOTE = (" — your restart stopped the old future without client.cancel: now say why. Why "
                 "does it pass where client.cancel fails? (Question 3, below.)")


def _on_real_dask(restart: Callable[..., Any], dask_client: Any, runs: int) -> dict[str, int]:
    """``restart`` ``runs`` times on real dask, each on a key of its own: outcome -> runs."""
    import uuid

    outcomes: dict[str, int] = {}
    for i in range(runs):
        key = f"restart-{uuid.uuid4().hex[:8]}-{i}"
        old = dask_client.submit(inc, 1, key=key)
        try:
            said = repr(restart(dask_client, old, inc, 1).result(timeout=30))
        except Exception as exc:  # noqa: BLE001 - what real dask did, counted
            said = type(exc).__name__
        outcomes[said] = outcomes.get(said, 0) + 1
    return outcomes


def grade_restart(restart: Callable[..., Any], dask_client: Any = None, *, bound: int = BOUND,
                  runs: int = REAL_RUNS, quiet: bool = False) -> Grade:
    """The capstone's fix, on the user's side: ``restart(client, old, fn, *args)`` cancels
    ``old`` and returns a new future of ``fn(*args)`` under ``old``'s key.  Pass when, under
    :data:`LAB_BASE` (distributed 2026.8's protocol, no generation; its worker copies numbered
    only so the explorer does not run a task between two messages of one batch, a loop dask
    never meets), no order within ``bound`` fails — and, with ``dask_client``, the new future
    returns in every one of ``runs`` runs on real dask."""
    refused = _restart_refused(restart)
    name = getattr(restart, "__name__", "restart")
    if refused is not None:
        grade = Grade(False, f"FAIL: your {name} {refused}.")
        return _given(grade, quiet)
    habits = _habits(restart)
    scenario = restart_scenario(restart)
    what = f"the report's scenario with your {name}, under {LAB_BASE.name}"
    try:
        result = explore(scenario, protocol=LAB_BASE, bound=bound, max_schedules=MAX_SCHEDULES,
                         sample=False, processes=1)
    except ScenarioError as exc:
        return _given(Grade(False, _raised_everywhere(what, bound, exc, "it")), quiet)
    if result.failures:
        first = result.failures[0]
        grade = Grade(False, f"FAIL: {what}: {len(result.failures)} distinct failure(s) within "
                             f"bound {bound}. The smallest:\n{_explained_at_check(first)}"
                             + (_SLEEP_NOTE if habits.slept else ""),
                      [result], first)
    elif not result.exhaustive:
        grade = Grade(False, f"FAIL: {what}: the orders within bound {bound} were not all run "
                             f"({result.schedules} schedules)", [result])
    else:
        model = f"every order within bound {bound} ({result.systematic} schedules), no failure"
        if dask_client is None:
            grade = Grade(True, f"PASS: {what}: {model}"
                                + ("" if habits.cancelled else _RELEASE_NOTE), [result])
        else:
            import distributed

            seen = _on_real_dask(restart, dask_client, runs)
            real = ", ".join(f"{'returned ' + k if k == '2' else k} in {n} of {runs} runs"
                             for k, n in sorted(seen.items(), key=lambda kv: -kv[1]))
            where = f"on real dask (distributed {distributed.__version__}): {real}"
            if seen.get("2") == runs:
                grade = Grade(True, f"PASS: {what}: {model}; {where}"
                                    + ("" if habits.cancelled else _RELEASE_NOTE), [result])
            else:
                grade = Grade(False, f"FAIL: {what}: {model} — but {where}. The model passed "
                                     "an order real dask did not: look for a wait that real "
                                     "dask does not make as the model does"
                                     + (_SLEEP_NOTE if habits.slept else ""), [result])
    return _given(grade, quiet)


#: What :func:`story` tells of a key: the futures, the messages, the scheduler's transitions.
_STORY = ("future.created", "future.state", "msg.sent", "msg.received", "transition")


def story(source: Any, key: str, until: str = "cancelled") -> None:
    """Print the life of ``key`` in ``source`` (a cluster or a trace), from its first event to
    the last future of it becoming ``until``: each event, and the user's line that made it."""
    from .views.text import format_events
    from .why import cell_label

    trace = getattr(source, "trace", source)
    events = [e for e in trace.filter(key=key) if e.kind in _STORY and e.op != "execute"]
    ends = [i for i, e in enumerate(events)
            if e.kind == "future.state" and e.get("to") == until]
    events = events[:ends[-1] + 1] if ends else events
    for e, line in zip(events, format_events(events).splitlines()):
        where = cell_label(e.cell) if e.cell else ""
        print(f"{line}   [{where}]" if where else line)


def arrivals(rule: Rule, show: bool = True) -> Callable[[Arrival], bool]:
    """``rule``, printing each :class:`Arrival` it is asked about and (unless ``show`` is off)
    its answer: to watch it."""

    def watched(arrival: Arrival) -> bool:
        said = rule(arrival)
        key = arrival.key if len(arrival.key) <= 16 else arrival.key[:13] + "…"
        verdict = f" -> {'applies' if said else 'dropped'}" if show else ""
        # the fields bare, as the rule reads them: what they mean is for the student to say
        if arrival.op in COPY_OPS:
            print(f"  {arrival.op}[{key}] at {arrival.receiver}: client {arrival.client}, "
                  f"gen {arrival.gen}, held {arrival.held}{verdict}")
        else:
            print(f"  {arrival.op}[{key}] at {arrival.receiver}: client {arrival.client}, "
                  f"gen {arrival.gen}, held {arrival.held}, state {arrival.state}{verdict}")
        return said

    watched.__name__ = getattr(rule, "__name__", "rule")
    return watched
