"""Work stealing: a worker with a free thread takes a task queued on a busy one.

dask's scheduler moves queued tasks from busy workers to idle ones
(``distributed/stealing.py``).  Ordinary dask code leans on it without knowing:
a task that calls ``get_client().map(...)`` and then ``gather`` — without
``secede`` — holds its worker's only thread, and a sub-task placed behind it
would wait for ever; dask moves that sub-task to the idle worker within a
second.  The steal is two messages on two streams, so it races too: the task
may start, finish, be released or be cancelled while the request travels.

What is dask's here, and what is reduced:

* **The messages and their outcomes are dask's.**  ``steal-request`` goes on
  the stream to the victim.  The victim gives the task up if it is still
  ``ready`` or ``waiting`` and answers ``steal-response`` with the state it
  found.  The scheduler then ``confirm``\\ s (the task goes to the thief with a
  new run id), or logs ``already-computing`` (the victim had started it),
  ``already-aborted`` (the task left processing meanwhile), ``stale-response``
  (an answer to an older request) or ``reschedule`` (the victim did not know
  the task; it is sent again).  A task requested once is not asked for again
  until it is processing somewhere anew, as dask drops it from ``stealable``.
* **The clock.**  dask balances every ``work-stealing-interval`` (1 s) from a
  periodic callback.  The model has no clock of its own: once a worker is left
  with a free thread while another has more tasks than threads, the scheduler
  sends itself a ``balance`` tick, and the policy delivers it as a timer —
  the immediate network once nothing else can move, the random and live ones
  within an interval, the explorer whenever it chooses (so it also explores a
  steal racing a task's end).
* **Occupancy.**  dask weighs each task by its prefix's mean duration (0.5 s
  until one has finished) plus the cost of moving its inputs.  The model has
  no durations, and weighs every task as one: a thief needs at least two tasks
  fewer than its victim — dask's ``occ_thief + compute <= occ_victim -
  compute / 2`` with ``compute = 1`` and no transfer cost.  So the model
  steals where dask steals before it knows a task group's durations; once
  dask has measured them, it may keep a queue of quick tasks where it is.
* **Candidates.**  dask walks a set, in no useful order; the model tries the
  victim's newest task first (the back of its queue, the least likely to have
  started), tasks without inputs before tasks with them (dask's cost levels).
  Restricted tasks (``workers=``) go only to a thief among their workers, or
  to any with ``allow_other_workers=True``.

Sans-IO like the scheduler it belongs to: it reads the scheduler's tables and
appends messages to the scheduler's output.
"""

from __future__ import annotations

from . import messages as m
from . import resources
from .messages import SCHEDULER, Message
from .parts import Out, SchedulerState, TaskState

#: Worker states a steal-response can carry, grouped by what the scheduler does (dask's
#: ``_WORKER_STATE_CONFIRM`` / ``_REJECT`` / ``_UNDEFINED``).
CONFIRM = frozenset({"ready", "constrained", "waiting"})
REJECT = frozenset({"memory", "executing", "long-running", "cancelled", "resumed"})
UNDEFINED = frozenset({"released", None})

_NO_PAYLOAD: dict = {}


class WorkStealing:
    """The scheduler's steals in flight, and the balance that starts them."""

    def __init__(self, scheduler: SchedulerState):
        self.scheduler = scheduler
        #: key -> (victim, thief, stimulus id) of the steal-request in flight for it.
        self.in_flight: dict[str, tuple[str, str, str]] = {}
        #: Keys already asked for on the worker they process on (dask: not ``stealable``).
        self.asked: set[str] = set()
        self._requests = 0
        #: Whether a balance tick is in flight (at most one is).
        self.due = False

    # -- the scheduler's hooks ------------------------------------------------------------

    def left(self, key: str) -> None:
        """``key`` stopped processing where it was: a steal of it is void (dask's
        ``transition`` hook on leaving ``processing``)."""
        self.asked.discard(key)
        self.in_flight.pop(key, None)

    def tick(self, out: Out) -> None:
        """Ask for a balance, unless a tick is already on its way."""
        if not self.due:
            self.due = True
            out.append(Message(SCHEDULER, SCHEDULER, m.BALANCE, m.BALANCE_CHANNEL, False, (),
                               _NO_PAYLOAD))

    # -- balance --------------------------------------------------------------------------

    def _counts(self) -> dict[str, int]:
        """Tasks per worker, counting steals in flight at their thief (dask's combined
        ``nprocessing``)."""
        counts = {w: len(q) for w, q in self.scheduler.processing.items()}
        for victim, thief, _ in self.in_flight.values():
            counts[victim] -= 1
            counts[thief] += 1
        return counts

    def balance(self, out: Out, stimulus: str) -> None:
        """The tick arrived: request steals from the busiest workers for the idle ones."""
        self.due = False
        s = self.scheduler
        workers, nthreads, tasks = s.workers, s.nthreads, s.tasks
        counts = self._counts()
        thieves = [w for w in workers if counts[w] < nthreads[w]]
        if not thieves or len(thieves) == len(workers):
            return
        victims = sorted((w for w in workers if counts[w] > nthreads[w]),
                         key=lambda w: -counts[w])  # stable: the busiest, then worker order
        order = {w: i for i, w in enumerate(workers)}
        for victim in victims:
            queue = s.processing[victim]
            newest_first = [*reversed(queue)]
            candidates = ([k for k in newest_first if not tasks[k].dependencies]
                          + [k for k in newest_first if tasks[k].dependencies])
            for key in candidates:
                if not thieves:
                    return
                if key in self.asked:
                    continue
                allowed = _allowed(tasks[key], thieves, s.resources)
                if not allowed:
                    continue
                thief = min(allowed, key=lambda w: (counts[w] / nthreads[w], order[w]))
                if counts[thief] + 1 > counts[victim] - 0.5:
                    break  # this victim is no longer worth robbing
                self._request(key, victim, thief, out, stimulus)
                counts[victim] -= 1
                counts[thief] += 1
                if counts[thief] >= nthreads[thief]:
                    thieves.remove(thief)

    def _request(self, key: str, victim: str, thief: str, out: Out, stimulus: str) -> None:
        self._requests += 1
        stimulus_id = f"steal-{self._requests}"
        self.asked.add(key)
        self.in_flight[key] = (victim, thief, stimulus_id)
        s = self.scheduler
        s.record(SCHEDULER, "steal.request", key, victim, thief, stimulus_id)
        s.send(out, victim, m.STEAL_REQUEST, (key,), key=key, stimulus_id=stimulus_id)

    # -- the victim's answer --------------------------------------------------------------

    def confirm(self, key: str, state: str | None, stimulus_id: str, worker: str,
                out: Out, stimulus: str) -> None:
        """A steal-response: move the task, or say why not (dask's ``move_task_confirm``)."""
        s = self.scheduler
        ts = s.tasks.get(key)
        if ts is None:
            return  # released and forgotten while the request travelled
        if s.variant.steal_by_key:
            self._confirm_by_key(ts, state, stimulus_id, out, stimulus)
            return
        flight = self.in_flight.get(key)
        if flight is None:
            self._outcome(key, "already-aborted", state, worker, None, stimulus_id)
            return
        victim, thief, asked_as = flight
        if asked_as != stimulus_id:
            self._outcome(key, "stale-response", state, victim, thief, stimulus_id)
            return
        del self.in_flight[key]
        if state in UNDEFINED:
            # The victim did not have the task: send it again, as dask's _reschedule does.
            self._outcome(key, "reschedule", state, victim, thief, stimulus_id)
            s.reschedule(key, out, stimulus)
        elif state in REJECT:
            self._outcome(key, "already-computing", state, victim, thief, stimulus_id)
        elif state in CONFIRM:
            self._outcome(key, "confirm", state, victim, thief, stimulus_id)
            self.asked.discard(key)  # stealable again, on its new worker
            s.move_task(ts, thief, out, stimulus)
        else:
            raise ValueError(f"steal-response for {key} with unexpected task state {state!r}")
        if len(s.processing[thief]) < s.nthreads[thief]:
            s.maybe_balance(out)  # the thief still has a free thread: try another task

    def _confirm_by_key(self, ts: TaskState, state: str | None, stimulus_id: str, out: Out,
                        stimulus: str) -> None:
        """dask's ``move_task_confirm`` before PR 5379 (``steal_by_key``): the answer is matched
        to the steal in flight *for the key*, whichever request it answers, so a late answer
        to a request about the task's previous life consumes the current one and acts on it.
        A task no longer processing on that steal's victim is left alone; ``None`` (the victim
        did not know the task) counts as already computing; silent outcomes are not logged,
        as dask did not log them."""
        s, key = self.scheduler, ts.key
        flight = self.in_flight.pop(key, None)
        if flight is None:
            return
        victim, thief, _ = flight
        if ts.state != "processing" or ts.processing_on != victim:
            return
        if state in CONFIRM:
            self._outcome(key, "confirm", state, victim, thief, stimulus_id)
            self.asked.discard(key)
            s.move_task(ts, thief, out, stimulus)
        elif state in REJECT or state is None:
            self._outcome(key, "already-computing", state, victim, thief, stimulus_id)
        else:
            raise ValueError(f"steal-response for {key} with unexpected task state {state!r}")
        if len(s.processing[thief]) < s.nthreads[thief]:
            s.maybe_balance(out)

    def _outcome(self, key: str, outcome: str, state: str | None, victim: str,
                 thief: str | None, stimulus_id: str) -> None:
        self.scheduler.record(SCHEDULER, "steal.outcome", key, outcome, state, victim, thief,
                              stimulus_id)


def _allowed(ts: TaskState, thieves: list[str],
             have: dict[str, dict[str, float]] | None = None) -> list[str]:
    """The thieves that may run ``ts`` (dask's ``_get_thief`` over its valid workers; a
    task that needs resources, only a thief that has them: dask's ``_can_steal``)."""
    spec = ts.run_spec or {}
    need = spec.get("resources")
    if need:
        thieves = [w for w in thieves
                   if resources.fits((have or {}).get(w, resources.NONE), need)]
    restricted = spec.get("workers")
    if not restricted:
        return thieves
    valid = [w for w in thieves if w in restricted]
    if valid or not spec.get("allow_other_workers"):
        return valid
    return thieves
