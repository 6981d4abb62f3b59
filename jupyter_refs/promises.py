"""The promises a distributed-futures system keeps, each declared once.

A *promise* is what a violation breaks: the checks judge most of them over the beliefs
(``checks.py``), the explorer two more over a scenario's outcome (``explore.py``).  Each is
declared here — its name (a violation's ``name``), who judges it, and what it promises in
one sentence — as ``events.py`` declares event kinds, so adding one is this declaration
and one judge.  The order is the one ``why`` ranks losses in when several name one key:
a lost reference first, an order-dependent outcome after it, a symptom last.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Promise:
    name: str
    #: ``checks`` (judged over the beliefs, on every trace), ``explore`` (over a run's outcome),
    #: or ``dask`` (over real dask's own state, by ``jupyter_refs.dask.explore_dask``).
    judge: str
    promise: str
    #: Judged only once every channel has drained (``network.drained``), since until then a
    #: message on its way may still make it true.  A traced dask cluster records no drain (its
    #: handlers await between a message and its effects, and nothing tells the tracer that no
    #: handler is still running), so these are judged on the model's traces only.
    drained: bool = False


PROMISES: tuple[Promise, ...] = (
    Promise("dangling_future", "checks",
            "a finished future's key is known to the scheduler and held by a worker"),
    Promise("ghost_task", "checks",
            "a client's desire never creates a task the scheduler cannot run"),
    Promise("hung_future", "checks",
            "a pending future's key is known to the scheduler, so something will end it",
            drained=True),
    Promise("set_twice", "checks", "one key, one task: an allocated key is never given twice"),
    Promise("leaked_key", "checks",
            "a key in memory is wanted by someone who will release it",
            drained=True),
    Promise("spurious_cancel", "checks",
            "a future is not cancelled while the scheduler keeps its key for that client",
            drained=True),
    Promise("cancelled_for_another", "checks",
            "one client's cancel does not cancel another client's future of a key the "
            "scheduler keeps for that client",
            drained=True),
    Promise("cancel_ignored", "checks",
            "a key a client cancelled is not kept for that client",
            drained=True),
    Promise("annotations_dropped", "checks",
            "a task keeps the annotations (retries, workers) its graph gave it"),
    Promise("retired_worker_returned", "checks",
            "a worker retire_workers removed does not join the cluster again"),
    Promise("stale_result", "checks",
            "a task's result (or error) is from the run the scheduler last asked for"),
    Promise("stale_steal", "checks",
            "a task moves to a thief only on its victim's answer to the steal request in flight"),
    Promise("scenario_raised", "explore",
            "the scenario does not raise in one message order and return in another"),
    Promise("outcome_differs", "explore",
            "the scenario returns the same value whatever the message order"),
    Promise("dask_raised", "dask",
            "real dask's own code raises no uncaught error (judged by explore_dask)"),
    Promise("id_collision", "checks", "no two futures share one allocated id"),
    Promise("refcount_mismatch", "checks",
            "a client that holds a key is among those the scheduler says want it",
            drained=True),
)

BY_NAME = {p.name: p for p in PROMISES}
#: The names the checks judge (a violation of an invariant of one's own takes another).
CHECKED = frozenset(p.name for p in PROMISES if p.judge == "checks")
#: The names judged only at a drain: never on a traced dask cluster.
AT_DRAIN = frozenset(p.name for p in PROMISES if p.drained)
#: Every name, in the order ``why`` ranks losses.
RANKED = tuple(p.name for p in PROMISES)
