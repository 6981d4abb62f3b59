"""The worker's side of the protocol: it stores data and runs tasks on its threads.

A worker obeys the scheduler: ``update-data`` (the put of a scatter) stores,
``free-keys`` deletes, ``compute-task`` queues a task.  Under the legacy
protocol a key has one slot: a put overwrites it and a ``free-keys`` deletes
whatever is in it — which is how variant B of #8576 destroys the data of a
scatter that landed a moment earlier.  With incarnations, each put is a
separate copy, a free deletes exactly the copy it names, and ``data[key]`` is
the newest copy.

Tasks follow dask's worker state machine (``distributed/worker_state_machine.py``),
reduced to what a race can see:

=============  ==========================================================
``waiting``    fetching dependencies from other workers (dask: waiting/flight)
``ready``      queued for a thread
``executing``  holds one of the worker's ``nthreads`` slots
``long-running``  seceded (``secede()``): running, but its slot is free
``cancelled``  ``free-keys`` arrived while it ran; dask cannot stop a thread, so
               the run goes on and its result is dropped when it ends
=============  ==========================================================

A task leaving ``ready`` for ``executing`` emits an ``execute`` message to the
worker itself (dask's ``Execute`` instruction).  The driver, not this class,
runs the function when that message is delivered — inline on a stepped network,
on a thread on the live one — calling :meth:`WorkerState.begin` then
:meth:`WorkerState.finish`; the outcome leaves as ``task-finished`` /
``task-erred`` on the worker's stream.  A ``compute-task`` for a task that is
still running since it was cancelled brings it back (dask's
``cancelled → executing``): the run in progress now serves the new request.

A future inside a task's arguments is deserialized here, for the worker's own
client (``client:<worker>``, as dask's ``get_client()`` on a worker): under
legacy it claims the key with ``client-desires-keys`` — race 2's message —
under fixed it is borrowed and says nothing.  What the future *object* is
(a user-facing ``Future``, or a plain ``FutureRef``) is the driver's business:
it passes ``bind``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from . import messages as m
from . import resources
from .client import ClientState, FutureState
from .logs import NodeLog
from .messages import Message
from .ready import ReadyQueue
from .serialize import (
    FutureRef,
    adopting,
    dumps,
    load_function,
    loaded_functions,
    loads,
    substitute,
)
from .variants import Arrival, ProtocolVariant

RELEASED, WAITING, READY, EXECUTING, LONG_RUNNING, CANCELLED, MEMORY, ERROR, FORGOTTEN = (
    "released", "waiting", "ready", "executing", "long-running", "cancelled", "memory", "error",
    "forgotten")

#: dask's ``distributed.admin.low-level-log-length``: how many transfers each log keeps.
TRANSFER_LOG_LENGTH = 1000

#: The key of the task whose arguments are being deserialized (a travelling future names it).
running_task: ContextVar[str | None] = ContextVar("jupyter_refs_running_task", default=None)

#: ``bind(client_state, key, state, future_id)``: the object a task receives for a travelling future.
Bind = Callable[[ClientState, str, FutureState, int], Any]


@dataclass(slots=True, eq=False)
class WorkerTask:
    """A task the worker has been asked to compute and has not finished."""

    key: str
    state: str
    spec: dict[str, Any]  # the compute-task payload
    incarnation: int  # the run id: the copy its result becomes
    previous: str | None = None  # cancelled: what it was doing (executing / long-running)
    # Only for a task whose dependencies are on other workers (made then: a map of ten
    # thousand tasks queued at once is ten thousand of these, and each container is
    # work for the garbage collector).
    waiting: set[str] | None = None  # peers whose data is awaited
    fetched: dict[str, Any] | None = None
    missing: list[str] | None = None
    #: The fetches' ``transfer`` entries, while a task stream is kept.
    transfers: list[dict[str, Any]] | None = None


@dataclass(slots=True, eq=False)
class TaskRun:
    """What the driver calls for one ``execute``: ``func(*args, **kwargs)``."""

    worker: str
    key: str
    func: Callable[..., Any]
    args: tuple
    kwargs: dict[str, Any]
    done: bool = False
    #: When the call began and ended (the driver's clock, epoch seconds), on which thread.
    started: float = 0.0
    stopped: float = 0.0
    thread: int = 0


#: Worker transitions the trace already shows (see ``WorkerState._transition``).
_TOLD = frozenset({(RELEASED, READY), (READY, EXECUTING), (EXECUTING, MEMORY)})

#: In a pickle, the name of the function a travelling future is rebuilt by
#: (``serialize.reduce_future``): a blob without it carries no future.
_FUTURE_MARK = b"rebuild_future"

_NO_PAYLOAD: dict[str, Any] = {}  # an execute carries nothing (shared: never written)


def _bind_ref(client: ClientState, key: str, fs: FutureState, future_id: int) -> Any:
    return FutureRef(key)


class WorkerState:
    def __init__(self, name: str, variant: ProtocolVariant, record: Callable[..., None],
                 bind: Bind = _bind_ref, nthreads: int = 1,
                 has: dict[str, float] | None = None, nanny: bool = True):
        self.name = name
        #: Whether a nanny restarts this worker when its process ends without being told to
        #: close (dask's ``LocalCluster(processes=True)`` and ``dask worker`` have one).
        self.nanny = nanny
        #: How often the nanny restarted it: each life has connections of its own.
        self.life = 0
        self.status = "running"
        self.closed = False
        #: The scheduler's stream to this life of the worker (earlier lives' are not read).
        self._from_scheduler = m.stream_channel(m.SCHEDULER, name)
        #: Heartbeat calls of this life waiting for their answer.
        self._heartbeats: set[str] = set()
        #: Replica fetches for a retirement: call -> (key, the copy's incarnation).
        self.variant = variant
        self.record = record
        #: The worker's own client, which futures deserialized in tasks belong to.
        self.client = ClientState(f"client:{name}", variant, record,
                                  borrows=not variant.deserialized_claims)
        #: Makes the Future a task receives for a future in its arguments (the driver's;
        #: it lets go of it when disposed).
        self.bind: Bind | None = bind
        #: The newest copy of each key: what tasks and gathers read.
        self.data: dict[str, Any] = {}
        #: Every copy held, by key and incarnation.
        self.copies: dict[str, dict[int, Any]] = {}
        self._stream = m.stream_channel(name, m.SCHEDULER)
        self._calls = 0
        #: Tasks waiting for dependencies held by other workers, by fetch call.
        self._fetching: dict[str, WorkerTask] = {}
        #: Fetches of replicas the scheduler asked for (``acquire-replicas``), by call.
        self._acquiring: set[str] = set()
        #: dask's ``transfer_incoming_log`` / ``transfer_outgoing_log`` (when the driver
        #: times transfers: the live network), ``low-level-log-length`` long.
        self.transfer_incoming_log: deque[dict[str, Any]] = deque(maxlen=TRANSFER_LOG_LENGTH)
        self.transfer_outgoing_log: deque[dict[str, Any]] = deque(maxlen=TRANSFER_LOG_LENGTH)
        self.nthreads = nthreads
        #: Tasks asked for and not finished, by key.
        self.tasks: dict[str, WorkerTask] = {}
        self.ready = ReadyQueue()
        #: dask's ``constrained``: ready tasks that need resources, run while enough is free
        #: (``resources.py``); what is free, and what each running one took.
        self.constrained = ReadyQueue()
        self.resources = dict(has or {})
        #: The resources this worker has (``resources=``), and what of them is free now.
        self.has = dict(has or {})
        self.free_resources = dict(self.has)
        self._taken: dict[str, dict[str, float]] = {}
        #: dask's worker log (``logs.py``); the driver gives it its length and clock.
        self.log = NodeLog("distributed.worker")
        #: Keys holding a thread slot (cancelled ones too: their thread still runs).
        self.executing: set[str] = set()
        #: Keys running on a thread that seceded from its slot.
        self.long_running: set[str] = set()
        self._runs = 0

    def handle(self, msg: Message) -> list[Message]:
        if self.closed or (msg.batched and msg.sender == m.SCHEDULER
                           and msg.channel != self._from_scheduler):
            # A closed worker reads nothing; a restarted one, nothing of its earlier life.
            self.record(self.name, "worker.dropped", None, msg.op, msg.msg_id)
            return []
        return self._handlers[msg.op](self, msg)

    def _to_scheduler(self, op: str, keys: tuple[str, ...], **payload: Any) -> Message:
        return Message(self.name, m.SCHEDULER, op, self._stream, True, keys, payload)

    def _store(self, key: str, value: Any, incarnation: int) -> None:
        copies = self.copies.get(key)
        if copies is None:  # the first copy of the key here (a task's result, usually)
            self.copies[key] = {incarnation: value}
            self.data[key] = value
            self.record(self.name, "worker.put", key, incarnation, ())
            return
        replaced: tuple[int, ...] = ()
        if not self.variant.incarnations:
            replaced = tuple(copies or ())  # one slot per key: the put overwrites it
            copies = self.copies[key] = {}
        copies[incarnation] = value
        self.data[key] = copies[max(copies)]
        self.record(self.name, "worker.put", key, incarnation, replaced)

    def _free(self, key: str, incarnation: int) -> list[int]:
        """Delete the copy named (legacy: every copy).  Returns the incarnations deleted."""
        copies = self.copies.get(key)
        if not copies:
            return []
        if not self.variant.incarnations:
            freed = [*copies]
        elif incarnation in copies:
            freed = [incarnation]
        else:
            # The free is about another copy of the key: keep the ones held.
            self.record(self.name, "worker.free_stale", key, incarnation, max(copies))
            return []
        for inc in freed:
            del copies[inc]
            self.record(self.name, "worker.free", key, inc)
        if copies:
            self.data[key] = copies[max(copies)]
        else:
            del self.copies[key], self.data[key]
        return freed

    # -- scatter -------------------------------------------------------------------

    def _on_update_data(self, msg: Message) -> list[Message]:
        incarnations = msg.payload["incarnations"]
        nbytes = {}
        for key, blob in msg.payload["data"].items():
            self.record(self.name, "scatter.worker_put", key, incarnations[key])
            self._store(key, loads(blob), incarnations[key])
            nbytes[key] = len(blob)
        return [Message(self.name, msg.sender, m.UPDATE_DATA_REPLY, msg.channel, False,
                        msg.keys, {"nbytes": nbytes, "incarnations": incarnations})]

    def _on_free_keys(self, msg: Message) -> list[Message]:
        out: list[Message] = []
        stimulus = msg.payload.get("stimulus_id")
        for key, incarnation in msg.payload["incarnations"].items():
            ts = self.tasks.get(key)
            if ts is not None and (not self.variant.incarnations or incarnation == ts.incarnation):
                if ts.state in (EXECUTING, LONG_RUNNING):
                    # A thread cannot be stopped: dask's executing -> cancelled.
                    ts.previous = ts.state
                    self._transition(ts, CANCELLED, stimulus)
                elif ts.state in (READY, WAITING):
                    out += self._release(ts, stimulus)
                continue
            rule = self.variant.rule(m.FREE_KEYS) if self.variant.rules else None
            if rule is not None and (copies := self.copies.get(key)):
                # A protocol's own rule (``ProtocolVariant.rules``): is this free about the copy
                # held here now?
                held = max(copies)
                if not rule(Arrival(m.FREE_KEYS, self.name, self.name, key, incarnation, held,
                                    "memory")):
                    self.record(self.name, "worker.free_stale", key, incarnation, held)
                    continue
            # Like dask's worker, every copy released from memory is reported back.
            for inc in self._free(key, incarnation):
                out.append(self._to_scheduler(m.RELEASE_WORKER_DATA, (key,), worker=self.name,
                                              incarnation=inc))
        return out

    # -- compute -------------------------------------------------------------------

    def _transition(self, ts: WorkerTask, finish: str, stimulus: str | None) -> None:
        """Change a task's state; recorded unless the trace already says so.

        The ordinary path — ``released → ready → executing → memory`` — is told by the
        ``compute-task`` and ``execute`` receipts and the ``worker.put``; recording it
        again cost a quarter of a trivial task's time.  Every other transition (waiting,
        cancelled, resumed, long-running, error, released) is recorded.
        """
        if (ts.state, finish) not in _TOLD:
            self.record(self.name, "worker.transition", ts.key, ts.state, finish, stimulus)
        ts.state = finish

    def _queue(self, ts: WorkerTask) -> None:
        """A ready task waits for a thread (and, if it needs any, for resources)."""
        if ts.spec.get("resources"):
            self.constrained.append(ts.key, ts.spec["priority"])
        else:
            self.ready.append(ts.key, ts.spec["priority"])

    def _remote(self, who_has: dict[str, list[str]]) -> dict[str, list[str]]:
        """The dependencies not held here, each with the peers that hold it.  As dask's worker,
        this worker never fetches from itself: a dependency the scheduler says only we hold,
        and we do not, has no peer (it is missing).

        A method of its own, not a comprehension in ``_on_compute_task``: one there makes
        ``self`` a cell, made on every call — every task's, most of which have no dependency.
        """
        name, data = self.name, self.data
        return {dep: [w for w in ws if w != name] for dep, ws in who_has.items()
                if dep not in data}

    def _on_compute_task(self, msg: Message) -> list[Message]:
        p = msg.payload
        key = p["key"]
        stimulus = p.get("stimulus_id")
        ts = self.tasks.get(key)
        if ts is not None:
            if ts.state == CANCELLED:
                # dask's cancelled -> executing: the run that was cancelled is still going,
                # and its result will serve this request (reported under the new run id).
                self._transition(ts, ts.previous or EXECUTING, stimulus)
                ts.previous = None
                ts.spec, ts.incarnation = p, p["incarnation"]
            return []  # already queued or running: dask only logs it
        ts = self.tasks[key] = WorkerTask(key, RELEASED, p, p["incarnation"])
        who_has = p["who_has"]
        if not who_has:
            # No dependencies (most tasks): straight to the ready queue, told by the
            # compute-task's receipt (released -> ready is not recorded).
            ts.state = READY
            if p.get("resources"):
                self.constrained.append(key, p["priority"])
            else:
                self.ready.append(key, p["priority"])
            if len(self.executing) >= self.nthreads:
                return []  # every thread is busy: the task waits for one to finish
            return self._ensure_computing(stimulus)
        remote = self._remote(who_has)
        gone = [dep for dep, ws in remote.items() if not ws]
        if gone:
            self._transition(ts, WAITING, stimulus)
            self._missing(ts, gone)
            return []
        if not remote:
            self._transition(ts, READY, stimulus)
            self._queue(ts)
            return self._ensure_computing(stimulus)
        # Fetch what another worker holds, then queue (one RPC per peer).
        self._transition(ts, WAITING, stimulus)
        out = []
        by_peer: dict[str, list[str]] = {}
        for dep, holders in remote.items():
            by_peer.setdefault(holders[0], []).append(dep)
        ts.waiting, ts.fetched, ts.missing = set(by_peer), {}, []
        for peer, deps in by_peer.items():
            self._calls += 1
            call = f"rpc:{self.name}#{self._calls}"
            self._fetching[call] = ts
            out.append(Message(self.name, peer, m.GET_DATA, call, False, tuple(deps), {}))
        return out

    def _on_acquire_replicas(self, msg: Message) -> list[Message]:
        """Fetch copies of keys held elsewhere (dask's ``acquire-replicas``: ``Client.replicate``,
        a retiring worker's data): each comes back as a replica, told with ``add-keys`` (a key
        its holder no longer had, as missing); one held already is told at once."""
        held = {k: max(self.copies[k]) for k in msg.payload["who_has"] if k in self.copies}
        out = [self._to_scheduler(m.ADD_KEYS, tuple(held), worker=self.name,
                                  incarnations=held, missing=[])] if held else []
        by_peer: dict[str, list[str]] = {}
        for key, holders in msg.payload["who_has"].items():
            peers = [w for w in holders if w != self.name]
            if key not in held and peers:
                by_peer.setdefault(peers[0], []).append(key)
        for peer, keys in by_peer.items():
            self._calls += 1
            call = f"rpc:{self.name}#{self._calls}"
            self._acquiring.add(call)
            out.append(Message(self.name, peer, m.GET_DATA, call, False, tuple(keys), {}))
        return out

    def _keep_replicas(self, msg: Message, acquired: bool = False
                       ) -> tuple[dict[str, Any], list[Message]]:
        """The values of a ``get-data`` reply, those not held already kept as replicas and
        told to the scheduler (dask's flight -> memory, then ``add-keys``)."""
        fetched = {k: loads(v) for k, v in msg.payload["data"].items()}
        if "received_at" in msg.payload and fetched:
            start, stop = msg.payload["sent_at"], msg.payload["received_at"]
            self.transfer_incoming_log.append(_transfer(start, stop, fetched, msg.sender))
        sent = msg.payload.get("incarnations", {})
        kept = {k: sent.get(k, 0) for k in fetched if k not in self.data}
        for key, incarnation in kept.items():
            self._store(key, fetched[key], incarnation)
        # What an acquisition asked for and the holder no longer had is told too: the
        # scheduler asks again (a retirement's next pass); a task's missing data is its own.
        missing = list(msg.payload.get("missing", ())) if acquired else []
        out = [self._to_scheduler(m.ADD_KEYS, tuple(kept) + tuple(missing), worker=self.name,
                                  incarnations=kept, missing=missing)] if kept or missing else []
        return fetched, out

    def _on_get_data_reply(self, msg: Message) -> list[Message]:
        if msg.channel in self._acquiring:
            self._acquiring.discard(msg.channel)
            return self._keep_replicas(msg, acquired=True)[1]
        ts = self._fetching.pop(msg.channel)
        ts.waiting.discard(msg.sender)
        # As dask's worker (flight -> memory): what it fetched it keeps, a replica, and tells
        # the scheduler (``add-keys``), which frees it with the key, or drops it sooner.
        fetched, out = self._keep_replicas(msg)
        ts.fetched.update(fetched)
        if "received_at" in msg.payload:  # dask's transfer entry of the task's startstops
            ts.transfers = [*(ts.transfers or ()), {
                "action": "transfer", "start": msg.payload["sent_at"],
                "stop": msg.payload["received_at"], "source": msg.sender}]
        ts.missing.extend(msg.payload["missing"])
        if ts.waiting or self.tasks.get(ts.key) is not ts:
            return out  # more to come, or the task was freed while its data travelled
        if ts.missing:
            self._missing(ts, ts.missing)
            return out
        self._transition(ts, READY, f"{msg.op}-{msg.msg_id}")
        self._queue(ts)
        return self._ensure_computing(None, out)

    def _missing(self, ts: WorkerTask, deps: list[str]) -> None:
        """The task waits for data nobody has, as dask's does (its dependency is in state
        ``missing``; dask's worker asks the scheduler where it is, twice a second, for
        ever).  The task stays waiting: its future stays pending."""
        ts.missing = list(deps)
        for dep in deps:
            self.record(self.name, "worker.missing_dependency", ts.key, dep)

    def missing(self) -> dict[str, list[str]]:
        """Tasks waiting for data that is nowhere: task -> its missing dependencies."""
        return {k: ts.missing for k, ts in self.tasks.items()
                if ts.state == WAITING and ts.missing and not ts.waiting}

    def free_slots(self) -> int:
        return self.nthreads - len(self.executing)

    def _ensure_computing(self, stimulus: str | None, out: list[Message] | None = None
                          ) -> list[Message]:
        """Give free threads to ready tasks, highest priority first: an ``execute`` each, appended to
        ``out`` (a new list if none is given), which is returned."""
        if out is None:
            out = []
        ready, executing = self.ready, self.executing
        if not (ready or self.constrained) or len(executing) >= self.nthreads:
            return out
        tasks, name = self.tasks, self.name
        while len(executing) < self.nthreads:
            key = ready.popleft() if not self.constrained and ready else self._next_ready()
            if key is None:
                break
            ts = tasks[key]
            if ts.state == READY:
                ts.state = EXECUTING  # told by the execute (see _transition): not recorded
            else:
                self._transition(ts, EXECUTING, stimulus)
            key = ts.key
            executing.add(key)
            self._runs = runs = self._runs + 1
            out.append(Message(name, name, m.EXECUTE, f"run:{name}#{runs}", False, (key,),
                               _NO_PAYLOAD))
        return out

    def _next_ready(self) -> str | None:
        """The next task to run: the higher priority of the ready queue's first and the
        constrained queue's first, if enough of what it needs is free (dask's
        ``_next_ready_task``); the constrained one takes its resources."""
        top = self.constrained.peek()
        if top is not None:
            need = self.tasks[top[1]].spec["resources"]
            if not resources.fits(self.free_resources, need):
                top = None
        first = self.ready.peek()
        if top is None and first is None:
            return None
        if top is None or (first is not None and first[0] <= top[0]):
            return self.ready.popleft()
        key = self.constrained.popleft()
        need = self.tasks[key].spec["resources"]
        resources.take(self.free_resources, need)
        self._taken[key] = need
        return key

    def _give_back(self, key: str) -> None:
        need = self._taken.pop(key, None)
        if need is not None:
            resources.give_back(self.free_resources, need)

    def begin(self, key: str) -> tuple[TaskRun | None, list[Message]]:
        """The ``execute`` of ``key`` is delivered: what to call, or None if nothing runs.

        Deserializes the function and arguments (travelling futures are adopted
        here, under the driver's lock); the call itself is the driver's.
        """
        ts = self.tasks.get(key)
        if ts is None or ts.state != EXECUTING:
            if ts is not None and ts.state == CANCELLED:
                # Cancelled before its thread picked it up: dask's AlreadyCancelledEvent.
                return None, self._release(ts, None)
            return None, []
        p = ts.spec
        fblob, ablob = p["func"], p["args"]
        if _FUTURE_MARK not in ablob and _FUTURE_MARK not in fblob:
            # No future travels in this task (the usual case): nothing to adopt.
            try:
                if ts.missing:
                    raise LookupError(f"dependencies {ts.missing} were gone from their workers")
                func = loaded_functions.get(fblob)  # load_function's cache, looked in first
                if func is None:
                    func = load_function(fblob)
                args, kwargs = loads(ablob)
                if p["who_has"]:  # no dependencies, no placeholder to fill (most tasks)
                    values = self.data if not ts.fetched else {**self.data, **ts.fetched}
                    args, kwargs = substitute(args, values), substitute(kwargs, values)
                return TaskRun(self.name, key, func, args, kwargs), []
            except Exception as exc:  # noqa: BLE001 - the task cannot even start: it erred
                return None, self.finish(key, False, exc)
        token = running_task.set(key)
        try:
            with adopting(self._adopt) as adoption:
                if ts.missing:
                    raise LookupError(f"dependencies {ts.missing} were gone from their workers")
                func = load_function(fblob)
                args, kwargs = loads(ablob)
                values = self.data if not ts.fetched else {**self.data, **ts.fetched}
                args, kwargs = substitute(args, values), substitute(kwargs, values)
        except Exception as exc:  # noqa: BLE001 - the task cannot even start: it erred
            return None, [*adoption.messages, *self.finish(key, False, exc)]
        finally:
            running_task.reset(token)
        return TaskRun(self.name, key, func, args, kwargs), adoption.messages

    def finish(self, key: str, ok: bool, value: Any,
               timing: tuple[int, float, float] | None = None) -> list[Message]:
        """A run of ``key`` ended (``ok``: ``value`` is its result, else the exception).
        ``timing`` — ``(thread, start, stop)``, given by the driver while the scheduler keeps
        a task stream — goes in the report, as dask's worker's always does."""
        ts = self.tasks.get(key)
        if ts is None:
            return []  # the worker closed, or restarted, while its thread ran
        self.executing.discard(key)
        self.long_running.discard(key)
        if self._taken:
            self._give_back(key)
        if ts.state == CANCELLED:
            # Nobody wants it any more: dask's cancelled -> released, nothing is reported.
            return self._release(ts, None)
        del self.tasks[key]
        if ok:
            if ts.state == EXECUTING:
                ts.state = MEMORY  # told by the worker.put (see _transition): not recorded
            else:
                self._transition(ts, MEMORY, None)
            incarnation, name = ts.incarnation, self.name
            self._store(key, value, incarnation)
            blob = _TYPES.get(type(value))
            out = [Message(name, m.SCHEDULER, m.TASK_FINISHED, self._stream, True, (key,),
                           {"worker": name, "incarnation": incarnation,
                            "type": _dump_type(value) if blob is None else blob})]
            if timing is not None:
                from dask.sizeof import sizeof
                from dask.utils import typename

                out[0].payload.update(_timed(timing, ts.transfers), nbytes=sizeof(value),
                                      typename=typename(type(value)))
        else:
            self._transition(ts, ERROR, None)
            out = [self._to_scheduler(m.TASK_ERRED, (key,), worker=self.name,
                                      exception=_dump_exception(value),
                                      text=f"{type(value).__name__}: {value}",
                                      incarnation=ts.incarnation)]
            if timing is not None:
                out[0].payload.update(_timed(timing, ts.transfers), exception_text=repr(value))
        if self.ready or self.constrained:
            self._ensure_computing(None, out)
        return out

    def _release(self, ts: WorkerTask, stimulus: str | None) -> list[Message]:
        """Forget a task that produced nothing: its slot (if any) goes to the next one."""
        self.executing.discard(ts.key)
        self.long_running.discard(ts.key)
        self._give_back(ts.key)
        if ts.state == READY:
            (self.constrained if ts.key in self.constrained else self.ready).remove(ts.key)
        del self.tasks[ts.key]
        self._transition(ts, RELEASED, stimulus)
        self._transition(ts, FORGOTTEN, stimulus)
        return self._ensure_computing(stimulus)

    def secede(self, key: str) -> list[Message]:
        """The running task ``key`` leaves its thread slot (dask's ``secede()``)."""
        ts = self.tasks.get(key)
        if ts is None or key not in self.executing:
            return []
        self.executing.discard(key)
        self.long_running.add(key)
        self.record(self.name, "worker.secede", key)
        if ts.state == CANCELLED:
            ts.previous = LONG_RUNNING  # dask tells a cancelled task's scheduler nothing
        else:
            self._transition(ts, LONG_RUNNING, None)
        return self._ensure_computing(None)

    def rejoin(self, key: str) -> None:
        """A seceded task takes a slot again (the driver waits for :meth:`free_slots` first)."""
        ts = self.tasks.get(key)
        if ts is None or key not in self.long_running:
            return
        self.long_running.discard(key)
        self.executing.add(key)
        self.record(self.name, "worker.rejoin", key)
        if ts.state == CANCELLED:
            ts.previous = EXECUTING
        else:
            self._transition(ts, EXECUTING, None)

    def log_event(self, topic: Any, msg: Any, time: float) -> Message:
        """``Worker.log_event`` in a task: the event rides the worker's stream."""
        return self._to_scheduler(m.LOG_EVENT, (), worker=self.name, topic=topic, msg=msg,
                                  time=time)

    def _on_steal_request(self, msg: Message) -> list[Message]:
        """The scheduler wants ``key`` for another worker: give it up if no thread has it
        yet, and say which state it was found in (dask's ``_handle_steal_request``)."""
        key, stimulus = msg.payload["key"], msg.payload["stimulus_id"]
        ts = self.tasks.get(key)
        state = ts.state if ts is not None else (MEMORY if key in self.data else None)
        out = [self._to_scheduler(m.STEAL_RESPONSE, (key,), key=key, state=state,
                                  stimulus_id=stimulus)]
        if ts is not None and state in (READY, WAITING):
            if self.variant.steal_release:
                # The worker before PR 5046 (2021.10.0): release_key reported a task released
                # while processing — "this path is only hit with work stealing".
                out.append(self._to_scheduler(m.STEAL_RELEASE, (key,), key=key,
                                              worker=self.name))
            out += self._release(ts, stimulus)
        return out

    def _adopt(self, key: str) -> tuple[Any, list[Message]]:
        fs, messages, future_id = self.client.adopt(key, running_task.get())
        return self.bind(self.client, key, fs, future_id), messages

    # -- gather ----------------------------------------------------------------------

    def _on_get_data(self, msg: Message) -> list[Message]:
        data, missing, errors, incarnations = {}, [], {}, {}
        for key in msg.keys:
            if key not in self.data:
                missing.append(key)
                continue
            try:
                data[key] = dumps(self.data[key])
            except TypeError as exc:
                errors[key] = str(exc)
                continue
            incarnations[key] = max(self.copies[key])
        reply = {"data": data, "missing": missing, "errors": errors,
                 "incarnations": incarnations}
        if "received_at" in msg.payload and data:  # timed by the driver: dask's outgoing log
            at = msg.payload["received_at"]
            who = msg.sender if msg.sender.startswith("worker") else None
            entry = _transfer(at, at, {k: self.data[k] for k in data}, who)
            self.transfer_outgoing_log.append({**entry, "compressed": 1})
        if "sent_at" in msg.payload:  # timed for a task stream: echoed
            reply["sent_at"] = msg.payload["sent_at"]
        return [Message(self.name, msg.sender, m.GET_DATA_REPLY, msg.channel, False, msg.keys,
                        reply)]

    def _on_remove_replicas(self, msg: Message) -> list[Message]:
        """The scheduler no longer counts this copy (dask's ``remove-replicas``): drop it —
        unless a task here still waits to use it; then it stays, and says so again."""
        needed = {dep for ts in self.tasks.values() if ts.state in (WAITING, READY)
                  for dep in ts.spec["who_has"]}
        kept = {}
        for key, incarnation in msg.payload["incarnations"].items():
            if key in needed and key in self.copies:
                kept[key] = max(self.copies[key])
            else:
                self._free(key, incarnation)
        return [self._to_scheduler(m.ADD_KEYS, tuple(kept), worker=self.name,
                                   incarnations=kept, missing=[])] if kept else []

    # -- retirement, heartbeats, closing ----------------------------------------------------

    def _on_worker_status_change(self, msg: Message) -> list[Message]:
        """``closing_gracefully``: the worker is being retired.  Its heartbeat is due while
        the retirement goes on (dask's comes every ``heartbeat-interval``, 0.5 s on a small
        cluster, whatever the scheduler does): modelled as one heartbeat sent now, which
        the network may deliver at any point of the retirement, its removal included."""
        self.status = msg.payload["status"]
        if self.status != "closing_gracefully":
            return []
        self._calls += 1
        call = f"rpc:{self.name}#{self._calls}"
        self._heartbeats.add(call)
        return [Message(self.name, m.SCHEDULER, m.HEARTBEAT_WORKER, call, False, (),
                        {"worker": self.name})]

    def _on_heartbeat_reply(self, msg: Message) -> list[Message]:
        """The scheduler answered a heartbeat.  "missing": it removed this worker, whose
        ``close`` may still be on the stream.  Since PR 8522 (2024.2.1) the worker closes,
        its nanny with it; before, it closed with ``nanny=False`` and the nanny, seeing its
        process end unasked, started a new one, which registers with the scheduler again
        (``heartbeat_restarts``)."""
        if msg.channel not in self._heartbeats:
            return []  # an earlier life's heartbeat
        self._heartbeats.discard(msg.channel)
        if msg.payload["status"] != "missing":
            return []
        if self.variant.heartbeat_restarts and self.nanny:
            return self._restart()
        self._close("worker-heartbeat-missing")
        return []

    def _on_close(self, msg: Message) -> list[Message]:
        self._close(msg.payload["reason"])
        return []

    def _close(self, reason: str) -> None:
        self.closed = True
        self.record(self.name, "worker.closed", None, reason)
        self.log.info("Stopping worker at %s. Reason: %s", self.name, reason)
        self._forget_life()

    def shutdown(self, reason: str) -> list[Message]:
        """The worker closes on its own (its cluster closes it: ``LocalCluster.scale`` down),
        its nanny with it; its stream's last message, ``close-stream``, tells the scheduler,
        which removes it as a worker lost (dask: ``handle-worker-cleanup``)."""
        if self.closed:
            return []
        self._close(reason)
        return [self._to_scheduler(m.CLOSE_STREAM, (), worker=self.name)]

    def _forget_life(self) -> None:
        """What a worker process held goes with it."""
        self.data, self.copies, self.tasks = {}, {}, {}
        self.ready.clear()
        self.constrained.clear()
        self.free_resources, self._taken = dict(self.has), {}
        self.executing.clear()
        self.long_running.clear()
        self._fetching, self._heartbeats, self._acquiring = {}, set(), set()

    def _restart(self) -> list[Message]:
        """The nanny starts a new worker process: empty, with new connections, registering
        with the scheduler under the same name."""
        self._forget_life()
        self.life += 1
        self.status = "running"
        self._stream = f"{m.stream_channel(self.name, m.SCHEDULER)}#{self.life}"
        self._from_scheduler = f"{m.stream_channel(m.SCHEDULER, self.name)}#{self.life}"
        self.record(self.name, "worker.restarted", None, self.life)
        self._calls += 1
        return [Message(self.name, m.SCHEDULER, m.REGISTER_WORKER, f"rpc:{self.name}#{self._calls}",
                        False, (), {"life": self.life, "nthreads": self.nthreads})]

    _handlers = {
        m.WORKER_STATUS_CHANGE: _on_worker_status_change,
        m.QUERY_REPLY: _on_heartbeat_reply,
        m.CLOSE_WORKER: _on_close,
        m.ACQUIRE_REPLICAS: _on_acquire_replicas,
        m.UPDATE_DATA: _on_update_data,
        m.FREE_KEYS: _on_free_keys,
        m.COMPUTE_TASK: _on_compute_task,
        m.STEAL_REQUEST: _on_steal_request,
        m.GET_DATA: _on_get_data,
        m.GET_DATA_REPLY: _on_get_data_reply,
        m.REMOVE_REPLICAS: _on_remove_replicas,
    }


_TYPES: dict[type, bytes] = {}


def _transfer(start: float, stop: float, values: dict[str, Any], who: str | None
              ) -> dict[str, Any]:
    """An entry of a transfer log, as dask's worker writes it (a duration of at least a
    millisecond; ``compressed`` — an in-process comm's one frame — on the outgoing side)."""
    from dask.sizeof import sizeof

    nbytes = {k: sizeof(v) for k, v in values.items()}
    total = sum(nbytes.values())
    duration = max(0.001, stop - start)
    return {"start": start, "stop": stop, "middle": (start + stop) / 2, "duration": duration,
            "who": who, "keys": nbytes, "total": total, "bandwidth": total / duration}


def _timed(timing: tuple[int, float, float], transfers: list | None) -> dict[str, Any]:
    thread, start, stop = timing
    return {"thread": thread, "startstops": [*(transfers or ()), {
        "action": "compute", "start": start, "stop": stop}]}


def _dump_type(value: Any) -> bytes | None:
    """The result's type, pickled once per type (dask reports it for ``Future.type``)."""
    t = type(value)
    blob = _TYPES.get(t)
    if blob is None:
        try:
            blob = _TYPES[t] = dumps(t)
        except TypeError:
            return None
    return blob


def _dump_exception(exc: BaseException) -> bytes:
    """The task's exception, pickled — or, if it cannot make the round trip (an exception
    whose ``__init__`` takes other arguments than ``args``), a RuntimeError saying what it was."""
    try:
        blob = dumps(exc)
        loads(blob)
        return blob
    except Exception:  # noqa: BLE001 - whatever breaks, the client must get something it can raise
        return dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
