"""``Client.replicate``: copies of keys on ``n`` workers (dask's ``Scheduler.replicate``).

As dask 2026.8.0's: ``n`` defaults to every worker (of ``workers``, if given); a key with
no copy anywhere is answered ``partial-fail`` at once; extra copies among those workers are
dropped first; then, round by round, each key short of ``n`` copies gets at most
``branching_factor`` new ones per copy it has, fetched by the chosen workers from those
holding it (dask samples them at random; the model takes them in order) — the call is
answered once every round is in (each copy is counted when its worker's ``add-keys``
comes).  The active memory manager may drop the copies again at its next pass, as dask's
does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import messages as m
from .parts import Out, SchedulerState

if TYPE_CHECKING:
    from .messages import Message


@dataclass(slots=True)
class Replication:
    keys: list[str]
    n: int
    workers: list[str]
    branching: int
    #: worker -> keys asked of it in the round in flight
    asked: dict[str, set[str]] = field(default_factory=dict)


class Replications:
    """The replicate calls in progress, by call (the extension parks each until done)."""

    def __init__(self, scheduler: SchedulerState):
        self.scheduler = scheduler
        self.calls: dict[str, Replication] = {}

    def handle(self, msg: Message, out: Out, stimulus: str) -> dict[str, Any] | None:
        call = self.calls.get(msg.channel)
        if call is None:
            call, reply = self._begin(msg, out, stimulus)
            if reply is not None:
                return reply
            self.calls[msg.channel] = call
        if self._round(call, out, stimulus):
            del self.calls[msg.channel]
            return {"ok": True}
        return None

    def _begin(self, msg: Message, out: Out, stimulus: str
               ) -> tuple[Replication, dict[str, Any] | None]:
        s, p = self.scheduler, msg.payload
        workers = [w for w in s.workers if not p["workers"] or w in p["workers"]]
        n = len(workers) if p["n"] is None else min(p["n"], len(workers))
        call = Replication(list(msg.keys), n, workers, p["branching_factor"])
        if n == 0:
            return call, {"error": "Can not use replicate to delete data", "type": "ValueError"}
        missing = [k for k in msg.keys if k not in s.tasks or not s.tasks[k].who_has]
        if missing:
            return call, {"value": {"status": "partial-fail", "keys": missing}}
        for key in call.keys:  # too many copies among the workers: drop the extra ones
            ts = s.tasks[key]
            extra = [w for w in sorted(ts.who_has) if w in workers][n:]
            for w in extra:
                s.remove_replica(ts, w, out, stimulus)
        return call, None

    def _round(self, call: Replication, out: Out, stimulus: str) -> bool:
        """Whether the call is done; else asks for the next round's copies (if the round in
        flight is in)."""
        s = self.scheduler
        for worker, keys in list(call.asked.items()):
            keys -= {k for k in keys if k not in s.tasks or worker in s.tasks[k].who_has}
            if not keys:
                del call.asked[worker]
        if call.asked:
            return False
        asks: dict[str, dict[str, dict[str, int]]] = {}
        for key in call.keys:
            ts = s.tasks.get(key)
            if ts is None or ts.state == "forgotten" or not ts.who_has:
                continue
            missing = call.n - len([w for w in ts.who_has if w in call.workers])
            if missing <= 0:
                continue
            count = min(missing, call.branching * len(ts.who_has))
            for w in [w for w in call.workers if w not in ts.who_has][:count]:
                asks.setdefault(w, {})[key] = dict(sorted(ts.who_has.items()))
        for worker, who_has in sorted(asks.items()):
            call.asked[worker] = set(who_has)
            s.send(out, worker, m.ACQUIRE_REPLICAS, tuple(who_has), who_has=who_has,
                   stimulus_id=stimulus)
        return not asks
