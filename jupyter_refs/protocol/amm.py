"""The scheduler's active memory manager, with dask's one default policy, ``ReduceReplicas``
(``distributed/active_memory_manager.py``; ``distributed.scheduler.active-memory-manager``:
started, every 2 s).

A key in memory on more workers than it needs — a dependency a worker fetched and kept, a
``Client.replicate`` — loses its extra copies at the manager's next pass: it keeps one, or
as many as the tasks still waiting for it (counted by the worker they are queued on), and
never the copy on a worker where such a task is queued or running.  Of the others, the copy
on the worker holding the most is dropped first (dask: the most memory; the model measures
none, and counts the keys each worker holds).  A drop is immediate on the scheduler
(``who_has``) and a ``remove-replicas`` to the worker.

dask runs the pass every 2 s whatever happens; the model sends its timer (``amm``, like the
work-stealing ``balance``) only when a pass could drop something — a copy was added, or a
task that kept copies of its inputs ended — so a cluster with no replicas has no timer in
flight.  ``Client.amm`` starts, stops, runs once, and says whether
it is running.
"""

from __future__ import annotations

from typing import Any

from . import messages as m
from .messages import SCHEDULER, Message
from .parts import Out, SchedulerState, TaskState

_NO_PAYLOAD: dict = {}
#: Waiting dependents counted one by one below this many (dask's cut-off, for CPU's sake).
_MANY_WAITERS = 20
_WAITING = frozenset({"waiting", "processing", "no-worker"})


class ActiveMemoryManager:
    def __init__(self, scheduler: SchedulerState, running: bool = True):
        self.scheduler = scheduler
        self.running = running
        #: Whether a pass's timer is in flight (at most one is).
        self.due = False

    def replicated(self, out: Out) -> None:
        """A key has more than one copy: a pass is due (unless one is, or the manager is off)."""
        if self.running and not self.due:
            self.due = True
            out.append(Message(SCHEDULER, SCHEDULER, m.AMM, m.AMM_CHANNEL, False, (),
                               _NO_PAYLOAD))

    def tick(self, out: Out, stimulus: str) -> None:
        """The timer came: a pass.  Copies it keeps (for tasks still waiting) call for another
        pass when one of those tasks ends (``waiter_done``), not before: a timer that set
        itself again would fire for ever on a network that fires timers when idle."""
        self.due = False
        if self.running:
            self.run_once(out, stimulus)

    def waiter_done(self, ts: TaskState, out: Out) -> None:
        """A task ended: its inputs with extra copies may now lose them."""
        tasks = self.scheduler.tasks
        if any(d in tasks and len(tasks[d].who_has) > 1 for d in ts.dependencies):
            self.replicated(out)

    def handle(self, method: str, out: Out, stimulus: str) -> Any:
        """``Client.amm``'s calls (dask's ``amm_handler``)."""
        if method == "start":
            self.running = True
            if any(len(ts.who_has) > 1 for ts in self.scheduler.tasks.values()):
                self.replicated(out)
            return None
        if method == "stop":
            self.running = False
            return None
        if method == "run_once":
            self.run_once(out, stimulus)
            return None
        if method == "running":
            return self.running
        raise ValueError(f"Invalid AMM method: {method!r}")

    def run_once(self, out: Out, stimulus: str) -> None:
        """One pass of ``ReduceReplicas``."""
        s = self.scheduler
        replicated = [ts for key, ts in sorted(s.tasks.items())
                      if ts.state == "memory" and len(ts.who_has) > 1]
        if not replicated:
            return
        held: dict[str, int] = dict.fromkeys(s.workers, 0)  # the model's "memory": keys held
        for ts in s.tasks.values():
            for w in ts.who_has:
                held[w] = held.get(w, 0) + 1
        for ts in replicated:
            waiters = [s.tasks[d] for d in sorted(ts.dependents)
                       if d in s.tasks and s.tasks[d].state in _WAITING]
            nwaiters = len(waiters)
            if 1 < nwaiters < _MANY_WAITERS:
                nwaiters = len({w.processing_on or w.key for w in waiters})
            busy = {w.processing_on for w in waiters if w.processing_on}
            for _ in range(len(ts.who_has) - max(1, nwaiters)):
                dropper = self._dropper(ts, busy, held)
                if dropper is None:
                    break
                s.remove_replica(ts, dropper, out, stimulus)
                held[dropper] -= 1

    @staticmethod
    def _dropper(ts: TaskState, busy: set[str], held: dict[str, int]) -> str | None:
        """dask's ``_find_dropper``: never the last copy, nor one where a waiter runs."""
        if len(ts.who_has) < 2:
            return None
        candidates = [w for w in ts.who_has if w not in busy]
        if not candidates:
            return None
        return max(sorted(candidates), key=lambda w: held.get(w, 0))
