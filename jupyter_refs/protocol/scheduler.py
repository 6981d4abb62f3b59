"""The scheduler's side of the protocol: tasks, who wants them, who has them.

Modelled on dask's ``Scheduler`` closely enough that its races happen for the
same reasons: ``who_wants`` is a *set* of clients (a second desire is a
no-op, so a single release empties it), ``client-releases-keys`` forgets a key
nobody else wants, and a scatter is registered by ``update_data`` after the
worker put — with no transition, exactly as dask does it.

Race 2 lives in ``client-desires-keys``: under legacy, a desire for a key the
scheduler has forgotten creates a task with no run spec (a *ghost*); the
next transition that reaches it breaks an invariant, and — as in dask, where
the assertion escapes the client's stream handler and closes the stream —
the client whose message triggered it is removed and told ``stream-closed``.

Sans-IO: :meth:`SchedulerState.handle` takes one message and returns the
messages to send.  State changes go through :meth:`_transitions`, a
recommendations loop like dask's, whose steps are declared in ``_TRANSITIONS``.

A set of keys is walked sorted wherever the walk decides what is sent or in what order
(a task's dependencies and dependents): a string's hash differs from process to process,
and a schedule string, which names deliveries by their order, must replay the same run in
every process.  (dask walks these sets in hash order; nothing a user sees depends on it.)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import messages as m
from . import resources
from .amm import ActiveMemoryManager
from .computations import MAX_HISTORY, Computation, joined
from .extensions import EXTENSION_OPS, Extensions
from .logs import NodeLog
from .messages import FIRE_AND_FORGET, SCHEDULER, Message
from .serialize import dumps
from .stealing import WorkStealing
from .task_stream import TaskStream
from .variants import Arrival, ProtocolVariant

RELEASED, WAITING, PROCESSING, MEMORY, ERRED, FORGOTTEN = (
    "released", "waiting", "processing", "memory", "erred", "forgotten",
)
#: dask's state of a task that needs resources no worker has (``resources.py``).
NO_WORKER = "no-worker"

LOST_DEPENDENCIES = "lost dependencies"
SET_TWICE = "Future can be set only once"
#: What a run spec carries that dask sends as annotations (``retries``, the ``workers``
#: restriction and its looseness), which its update_graph applies to new tasks only.
_ANNOTATIONS = ("workers", "allow_other_workers", "retries")


class InvariantError(AssertionError):
    """A transition met a task in a state it cannot be in: dask's ``validate`` asserts."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(message)


#: The empty key set a task starts with: shared and never written, so that the tasks of a
#: 10,000-task ``map`` (no dependencies, no dependents) do not make 30,000 empty sets for the
#: collector to walk.  A task's own set replaces it when the first key is added.
NO_KEYS: frozenset[str] = frozenset()


_NO_WANTS: dict[str, int] = {}  # a client that wants nothing (shared, never written)
_NO_FIELDS: dict[str, Any] = {}  # a report with nothing but its generation (shared, never written)


@dataclass(slots=True, eq=False)
class TaskState:
    key: str
    state: str
    run_spec: dict[str, Any] | None
    dependencies: set[str] | frozenset[str] = NO_KEYS
    dependents: set[str] | frozenset[str] = NO_KEYS
    who_wants: set[str] = field(default_factory=set)
    #: Worker -> incarnation of the copy it holds (see ``ProtocolVariant.incarnations``).
    who_has: dict[str, int] = field(default_factory=dict)
    waiting_on: set[str] | frozenset[str] = NO_KEYS
    processing_on: str | None = None
    #: The run id (incarnation) of the compute-task sent to ``processing_on``.
    run_id: int | None = None
    exception: bytes | None = None
    exception_text: str | None = None
    traceback: str | None = None
    #: The result's type, pickled (dask keeps ``TaskState.type`` for the clients' reprs).
    type: bytes | None = None
    #: Retries left (``submit(retries=)``).
    retries: int = 0
    #: dask's ``TaskState.priority``: (-user priority, graph generation, order in its graph);
    #: a worker runs its ready tasks lowest first.
    priority: tuple = ()


@dataclass(slots=True)
class _ScatterCall:
    """A client's scatter RPC, waiting for the worker puts it started."""

    client_msg: Message
    waiting: set[str]
    #: key -> {worker: incarnation of the copy being put there}
    puts: dict[str, dict[str, int]] = field(default_factory=dict)
    #: key -> {worker: incarnation the worker says it holds after the put}
    held: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(slots=True)
class _RetireCall:
    """A client's ``retire_workers`` RPC, waiting for its workers to be retired."""

    client_msg: Message
    close: bool
    waiting: set[str]
    #: The workers retired, in order (the client describes each as dask's identity()).
    retired: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _CancelJob:
    """One key of a cancel before PR 7583 (``cancel_rpc``): dask's ``_cancel_key`` coroutine
    (before PR 6016, ``cancel_key`` and its ``call_later`` retries)."""

    key: str
    client: str
    force: bool
    #: The ``cancel`` RPC's channel this job answers for (None: a dependent, or a retry of a
    #: call already answered).
    call: str | None
    #: The job whose cancel awaits this one (its dependents' ``gather``), if any.
    parent: int | None
    polls: int = 0
    #: Dependents' jobs not yet done (the key is reported and released after them).
    waiting: int = 0
    cancelled: bool = False


@dataclass(slots=True)
class _GatherCall:
    client_msg: Message
    waiting: set[str]
    data: dict[str, bytes] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def _by_start(transitions: dict[tuple[str, str], Callable[..., None]]
              ) -> dict[str, dict[str, Callable[..., None]]]:
    """A table of transition steps keyed by ``(start, finish)``, regrouped by start state."""
    steps: dict[str, dict[str, Callable[..., None]]] = {}
    for (start, finish), step in transitions.items():
        steps.setdefault(start, {})[finish] = step
    return steps


#: The messages produced while handling one stimulus, in sending order (a plain list: one
#: is made per message handled).
Out = list[Message]


class SchedulerState:
    def __init__(self, variant: ProtocolVariant, workers: list[str], record: Callable[..., None]):
        self.variant = variant
        self.record = record
        # Built without type calls (list(), dict.fromkeys(), count(), set()): the explorer makes
        # a scheduler per run, and each of those calls costs more than a literal.
        self.workers = workers = [*workers]
        self.tasks: dict[str, TaskState] = {}
        #: Per client, the keys it wants and the newest generation it asked for.
        self.wants: dict[str, dict[str, int]] = {}
        #: fixed: client -> key -> the newest generation released (for scatters still in flight)
        self._released_gens: dict[str, dict[str, int]] = {}
        #: The last incarnation (run id) handed out, and the last RPC call number.
        self._incarnation = 0
        self._call = 0
        #: dask's ``Scheduler.generation``: one per graph (dask also shares one among graphs
        #: that come within ``fifo_timeout``; the model has no clock here, so each is its own).
        self._generation = 0
        #: The clients connected (``add_client``): the broker's default subscribers.
        self.clients: set[str] = set()
        #: Each worker's resources (those without any are not here), and the tasks waiting
        #: in ``no-worker`` for a worker that has what they need (``resources.py``).
        self.resources: dict[str, dict[str, float]] = {}
        self.unrunnable: set[str] = set()
        self._next_worker = 0
        #: Worker -> the keys processing there, in the order they were sent (dask's
        #: ``WorkerState.processing``): its length is the worker's load, and work stealing
        #: takes from its end.
        self.processing: dict[str, dict[str, None]] = {}
        #: Threads per worker (the driver sets it): a worker with fewer tasks processing is idle.
        self.nthreads: dict[str, int] = {}
        for worker in workers:
            self.processing[worker] = {}
            self.nthreads[worker] = 1
        self._scatters: dict[str, _ScatterCall] = {}
        self._gathers: dict[str, _GatherCall] = {}
        #: Before PR 7583: the keys' cancels waiting for their key (``cancel_rpc``), and the
        #: ``cancel`` RPCs waiting for their keys' jobs (channel -> [request, jobs left]).
        self._cancel_jobs: dict[int, _CancelJob] = {}
        self._cancel_calls: dict[str, list] = {}
        self._cancel_job = 0
        self._streams: dict[str, str] = {}  # receiver -> its stream's name, made once
        #: Holders of keys that are not clients with a stream (variable-x, queue-x, …).
        self.pseudo: set[str] = {FIRE_AND_FORGET}  # fire_and_forget's: holds keys, has no stream
        self._extensions: Extensions | None = None
        self._stealing: WorkStealing | None = None
        #: Workers being retired -> the ``retire_workers`` call that waits for them.
        self.retiring: dict[str, _RetireCall] = {}
        #: Keys a worker is fetching for a retirement -> that worker (one fetch at a time).
        self._acquiring: dict[str, str] = {}
        #: Worker -> its life: how often its nanny restarted it (its streams are new ones).
        self.lives: dict[str, int] = {}
        self._computations: deque[Computation] | None = None

        self._amm: ActiveMemoryManager | None = None
        #: dask's TaskStreamPlugin, installed when a client first asks for the stream.
        self.task_stream: TaskStream | None = None
        #: Whether the active memory manager runs from the start (dask's config, read by the
        #: driver: ``distributed.scheduler.active-memory-manager.start``).
        self.amm_starts = True
        #: dask's scheduler log (``logs.py``), and each worker's name as dask's log lines
        #: give it (``LocalCluster``'s: its number); the driver fills both.
        self.log = NodeLog("distributed.scheduler")
        self.names: dict[str, Any] = {}
        #: dask's ``TaskPrefix.duration_average`` by key prefix, kept while someone reads
        #: them (an adaptive cluster's target): the workers then time their tasks.
        self.durations: dict[str, float] | None = None

    def add_worker(self, worker: str, nthreads: int,
                   has: dict[str, float] | None = None) -> list[Message]:
        """A worker joins (dask's ``add_worker``): it takes new tasks from now on; nothing
        already placed moves (work stealing may move queued tasks later).  Tasks waiting in
        ``no-worker`` that it has the resources for go to it: the messages to send."""
        if worker in self.processing:
            raise ValueError(f"{worker} is a worker already")
        self.workers.append(worker)
        self.processing[worker] = {}
        self.nthreads[worker] = nthreads
        if has:
            self.resources[worker] = dict(has)
        self.record(SCHEDULER, "worker.added", None, worker, nthreads)
        out: Out = []
        if self.unrunnable:
            recs = {key: PROCESSING for key in sorted(self.unrunnable)
                    if resources.fits(self.resources.get(worker, resources.NONE),
                                      self.tasks[key].run_spec["resources"])}
            self._transitions(recs, f"add-worker-{worker}", out)
        return out

    def _runnable(self, ts: TaskState) -> bool:
        """Whether some worker has the resources ``ts`` needs (dask's ``valid_workers``)."""
        need = ts.run_spec["resources"]
        have = self.resources
        return any(resources.fits(have.get(w, resources.NONE), need) for w in self.workers)

    def add_client(self, client: str) -> None:
        """A client connects (dask's ``add_client``): it gets the default topics' events
        (``print``, ``warn``; see ``broker.py``), and a report meant for every client — a
        cancel's, since PR 7583 — reaches it, whether it wants anything yet or not.  A
        direct call, as ``add_worker``."""
        self.clients.add(client)
        self.wants.setdefault(client, {})
        self.log.info("Receive client connection: %s", client)

    def let_go_of_parts(self) -> None:
        """Unlink the parts (stealing, the AMM) from this scheduler: each holds the other, and
        a disposed explorer run is freed by reference counting, without a collection."""
        for part in (self._stealing, self._amm):
            if part is not None:
                part.scheduler = None

    @property
    def amm(self) -> ActiveMemoryManager:
        """The active memory manager (made when first needed: most runs never replicate)."""
        if self._amm is None:
            self._amm = ActiveMemoryManager(self, self.amm_starts)
        return self._amm

    @property
    def extensions(self) -> Extensions:
        """The Variable and Queue extensions, made at their first call: most clusters (and
        nearly every run the explorer makes) never use them."""
        ext = self._extensions
        if ext is None:
            ext = self._extensions = Extensions(self)
        return ext

    @property
    def computations(self) -> deque[Computation]:
        """dask's ``Scheduler.computations``: the graphs received, grouped (computations.py)."""
        history = self._computations
        if history is None:
            history = self._computations = deque(maxlen=MAX_HISTORY)
        return history

    # -- plumbing ----------------------------------------------------------------

    def handle(self, msg: Message) -> list[Message]:
        out: Out = []
        stimulus = f"{msg.op}-{msg.msg_id}"
        try:
            self._handlers[msg.op](self, msg, out, stimulus)
            ext = self._extensions
            if ext is not None and ext.parked:
                ext.retry(out, stimulus)
            if self.retiring:
                self._retire_progress(out, stimulus)
        except InvariantError as exc:
            client = msg.payload.get("client")
            self.record(SCHEDULER, "scheduler.assertion", exc.key, str(exc), stimulus)
            if client is None:
                raise
            # The assertion escaped the handler of this client's stream: dask closes
            # the stream and removes the client.  Nothing the handler prepared is sent
            # (dask sends a stimulus's messages only once its transitions succeed), but
            # the state it changed stays changed.
            out: Out = []
            self._remove_client(client, f"AssertionError: {exc}", out, stimulus)
        return out

    def _remove_client(self, client: str, reason: str, out: Out, stimulus: str) -> None:
        """Drop ``client``: release every key it wants, then close its stream."""
        self.record(SCHEDULER, "client.removed", None, client, reason)
        self.log.info("Remove client %s", client)
        self.clients.discard(client)
        recs: dict[str, str] = {}
        for key, gen in sorted(self.wants.get(client, {}).items()):
            self._release(client, key, gen, recs)
        self.wants.pop(client, None)
        self._transitions(recs, stimulus, out)
        self.send(out, client, m.STREAM_CLOSED, (), reason=reason)

    def send(self, out: Out, receiver: str, op: str, keys: tuple[str, ...],
              **payload: Any) -> None:
        if receiver == FIRE_AND_FORGET:
            return  # a pseudo-client (dask's): it has no stream, nobody listens
        channel = self._streams.get(receiver) or self._stream_to(receiver)
        out.append(Message(SCHEDULER, receiver, op, channel, True, keys, payload))

    def _stream_to(self, receiver: str) -> str:
        """The name of the stream to ``receiver``, made once (the hot senders look it up
        in ``_streams`` first, and come here only the first time)."""
        channel = m.stream_channel(SCHEDULER, receiver)
        life = self.lives.get(receiver)
        if life:  # a worker its nanny restarted: a new connection
            channel = f"{channel}#{life}"
        self._streams[receiver] = channel
        return channel

    def _rpc(self, out: Out, receiver: str, op: str, keys: tuple[str, ...], **payload: Any) -> str:
        self._call = n = self._call + 1
        call = f"rpc:{SCHEDULER}#{n}"
        out.append(Message(SCHEDULER, receiver, op, call, False, keys, payload))
        return call

    def _report(self, out: Out, ts: TaskState, op: str,
                payload: dict[str, Any] = _NO_FIELDS) -> None:
        """Tell every client that wants ``ts``; the report names the hold it is about.

        Pseudo-clients (a Variable's, a Queue's, fire-and-forget's) hold keys
        but have no stream: nothing is sent to them.  ``payload`` is the report's
        fields after ``gen`` (a dict the caller builds once, for every client).
        It builds its messages itself rather than through ``_send``: a report goes
        out for nearly every task that ends.
        """
        who = ts.who_wants
        if not who:
            return
        key, pseudo, wants, streams = ts.key, self.pseudo, self.wants, self._streams
        for client in (sorted(who) if len(who) > 1 else who):
            if client in pseudo:  # FIRE_AND_FORGET among them
                continue
            gen = wants.get(client, _NO_WANTS).get(key, 0)
            out.append(Message(SCHEDULER, client, op, streams.get(client) or self._stream_to(client),
                               True, (key,), {"gen": gen, **payload}))

    def _pick_worker(self, ts: TaskState | None = None) -> str:
        # Every task placed comes here, most with no restriction and no input: the other
        # cases are methods of their own, whose comprehensions and sort keys would otherwise
        # make this one's variables cells, made on every call.
        spec = ts.run_spec if ts is not None else None
        allowed = spec.get("workers") if spec else None
        need = spec.get("resources") if spec else None
        if need:
            return self._pick_fitting(ts, need, allowed)  # type: ignore[arg-type]
        if allowed:
            picked = self._least_loaded_of(allowed)
            if picked is not None:
                return picked
        if ts is not None and ts.dependencies:
            picked = self._where_inputs_are(ts)
            if picked is not None:
                return picked
        # No inputs: an idle worker (a free thread) first, as dask's decide_worker takes
        # from its idle set — so a task that waits for sub-tasks does not get them queued
        # behind itself while another worker is free.  Then round robin.
        workers, processing, nthreads = self.workers, self.processing, self.nthreads
        if self.retiring:  # a retiring worker takes no new task (dask: it is not running)
            workers = self._not_retiring(workers)
        start = self._next_worker
        n = len(workers)
        for i in range(n):
            worker = workers[(start + i) % n]
            if len(processing[worker]) < nthreads[worker]:
                self._next_worker = start + i + 1
                return worker
        self._next_worker = start + 1
        return workers[start % n]

    def _pick_fitting(self, ts: TaskState, need: dict[str, float],
                      allowed: list[str] | None) -> str:
        """Only workers with the resources ``need`` (``_runnable`` made sure there is one);
        among them the named ones if a strict workers= names any, then the least loaded."""
        processing, have = self.processing, self.resources
        fit = [w for w in self.workers if resources.fits(have.get(w, resources.NONE), need)]
        named = [w for w in fit if allowed and w in allowed]
        if named or (allowed and not ts.run_spec.get("allow_other_workers")):  # type: ignore[union-attr]
            fit = named or fit
        return min(fit, key=lambda w: len(processing[w]))

    def _least_loaded_of(self, allowed: list[str]) -> str | None:
        """Restricted (submit(workers=)): the least loaded of the workers named that exist, in
        their order (None: none does)."""
        processing = self.processing
        names = [w for w in allowed if w in processing]
        return min(names, key=lambda w: len(processing[w])) if names else None

    def _where_inputs_are(self, ts: TaskState) -> str | None:
        """Where most of the inputs already are, as dask's decide_worker prefers (None: on no
        worker that is not retiring)."""
        counts: dict[str, int] = {}
        retiring = self.retiring
        for dep in ts.dependencies:
            for w in self.tasks[dep].who_has:
                if w not in retiring:
                    counts[w] = counts.get(w, 0) + 1
        if len(counts) == 1:  # the inputs are on one worker (the usual case): no ranking
            for w in counts:
                return w
        if counts:
            return max(sorted(counts), key=lambda w: (counts[w], -len(self.processing[w])))
        return None

    def _not_retiring(self, workers: list[str]) -> list[str]:
        """``workers`` but the retiring ones (all of them if every one is retiring)."""
        retiring = self.retiring
        return [w for w in workers if w not in retiring] or workers

    def _new_task(self, key: str, state: str, run_spec: dict[str, Any] | None) -> TaskState:
        # Desires may have arrived before the task (a fixed-protocol scatter).  A loop rather
        # than a set comprehension: there are only a client or two, and a comprehension is a
        # call of its own.
        who_wants = set()
        for client, keys in self.wants.items():
            if key in keys:
                who_wants.add(client)
        ts = self.tasks[key] = TaskState(key, state, run_spec, NO_KEYS, NO_KEYS, who_wants, {})
        return ts

    # -- desires and releases ---------------------------------------------------------

    def _desire(self, client: str, key: str, gen: int, created: bool = False) -> None:
        keys = self.wants.get(client)
        if keys is None:
            keys = self.wants[client] = {}
        held = keys.get(key)
        keys[key] = gen if held is None or gen > held else held
        ts = self.tasks.get(key)
        if ts is not None:
            ts.who_wants.add(client)
        self.record(SCHEDULER, "desire.applied", key, client, gen,
                    tuple(sorted(ts.who_wants)) if ts else (), created)

    def _on_client_desires_keys(self, msg: Message, out: Out, stimulus: str) -> None:
        """A future deserialized somewhere tells the scheduler it exists (race 2).

        Legacy, like dask's ``client_desires_keys`` before PR 8827: an unknown key
        gets a task — ``released``, no run spec — so the desire has something to
        attach to.  Fixed: an unknown key stays unknown; the future is cancelled.
        """
        client, gens, task = msg.payload["client"], msg.payload["gens"], msg.payload.get("task")
        for key in msg.keys:
            gen = gens.get(key, 0)
            ts = self.tasks.get(key)
            created = ts is None
            if created:
                if not self.variant.desire_creates:
                    # dask only warns ("Client … desires key … but key is unknown"); the
                    # fixed protocol also tells the client, so no future dangles unseen.
                    self.record(SCHEDULER, "desire.unknown", key, client, task)
                    if not self.variant.generations or client in self.pseudo:
                        continue
                    self.send(out, client, m.CANCELLED_KEYS, (key,), gens={key: gen},
                               reason=f"{key} is unknown to the scheduler: it was released and "
                               "forgotten before this future was deserialized, and a "
                               "deserialized future does not bring it back")
                    continue
                ts = self._new_task(key, RELEASED, None)
            self._desire(client, key, gen, created)
            if (client == FIRE_AND_FORGET and ts.state in (MEMORY, ERRED)
                    and self.variant.fire_and_forget_ended):
                # The task has already ended: nothing will ever release this desire.
                recs: dict[str, str] = {}
                self._release(client, key, gen, recs)
                self._transitions(recs, stimulus, out)
                continue
            self._report_on_key(out, client, ts, gen)

    def _release(self, client: str, key: str, gen: int, recs: dict[str, str]) -> None:
        keys = self.wants.get(client, _NO_WANTS)
        current = keys.get(key)
        generations = self.variant.generations
        if generations:
            # Remembered: a scatter of this hold still in flight (the release overtook its
            # RPC) is stale when it comes, and must not make the client want the key again.
            released = self._released_gens.setdefault(client, {})
            released[key] = max(gen, released.get(key, gen))
        if current is None:
            return
        if generations and gen < current:
            # A release from a hold the client has since renewed: not for us.
            self.record(SCHEDULER, "release.stale", key, client, gen, current)
            return
        del keys[key]
        ts = self.tasks.get(key)
        if ts is None:
            return
        ts.who_wants.discard(client)
        self.record(SCHEDULER, "release.applied", key, client, gen, tuple(sorted(ts.who_wants)))
        unwanted = self._unwanted(ts)
        if unwanted is not None:
            recs[key] = unwanted

    def _unwanted(self, ts: TaskState) -> str | None:
        """Where a task nobody holds goes (dask's ``_client_releases_keys``).

        Forgotten if no task depends on it; ``released`` if some still do (in a
        chain a → b → c with only c held, a and b stay, released); nothing
        while a dependent still waits for it.
        """
        if ts.who_wants or (ts.dependents and self._needed_by_dependents(ts)):
            return None
        return RELEASED if ts.dependents and ts.state != ERRED else FORGOTTEN

    def _add_replica(self, ts: TaskState, worker: str, incarnation: int, out: Out,
                     stimulus: str) -> None:
        replaced = ts.who_has.get(worker)
        ts.who_has[worker] = incarnation
        if self.variant.incarnations and replaced is not None and replaced != incarnation:
            # The worker now holds two copies; only the newer is registered, free the other.
            self.send(out, worker, m.FREE_KEYS, (ts.key,), incarnations={ts.key: replaced},
                       stimulus_id=stimulus)

    def _needed_by_dependents(self, ts: TaskState) -> bool:
        # A loop, not any() over a generator: most tasks have no dependents at all.
        tasks = self.tasks
        for d in ts.dependents:
            dts = tasks.get(d)
            if dts is not None and dts.state in (WAITING, PROCESSING):
                return True
        return False

    def _on_client_releases_keys(self, msg: Message, out: Out, stimulus: str) -> None:
        client, gens = msg.payload["client"], msg.payload["gens"]
        rule = self.variant.rule(m.CLIENT_RELEASES_KEYS) if self.variant.rules else None
        recs: dict[str, str] = {}
        for key in msg.keys:
            gen = gens.get(key, 0)
            if rule is not None:
                # A protocol's own rule (``ProtocolVariant.rules``): does this release end
                # the hold the scheduler has now?
                held = self.wants.get(client, _NO_WANTS).get(key)
                ts = self.tasks.get(key)
                if not rule(Arrival(m.CLIENT_RELEASES_KEYS, SCHEDULER, client, key, gen, held,
                                    None if ts is None else ts.state)):
                    self.record(SCHEDULER, "release.stale", key, client, gen, held)
                    continue
            self._release(client, key, gen, recs)
        if recs:
            self._transitions(recs, stimulus, out)

    # -- scatter ----------------------------------------------------------------------------

    def _on_scatter(self, msg: Message, out: Out, stimulus: str) -> None:
        p = msg.payload
        client = p["client"]
        if self.variant.generations:
            # The desire takes effect now, before the worker put, so that a release
            # of an older hold arriving during the put is recognised as stale.
            released = self._released_gens.get(client, {})
            for key in msg.keys:
                gen = p["gens"].get(key, 0)
                if released.get(key, -1) >= gen:
                    continue  # that hold is released already: the put goes on, freed as stale
                self._desire(client, key, gen)
        by_worker: dict[str, dict[str, bytes]] = {}
        targets = p.get("workers") or None
        for i, (key, blob) in enumerate(p["data"].items()):
            if p.get("broadcast"):
                # A copy on every worker named (every worker if none is).
                for worker in targets or self.workers:
                    by_worker.setdefault(worker, {})[key] = blob
                continue
            worker = targets[i % len(targets)] if targets else self._pick_worker()
            by_worker.setdefault(worker, {})[key] = blob
        call = _ScatterCall(msg, set(), {}, {})
        puts = call.puts
        for worker, data in by_worker.items():
            # Every copy put on a worker is a new incarnation of the key there.
            incarnations = {}
            for key in data:
                self._incarnation = incarnation = self._incarnation + 1
                incarnations[key] = incarnation
                on = puts.get(key)
                if on is None:
                    on = puts[key] = {}
                on[worker] = incarnation
            rpc = self._rpc(out, worker, m.UPDATE_DATA, tuple(data), data=data,
                            incarnations=incarnations)
            call.waiting.add(rpc)
            self._scatters[rpc] = call

    def _on_update_data_reply(self, msg: Message, out: Out, stimulus: str) -> None:
        call = self._scatters.pop(msg.channel)
        call.waiting.discard(msg.channel)
        for key, held in msg.payload["incarnations"].items():
            call.held.setdefault(key, {})[msg.sender] = held
        if call.waiting:
            return
        self._update_data(call, out, stimulus)
        request = call.client_msg
        out.append(Message(SCHEDULER, request.sender, m.SCATTER_REPLY, request.channel,
                           False, request.keys, {}))

    def _update_data(self, call: _ScatterCall, out: Out, stimulus: str) -> None:
        """Learn that data entered the workers from outside: dask's ``Scheduler.update_data``.

        Like dask, this sets the task to memory directly — no transition fires.
        """
        p = call.client_msg.payload
        client, gens = p["client"], p["gens"]
        generations = self.variant.generations
        recs: dict[str, str] = {}
        for key in call.client_msg.keys:
            gen = gens.get(key, 0)
            current = self.wants.get(client, _NO_WANTS).get(key)
            if generations and current != gen:
                # The hold this scatter served was released while its put travelled:
                # its copy belongs to nobody.  Free it rather than resurrect the key.
                self.record(SCHEDULER, "scatter.stale", key, client, gen, current)
                for worker, held in sorted(call.held[key].items()):
                    if held == call.puts[key][worker]:
                        self.send(out, worker, m.FREE_KEYS, (key,), incarnations={key: held},
                                   stimulus_id=stimulus)
                continue
            ts = self.tasks.get(key)
            if ts is None:
                ts = self._new_task(key, MEMORY, None)
            ts.state = MEMORY
            held = call.held[key]
            if len(held) == 1 and not ts.who_has:  # one put, the first copy: nothing replaced
                for worker, incarnation in held.items():
                    ts.who_has[worker] = incarnation
            else:
                for worker, incarnation in sorted(held.items()):
                    self._add_replica(ts, worker, incarnation, out, stimulus)
            self.record(SCHEDULER, "scatter.registered", key, tuple(sorted(ts.who_has)),
                        tuple(sorted(ts.who_wants)))
            ts.type = p.get("types", _NO_FIELDS).get(key, ts.type)
            self._report(out, ts, m.KEY_IN_MEMORY, {"type": ts.type})
            if generations:
                if not ts.who_wants:  # every hold was released while the put was in flight
                    recs[key] = FORGOTTEN
            else:
                # dask's update_data ends in client_desires_keys, whose report_on_key tells
                # the scattering client again: a second key-in-memory when it already wanted it.
                self._desire(client, key, gen)
                self._report_on_key(out, client, ts, gen)
        if recs:
            self._transitions(recs, stimulus, out)

    # -- graphs -------------------------------------------------------------------------

    def _on_update_graph(self, msg: Message, out: Out, stimulus: str) -> None:
        p = msg.payload
        client, tasks = p["client"], p["tasks"]
        if self._lost_keys(tasks):
            # dask's update_graph: the whole graph is refused, every key it asked for
            # cancelled ("lost dependencies"); the keys it depends on are not touched.
            self.send(out, client, m.CANCELLED_KEYS, msg.keys,
                       gens={k: p["gens"].get(k, 0) for k in msg.keys}, reason=LOST_DEPENDENCIES)
            return
        # An idle scheduler starts a new computation; a busy one adds the graph to the last
        # (dask's is_idle: every task done; here, none processing on any worker).
        joined(self.computations, not any(self.processing.values()), p.get("code", ()))
        gens, known = p["gens"], self.tasks
        refused = self._refused_restrictions(tasks)
        if refused is not None:
            # dask's update_graph fails on it: every key asked for errs with the exception.
            for key in msg.keys:
                self.send(out, client, m.TASK_ERRED_REPORT, (key,), gen=gens.get(key, 0),
                           exception=dumps(refused), text=f"{type(refused).__name__}: {refused}")
            return
        recs: dict[str, str] = {}
        new: list[TaskState] = []
        for key, spec in tasks.items():
            ts = known.get(key)
            if ts is None:
                new.append(self._new_task(key, RELEASED, spec))
            elif ts.run_spec is None and ts.state == RELEASED:
                # A task a desire made before its graph came (dask before PR 8827 lets a
                # desire create one): dask's update_graph gives it the run spec, but applies
                # annotations to the tasks it creates only, so these are dropped.
                # Before PR 7564 (2023.4.0) update_graph applied them to every task it named.
                dropped = (() if self.variant.annotations_to_existing
                           else tuple(a for a in _ANNOTATIONS if spec.get(a)))
                self.record(SCHEDULER, "graph.annotations_dropped", key, dropped)
                ts.run_spec = {**spec, **dict.fromkeys(dropped)}
                new.append(ts)
            elif spec.get("allocated"):
                # Two futures were given one id: this one would set a value already set.
                self.record(SCHEDULER, "future.put_rejected", key, SET_TWICE)
                self.send(out, client, m.TASK_ERRED_REPORT, (key,), gen=gens.get(key, 0),
                           exception=dumps(RuntimeError(f"{key}: {SET_TWICE}")),
                           text=f"RuntimeError: {SET_TWICE}")
        # Linked once every new task exists: a dependency may come later in the graph.
        self._generation = generation = self._generation + 1
        for order, ts in enumerate(new):
            spec = ts.run_spec
            ts.retries = spec.get("retries") or 0
            ts.priority = (-(spec.get("priority") or 0), generation, order)
            deps = spec["deps"]
            if deps:
                ts.dependencies = set(deps)
                for dep in deps:
                    dts = known[dep]
                    if dts.dependents is NO_KEYS:
                        dts.dependents = set()
                    dts.dependents.add(ts.key)
            recs[ts.key] = WAITING
        for key in msg.keys:
            self._desire(client, key, gens.get(key, 0))
            ts = known.get(key)
            if ts is not None and ts.state in (MEMORY, ERRED):
                # dask's update_graph reports a key already done to the client asking now:
                # another client's (or task's) run of the same pure key serves it.
                self._report_on_key(out, client, ts, gens.get(key, 0))
        self._transitions(recs, stimulus, out)

    @staticmethod
    def _refused_restrictions(tasks: dict[str, Any]) -> Exception | None:
        """The error dask's ``update_graph`` raises on a graph's worker restrictions (it makes
        a set of them: an unhashable one, as ``compute(workers={...})`` gives, is a
        TypeError), or None."""
        for spec in tasks.values():
            workers = spec.get("workers")
            if workers:
                try:
                    set(workers)
                except TypeError as exc:
                    return exc
        return None

    def _report_on_key(self, out: Out, client: str, ts: TaskState, gen: int) -> None:
        """Tell ``client`` where a done key stands (dask's ``report_on_key``).

        dask's ``report`` of a key goes to every client that wants it besides ``client``: a
        desire — a Variable's or a Queue's pseudo-client's too, which has no stream — tells
        each holder again that the key is in memory (or erred).
        """
        if ts.state == MEMORY:
            payload: dict[str, Any] = {"type": ts.type}
            op = m.KEY_IN_MEMORY
        elif ts.state == ERRED:
            payload = {"exception": ts.exception, "text": ts.exception_text,
                       "traceback": ts.traceback}
            op = m.TASK_ERRED_REPORT
        else:
            return
        if client not in ts.who_wants and client not in self.pseudo:
            self.send(out, client, op, (ts.key,), gen=gen, **payload)
        self._report(out, ts, op, payload)

    def _lost_keys(self, tasks: dict[str, Any]) -> dict[str, str | None]:
        """Keys whose dependencies the scheduler no longer has (dask's _find_lost_dependencies)."""
        lost: dict[str, str | None] = {}
        for key, spec in tasks.items():
            for dep in spec["deps"]:
                if dep not in tasks and dep not in self.tasks:
                    # dask logs "User asked for computation on lost data".
                    self.record(SCHEDULER, "graph.lost_data", key, dep)
                    lost[key] = dep
        return lost

    def _stale_run(self, msg: Message, ts: TaskState | None, out: Out, stimulus: str) -> bool:
        """A result from an earlier run of a task now processing again (dask's ``run_id`` check).

        From the worker running the new run: dask releases the task, which cancels that
        run and sends the task again — and when each new run's result also arrives after
        the next release, it does so for ever (dask#8215's cancel-then-resubmit, under the
        order that always runs the task before the worker hears of the release).  With
        incarnations the worker frees exactly the stale copy, so the new run goes on.
        From another worker: that worker drops the result.
        """
        if ts is None or ts.state != PROCESSING or msg.payload["incarnation"] == ts.run_id:
            return False
        key, worker = ts.key, msg.payload["worker"]
        self.record(SCHEDULER, "task.stale_run", key, worker, msg.payload["incarnation"], ts.run_id)
        if ts.processing_on == worker and not self.variant.incarnations:
            self._transitions({key: WAITING}, stimulus, out)
        elif msg.op == m.TASK_FINISHED:
            self.send(out, worker, m.FREE_KEYS, (key,),
                       incarnations={key: msg.payload["incarnation"]}, stimulus_id=stimulus)
        return True

    def _on_task_finished(self, msg: Message, out: Out, stimulus: str) -> None:
        p = msg.payload
        key, worker, incarnation = msg.keys[0], p["worker"], p["incarnation"]
        ts = self.tasks.get(key)
        # (_stale_run only when the run ids differ: it is False whenever they match.)
        if ts is not None and incarnation != ts.run_id:
            if not self.variant.unsigned_results:
                if self._stale_run(msg, ts, out, stimulus):
                    return
            elif ts.state == PROCESSING and ts.processing_on == worker:
                # dask before PR 7463 had no run id to compare: the result is the new run's.
                self.record(SCHEDULER, "task.stale_accepted", key, worker, incarnation,
                            ts.run_id)
        if ts is None or ts.state != PROCESSING or ts.processing_on != worker:
            # Nobody needs this result any more: tell the worker to drop it.
            self.send(out, worker, m.FREE_KEYS, (key,),
                       incarnations={key: incarnation}, stimulus_id=stimulus)
            return
        if ts.who_has:
            self._add_replica(ts, worker, incarnation, out, stimulus)
        else:  # the first copy (every computed task): no copy to replace
            ts.who_has[worker] = incarnation
        ts.type = p.get("type")
        durations = self.durations
        if durations is not None and "startstops" in p:
            _add_durations(durations, key, p["startstops"])
        if self.task_stream is not None and "startstops" in p:
            self.task_stream.record(key, {
                "stimulus_id": stimulus, "worker": worker, "metadata": {},
                "nbytes": p.get("nbytes"), "type": p.get("type"), "typename": p.get("typename"),
                "thread": p["thread"], "startstops": p["startstops"], "status": "OK"})
        self._transitions({key: MEMORY}, stimulus, out)

    def _on_task_erred(self, msg: Message, out: Out, stimulus: str) -> None:
        ts = self.tasks.get(msg.keys[0])
        if not self.variant.unsigned_errors:
            if self._stale_run(msg, ts, out, stimulus):
                return
        elif (ts is not None and ts.state == PROCESSING
              and msg.payload["incarnation"] != ts.run_id):
            # dask before PR 7933: any task-erred for a processing task is taken.
            self.record(SCHEDULER, "task.stale_accepted", ts.key, msg.payload["worker"],
                        msg.payload["incarnation"], ts.run_id)
        if ts is None or ts.state != PROCESSING:
            return
        if ts.retries > 0:
            # submit(retries=n): run it again, as dask's transition_processing_erred does.
            ts.retries -= 1
            self.record(SCHEDULER, "task.retry", ts.key, ts.retries, stimulus)
            self._transitions({ts.key: WAITING}, stimulus, out)
            return
        p = msg.payload
        ts.exception = p["exception"]
        ts.exception_text = p["text"]
        ts.traceback = p.get("traceback")
        if self.task_stream is not None and "startstops" in p:
            self.task_stream.record(ts.key, {
                "stimulus_id": stimulus, "cause": ts.key, "worker": p["worker"],
                "exception": p["exception"], "traceback": p.get("traceback"),
                "exception_text": p.get("exception_text"), "traceback_text": "",
                "thread": p["thread"], "startstops": p["startstops"], "status": "error"})
        self._transitions({ts.key: ERRED}, stimulus, out)

    def _on_release_worker_data(self, msg: Message, out: Out, stimulus: str) -> None:
        ts = self.tasks.get(msg.keys[0])
        worker = msg.payload["worker"]
        if ts is None or worker not in ts.who_has:
            return
        if self.variant.incarnations and msg.payload["incarnation"] != ts.who_has[worker]:
            return  # the worker dropped another copy of the key; the registered one is intact
        rule = self.variant.rule(m.RELEASE_WORKER_DATA) if self.variant.rules else None
        if rule is not None and not rule(Arrival(m.RELEASE_WORKER_DATA, SCHEDULER, worker, ts.key,
                                                 msg.payload["incarnation"], ts.who_has[worker],
                                                 ts.state)):
            return  # a protocol's own rule (``ProtocolVariant.rules``): about another copy
        del ts.who_has[worker]
        self.record(SCHEDULER, "who_has.removed", ts.key, worker, tuple(sorted(ts.who_has)))
        if not ts.who_has and ts.state == MEMORY:
            self._transitions({ts.key: RELEASED}, stimulus, out)

    def _on_add_keys(self, msg: Message, out: Out, stimulus: str) -> None:
        """A worker holds copies too — dependencies it fetched, replicas it acquired
        (``Client.replicate``, a retiring worker's data): dask's ``add_keys``.  A key no longer
        in memory it is told to drop (``remove-replicas``); a key its holder no longer had
        (``missing``) is asked again by the retirement's next pass."""
        worker, redundant = msg.payload["worker"], {}
        for key in msg.payload["missing"]:
            if self._acquiring.get(key) == worker:
                del self._acquiring[key]
        for key, incarnation in msg.payload["incarnations"].items():
            if self._acquiring.get(key) == worker:
                del self._acquiring[key]
            if worker not in self.processing:
                continue  # removed meanwhile: its copy went with it
            ts = self.tasks.get(key)
            if ts is not None and ts.state == MEMORY:
                self._add_replica(ts, worker, incarnation, out, stimulus)
                self.record(SCHEDULER, "who_has.added", key, worker, tuple(sorted(ts.who_has)))
                if len(ts.who_has) > 1:
                    self.amm.replicated(out)
            else:
                redundant[key] = incarnation
        if redundant:
            self.send(out, worker, m.REMOVE_REPLICAS, tuple(redundant), incarnations=redundant,
                       stimulus_id=stimulus)

    def remove_replica(self, ts: TaskState, worker: str, out: Out, stimulus: str) -> None:
        """Stop counting ``worker``'s copy and tell it to drop it (dask's
        ``request_remove_replicas``; the AMM's drops)."""
        incarnation = ts.who_has.pop(worker)
        self.record(SCHEDULER, "who_has.removed", ts.key, worker, tuple(sorted(ts.who_has)))
        self.send(out, worker, m.REMOVE_REPLICAS, (ts.key,), incarnations={ts.key: incarnation},
                   stimulus_id=stimulus)

    # -- cancel ------------------------------------------------------------------------

    def _on_cancel_keys(self, msg: Message, out: Out, stimulus: str) -> None:
        """dask's ``stimulus_cancel`` (since PR 7583): the client lets go of the keys it may
        cancel (and of their dependents), everyone's hold too with ``force``; every client is
        told.  A key others want is not cancelled, and — dask since PR 7583 — the client's
        own hold of it is not released either (``fixed``: ``cancel_releases_own``)."""
        p = msg.payload
        client = p["client"]
        cancelled: list[str] = []
        releasers: list[str] = []
        kept: list[str] = []

        def cancel(keys: list[str]) -> None:
            for key in keys:
                ts = self.tasks.get(key)
                if ts is None or key in cancelled:
                    continue
                cancelling = p["force"] or ts.who_wants == {client}
                self.record(SCHEDULER, "cancel.decided", key, client, cancelling,
                            tuple(sorted(ts.who_wants)))
                if cancelling:
                    cancel(sorted(ts.dependents))
                    cancelled.append(key)
                elif client in ts.who_wants:
                    kept.append(key)
                releasers.extend(sorted(ts.who_wants) if p["force"] else [client])

        cancel(list(msg.keys))
        # The report names, for each client, the hold it cancels (its generation, read before
        # the release forgets it): a hold taken after the cancel — dask#8215's resubmit — is
        # newer, so under generations its report is stale; a hold the force released is not.
        gens = {holder: {key: wants.get(key, 0) for key in cancelled}
                for holder, wants in self.wants.items()}
        recs: dict[str, str] = {}
        for holder in dict.fromkeys(releasers):
            for key in cancelled:
                self._release(holder, key, self.wants.get(holder, {}).get(key, 0), recs)
        if self.variant.cancel_releases_own:
            for key in kept:
                self._release(client, key, self.wants.get(client, {}).get(key, 0), recs)
        self._transitions(recs, stimulus, out)
        for holder in sorted(gens):
            if holder not in self.pseudo and cancelled:
                self.send(out, holder, m.CANCELLED_KEYS, tuple(cancelled), gens=gens[holder],
                           reason=p.get("reason"), msg=p.get("msg"))

    # -- cancel before PR 7583: an RPC that waits for its keys ---------------------------

    def _on_cancel(self, msg: Message, out: Out, stimulus: str) -> None:
        """dask's ``stimulus_cancel`` before PR 7583 (``cancel_rpc``): an RPC, one job per key.

        2022.5.1 to 2023.3.0: the reply waits for every key's ``_cancel_key`` (each may poll
        for its key, and awaits its dependents).  Before 2022.5.1 (``cancel_retry_detached``)
        it answers at once, the retries left to ``call_later``.  The keys' first looks are
        taken here, in one step (dask's ``gather`` starts them on the next turn of its loop).
        """
        p = msg.payload
        detached = self.variant.cancel_retry_detached
        call: list = [msg, 0]
        if not detached:
            self._cancel_calls[msg.channel] = call
        for key in dict.fromkeys(msg.keys):
            if not detached:
                call[1] += 1
            self._cancel_start(key, p["client"], p["force"], None if detached else msg.channel,
                               None, out, stimulus)
        if detached or not call[1]:
            self._cancel_calls.pop(msg.channel, None)
            self.reply(out, msg)

    def _cancel_start(self, key: str, client: str, force: bool, call: str | None,
                      parent: int | None, out: Out, stimulus: str) -> None:
        self._cancel_job = job_id = self._cancel_job + 1
        job = self._cancel_jobs[job_id] = _CancelJob(key, client, force, call, parent)
        self._cancel_look(job_id, job, out, stimulus)

    def _cancel_look(self, job_id: int, job: _CancelJob, out: Out, stimulus: str) -> None:
        """One look at the key: wait for it (a poll), or decide, cancel the dependents, and
        report and release it (after the dependents' jobs, before PR 7583)."""
        ts = self.tasks.get(job.key)
        detached = self.variant.cancel_retry_detached
        if ts is None or not ts.who_wants:
            # dask: "no key yet, lets try again in a moment" — known and wanted by *anyone*.
            if detached and job.polls >= 5:  # the last of call_later's five retries
                self._cancel_gave_up(job_id, job, out, stimulus)
                return
            out.append(Message(SCHEDULER, SCHEDULER, m.CANCEL_POLL, self._poll_channel(), False,
                               (job.key,), {"job": job_id, "after": 0.2 if detached else 0.1}))
            return
        job.cancelled = job.force or ts.who_wants == {job.client}
        self.record(SCHEDULER, "cancel.decided", job.key, job.client, job.cancelled,
                    tuple(sorted(ts.who_wants)))
        if job.cancelled and ts.dependents:
            if detached:  # cancel_key recursed without waiting for its dependents' retries
                for dep in sorted(ts.dependents):
                    self._cancel_start(dep, job.client, job.force, None, None, out, stimulus)
            else:  # _cancel_key awaited them
                job.waiting = len(ts.dependents)
                for dep in sorted(ts.dependents):
                    self._cancel_start(dep, job.client, job.force, None, job_id, out, stimulus)
                if job.waiting:
                    return
        self._cancel_apply(job_id, job, out, stimulus)

    def _poll_channel(self) -> str:
        self._call = n = self._call + 1
        return f"{m.CANCEL_POLL}:{SCHEDULER}#{n}"

    def _cancel_apply(self, job_id: int, job: _CancelJob, out: Out, stimulus: str) -> None:
        """``self.report({"op": "cancelled-key", "key": key})`` then ``client_releases_keys``
        for the client (everyone who wants the key, with force)."""
        key = job.key
        ts = self.tasks.get(key)
        if job.cancelled or self.variant.cancel_reports_uncancelled:
            # dask's report: to those who want the key; a key it no longer knows, to everyone.
            payload = {"reason": None, "msg": None}
            if ts is not None:
                self._report(out, ts, m.CANCELLED_KEYS, payload)
            else:
                for client in sorted(self.wants):
                    if client not in self.pseudo:
                        self.send(out, client, m.CANCELLED_KEYS, (key,), gens={key: 0},
                                  **payload)
        holders = sorted(ts.who_wants) if (job.force and ts is not None) else [job.client]
        recs: dict[str, str] = {}
        for holder in holders:
            self._release(holder, key, self.wants.get(holder, _NO_WANTS).get(key, 0), recs)
        self._transitions(recs, stimulus, out)
        self._cancel_done(job_id, job, out, stimulus)

    def _cancel_gave_up(self, job_id: int, job: _CancelJob, out: Out, stimulus: str) -> None:
        self.record(SCHEDULER, "cancel.gave_up", job.key, job.client, job.polls)
        self._cancel_done(job_id, job, out, stimulus)

    def _cancel_done(self, job_id: int, job: _CancelJob, out: Out, stimulus: str) -> None:
        """A key's job ended: its parent goes on once all its dependents' have, and the RPC
        is answered once all its keys' have."""
        del self._cancel_jobs[job_id]
        if job.parent is not None:
            parent = self._cancel_jobs[job.parent]
            parent.waiting -= 1
            if not parent.waiting:
                self._cancel_apply(job.parent, parent, out, stimulus)
            return
        call = self._cancel_calls.get(job.call) if job.call is not None else None
        if call is not None:
            call[1] -= 1
            if not call[1]:
                del self._cancel_calls[job.call]
                self.reply(out, call[0])

    def _on_cancel_poll(self, msg: Message, out: Out, stimulus: str) -> None:
        """A cancel's wait is over: look again.  2022.5.1 to 2023.3.0, ``_cancel_key``'s loop
        (``sleep(0.1)``, read the key, return once 1 s has passed) gives up at its tenth
        wake-up without looking; before 2022.5.1 each of five retries looks, without force."""
        job_id = msg.payload["job"]
        job = self._cancel_jobs[job_id]
        job.polls += 1
        if self.variant.cancel_retry_detached:
            job.force = False  # the retry's lambda does not pass it on
        elif job.polls >= 10:
            self._cancel_gave_up(job_id, job, out, stimulus)
            return
        self._cancel_look(job_id, job, out, stimulus)

    def _on_report_key(self, msg: Message, out: Out, stimulus: str) -> None:
        """dask's ``report_on_key``: tell the client where the key stands now."""
        client, key = msg.payload["client"], msg.keys[0]
        ts = self.tasks.get(key)
        gen = self.wants.get(client, {}).get(key, 0)
        if ts is None:
            self.send(out, client, m.CANCELLED_KEYS, (key,), gens={key: gen},
                       reason="already forgotten")
        else:
            self._report_on_key(out, client, ts, gen)

    # -- questions and extensions ----------------------------------------------------------

    def _on_query(self, msg: Message, out: Out, stimulus: str) -> None:
        """An RPC answered from the scheduler's state (who_has, has_what) or by an extension.

        A handler that raises answers its caller with the error, as dask's RPC handlers do,
        rather than taking the scheduler (and a live network's thread) down with it.
        """
        try:
            reply = self.extensions.handle(msg, out, stimulus)
        except Exception as exc:  # noqa: BLE001 - the caller raises it, nothing is lost here
            reply = {"error": f"{type(exc).__name__}: {exc}", "raised": True}
        if reply is not None and not msg.batched:
            self.reply(out, msg, **reply)

    def reply(self, out: Out, request: Message, **payload: Any) -> None:
        out.append(Message(SCHEDULER, request.sender, m.QUERY_REPLY, request.channel, False,
                           request.keys, payload))

    def desire(self, holder: str, keys: list[str], out: Out, stimulus: str,
               gens: dict[str, int] | None = None) -> None:
        """``client_desires_keys`` for a holder without a stream (or a client confirming, with
        the generation of its hold: fixed's reports to it carry that one)."""
        msg = Message(SCHEDULER, SCHEDULER, m.CLIENT_DESIRES_KEYS, "", True, tuple(keys),
                      {"client": holder, "gens": gens or {}})
        self._on_client_desires_keys(msg, out, stimulus)

    def release(self, holder: str, keys: list[str], out: Out, stimulus: str) -> None:
        recs: dict[str, str] = {}
        for key in keys:
            self._release(holder, key, self.wants.get(holder, {}).get(key, 0), recs)
        self._transitions(recs, stimulus, out)

    # -- retiring workers (dask's ``retire_workers``, the AMM's ``RetireWorker``) -------------

    def _on_retire_workers(self, msg: Message, out: Out, stimulus: str) -> None:
        """The workers named stop taking tasks (``closing_gracefully``, told on their stream);
        the data only they hold is copied to the others (``_retire_progress``), and each is
        removed once none is left.  The call returns what was retired."""
        p = msg.payload
        names = [w for w in dict.fromkeys(p["workers"])
                 if w in self.processing and w not in self.retiring]
        if not names:
            self.reply(out, msg, workers=[])
            return
        call = _RetireCall(msg, p["close_workers"], set(names))
        self.log.info("Retire worker addresses (stimulus_id='%s') %s", stimulus,
                      [self.names.get(w, w) for w in names])
        for worker in names:
            self.retiring[worker] = call
            self.record(SCHEDULER, "worker.retiring", None, worker, stimulus)
            self.send(out, worker, m.WORKER_STATUS_CHANGE, (), status="closing_gracefully",
                      stimulus_id=stimulus)

    def _retire_progress(self, out: Out, stimulus: str) -> None:
        """After each stimulus, for each retiring worker: every key it holds that no running
        worker holds is fetched by the running worker holding the fewest keys (dask's AMM
        picks the one with the least memory), one fetch per key at a time; with none left,
        the worker is removed; with no running worker to take them, its retirement is
        abandoned (dask: "could not retire", the worker runs on)."""
        for worker, call in list(self.retiring.items()):
            if self.retiring.get(worker) is not call:
                continue
            running = [w for w in self.workers if w not in self.retiring]
            held = {w: 0 for w in running}
            unique: list[TaskState] = []
            for ts in self.tasks.values():
                for w in ts.who_has:
                    if w in held:
                        held[w] += 1
                if worker in ts.who_has and not any(w in held for w in ts.who_has):
                    unique.append(ts)
            if not unique:
                self._retired(worker, call, out, stimulus)
                continue
            if not running:
                del self.retiring[worker]
                call.waiting.discard(worker)
                self.record(SCHEDULER, "worker.retire_aborted", None, worker, stimulus)
                self.send(out, worker, m.WORKER_STATUS_CHANGE, (), status="running",
                          stimulus_id=stimulus)
                if not call.waiting:
                    self.reply(out, call.client_msg, workers=call.retired)
                continue
            for ts in unique:
                if ts.key in self._acquiring:
                    continue
                recipient = min(running, key=lambda w: held[w])
                held[recipient] += 1
                self._acquiring[ts.key] = recipient
                self.send(out, recipient, m.ACQUIRE_REPLICAS, (ts.key,),
                          who_has={ts.key: {worker: ts.who_has[worker]}}, stimulus_id=stimulus)

    def _retired(self, worker: str, call: _RetireCall, out: Out, stimulus: str) -> None:
        del self.retiring[worker]
        call.waiting.discard(worker)
        call.retired.append(worker)
        self.remove_worker(worker, out, stimulus, close=call.close, reason="retired")
        if not call.waiting:
            self.reply(out, call.client_msg, workers=call.retired)

    def remove_worker(self, worker: str, out: Out, stimulus: str, close: bool,
                      reason: str) -> None:
        """dask's ``remove_worker``: with ``close``, the worker is told to close on its stream
        (batched: the heartbeat's answer, on an RPC, can come first); the scheduler forgets it
        at once.  Its tasks in flight start again elsewhere; keys only it held are lost."""
        if close:
            self.send(out, worker, m.CLOSE_WORKER, (), reason="scheduler-remove-worker")
        self.workers.remove(worker)
        queued = self.processing.pop(worker)
        lost = [ts for ts in self.tasks.values() if worker in ts.who_has and len(ts.who_has) == 1]
        self.record(SCHEDULER, "worker.removed", None, worker, reason, stimulus, len(queued),
                    sum(ts.run_spec is None for ts in lost))
        self.log.info("Remove worker addr: %s name: %s (stimulus_id=%r)", worker,
                      self.names.get(worker, worker), stimulus)
        recs: dict[str, str] = {}
        for key in queued:
            ts = self.tasks[key]
            ts.processing_on = None  # nothing to tell a worker that is gone
            if self._stealing is not None:
                self._stealing.left(key)
            recs[key] = WAITING
        for ts in self.tasks.values():
            if worker in ts.who_has:
                del ts.who_has[worker]
                self.record(SCHEDULER, "who_has.removed", ts.key, worker, tuple(sorted(ts.who_has)))
                if not ts.who_has and ts.state == MEMORY:
                    recs[ts.key] = RELEASED
        del self.nthreads[worker]
        self._streams.pop(worker, None)
        for key in [k for k, w in self._acquiring.items() if w == worker]:
            del self._acquiring[key]
        self._transitions(recs, stimulus, out)

    def _on_close_stream(self, msg: Message, out: Out, stimulus: str) -> None:
        """A worker's stream ended (it closed on its own): dask removes it as lost — nothing
        moved first; its results are computed again, its scattered data is gone."""
        worker = msg.payload["worker"]
        if worker in self.processing and msg.channel == self._stream_from(worker):
            self.remove_worker(worker, out, stimulus, close=False,
                               reason="connection lost: killed, crashed or closed")

    def _stream_from(self, worker: str) -> str:
        life = self.lives.get(worker)
        channel = m.stream_channel(worker, SCHEDULER)
        return f"{channel}#{life}" if life else channel

    def _on_heartbeat_worker(self, msg: Message, out: Out, stimulus: str) -> None:
        """dask's ``heartbeat_worker``: a worker the scheduler does not know is "missing"."""
        known = msg.sender in self.processing
        if not known:
            self.record(SCHEDULER, "heartbeat.missing", None, msg.sender)
        self.reply(out, msg, status="OK" if known else "missing")

    def _on_register_worker(self, msg: Message, out: Out, stimulus: str) -> None:
        """A worker joins again: its nanny restarted it (a new process, new connections)."""
        worker = msg.sender
        if worker in self.processing:
            return
        self.lives[worker] = msg.payload["life"]
        self._streams.pop(worker, None)
        self.add_worker(worker, msg.payload["nthreads"])

    # -- gather ----------------------------------------------------------------------

    def _on_gather(self, msg: Message, out: Out, stimulus: str) -> None:
        call = _GatherCall(msg, set())
        by_worker: dict[str, list[str]] = {}
        for key in msg.keys:
            ts = self.tasks.get(key)
            if ts is None or not ts.who_has:
                call.missing.append(key)
            else:
                by_worker.setdefault(min(ts.who_has), []).append(key)
        for worker, keys in by_worker.items():
            rpc = self._rpc(out, worker, m.GET_DATA, tuple(keys))
            call.waiting.add(rpc)
            self._gathers[rpc] = call
        if not call.waiting:
            self._gather_done(call, out)

    def _on_get_data_reply(self, msg: Message, out: Out, stimulus: str) -> None:
        call = self._gathers.pop(msg.channel)
        call.waiting.discard(msg.channel)
        call.data.update(msg.payload["data"])
        call.missing.extend(msg.payload["missing"])
        call.errors.update(msg.payload["errors"])
        if not call.waiting:
            self._gather_done(call, out)

    def _gather_done(self, call: _GatherCall, out: Out) -> None:
        request = call.client_msg
        out.append(Message(SCHEDULER, request.sender, m.GATHER_REPLY, request.channel,
                           False, request.keys,
                           {"data": call.data, "missing": call.missing, "errors": call.errors}))

    # -- transitions ----------------------------------------------------------------------

    def _transitions(self, recs: dict[str, str], stimulus: str, out: Out) -> None:
        tasks, steps, record = self.tasks, self._STEPS, self.record
        while recs:
            key, finish = recs.popitem()
            ts = tasks.get(key)
            if ts is None:
                continue
            start = ts.state
            if start == finish:
                continue
            if finish == PROCESSING and ts.run_spec.get("resources") and not self._runnable(ts):
                finish = NO_WORKER  # dask's decide_worker finds no valid worker
            from_start = steps[start]
            step = from_start.get(finish)
            if step is None:
                # Go through "released" as dask does for pairs it has no direct path for.
                step = from_start[RELEASED]
                recs[key] = finish
                finish = RELEASED
            record(SCHEDULER, "transition", key, start, finish, stimulus)
            ts.state = finish
            step(self, ts, recs, out, stimulus)

    def _released_waiting(self, ts, recs, out, stimulus) -> None:
        if ts.run_spec is None:
            # Only a ghost (legacy's client-desires-keys on a forgotten key) gets here.
            raise InvariantError(ts.key, f"released -> waiting for {ts.key}, which has no run_spec: "
                                 "nothing can compute it")
        ts.waiting_on = NO_KEYS
        for dep in sorted(ts.dependencies):  # sorted: see the module docstring on set order
            dts = self.tasks[dep]
            if dts.state == ERRED:
                ts.exception, ts.exception_text = dts.exception, dts.exception_text
                ts.traceback = dts.traceback
                recs[ts.key] = ERRED
                return
            if dts.state != MEMORY:
                if ts.waiting_on is NO_KEYS:
                    ts.waiting_on = set()
                ts.waiting_on.add(dep)
                if dts.state == RELEASED:
                    recs[dep] = WAITING
        if not ts.waiting_on:
            recs[ts.key] = PROCESSING

    def _waiting_processing(self, ts, recs, out, stimulus) -> None:
        worker = self._pick_worker(ts)
        self._send_task(ts, worker, out, stimulus)
        if (ts.dependencies or ts.run_spec.get("allow_other_workers")) and (
                len(self.processing[worker]) > self.nthreads[worker]):
            # Placed by its inputs or its loose restrictions behind busy threads: an idle
            # worker may steal it.  (A task placed by load goes to a busy worker only if none
            # is idle; a strictly restricted one may not move.)
            self.maybe_balance(out)

    def _send_task(self, ts: TaskState, worker: str, out: Out, stimulus: str) -> None:
        """``ts`` processes on ``worker``: a compute-task under a new run id (dask's
        ``_add_to_processing`` and ``send_task_to_worker``)."""
        ts.processing_on = worker
        spec, key, deps = ts.run_spec, ts.key, ts.dependencies
        self.processing[worker][key] = None
        who_has: dict[str, list[str]] = {}
        if deps:
            tasks = self.tasks
            for dep in deps:  # a loop, not a comprehension (its own call): a dependency or two
                who_has[dep] = sorted(tasks[dep].who_has)
        self._incarnation = ts.run_id = run_id = self._incarnation + 1
        out.append(Message(SCHEDULER, worker, m.COMPUTE_TASK,
                           self._streams.get(worker) or self._stream_to(worker), True, (key,),
                           {"key": key, "func": spec["func"], "args": spec["args"],
                            "who_has": who_has, "incarnation": run_id, "stimulus_id": stimulus,
                            "priority": ts.priority, "resources": spec.get("resources")}))

    def _processing_memory(self, ts, recs, out, stimulus) -> None:
        # Every computed task comes here: the empty cases (nobody to tell, no dependents,
        # no dependencies) skip their calls.
        if ts.run_spec.get("allocated"):
            self.record(SCHEDULER, "future.put", ts.key)
        self._leave_processing(ts, out)
        if ts.who_wants:
            self._report(out, ts, m.KEY_IN_MEMORY, {"type": ts.type})
            self._fire_and_forgotten(ts, recs)
        if ts.dependents:
            tasks = self.tasks
            for key in sorted(ts.dependents):
                dts = tasks.get(key)
                if dts is not None and dts.state == WAITING:
                    if dts.waiting_on:
                        dts.waiting_on.discard(ts.key)
                    if not dts.waiting_on:
                        recs[key] = PROCESSING
        if ts.dependencies:
            self._forget_unneeded_dependencies(ts, recs)
            if self._amm is not None:
                self._amm.waiter_done(ts, out)
        if not ts.who_wants and not (ts.dependents and self._needed_by_dependents(ts)):
            recs[ts.key] = FORGOTTEN

    def _leave_processing(self, ts: TaskState, out: Out) -> None:
        """``ts`` stops processing on its worker.  A worker left with a free thread while
        another has tasks queued behind its threads calls for a balance (``stealing.py``)."""
        worker = ts.processing_on
        ts.processing_on = None
        queue = self.processing[worker]
        del queue[ts.key]
        if self._stealing is not None:
            self._stealing.left(ts.key)
        if len(queue) < self.nthreads[worker]:
            self.maybe_balance(out)

    def maybe_balance(self, out: Out) -> None:
        """Send the balance tick if one worker has a free thread and another has tasks queued
        behind its threads (``WorkStealing`` is made here, so a cluster that never needs
        stealing never makes it)."""
        nthreads = self.nthreads
        idle = busy = False
        for worker, queue in self.processing.items():
            n = len(queue)
            if n > nthreads[worker]:
                busy = True
            elif n < nthreads[worker]:
                idle = True
            if idle and busy:
                stealing = self._stealing
                if stealing is None:
                    stealing = self._stealing = WorkStealing(self)
                stealing.tick(out)
                return

    def move_task(self, ts: TaskState, thief: str, out: Out, stimulus: str) -> None:
        """A steal confirmed: ``ts`` leaves its victim (which gave it up) for ``thief``."""
        del self.processing[ts.processing_on][ts.key]
        self._send_task(ts, thief, out, stimulus)

    def reschedule(self, key: str, out: Out, stimulus: str) -> None:
        """Send ``key`` again from scratch (dask's ``_reschedule``): released, then back to
        waiting and processing wherever the scheduler now picks."""
        self._transitions({key: WAITING}, stimulus, out)

    def _on_amm(self, msg: Message, out: Out, stimulus: str) -> None:
        self.amm.tick(out, stimulus)

    def _on_amm_handler(self, msg: Message, out: Out, stimulus: str) -> None:
        try:
            value = self.amm.handle(msg.payload["method"], out, stimulus)
        except ValueError as exc:
            self.reply(out, msg, error=str(exc), type="ValueError")
            return
        self.reply(out, msg, value=value)

    def _on_balance(self, msg: Message, out: Out, stimulus: str) -> None:
        if self._stealing is not None:
            self._stealing.balance(out, stimulus)

    def _on_steal_response(self, msg: Message, out: Out, stimulus: str) -> None:
        p = msg.payload
        if self._stealing is not None:
            self._stealing.confirm(p["key"], p["state"], p["stimulus_id"], msg.sender, out,
                                   stimulus)

    def _on_steal_release(self, msg: Message, out: Out, stimulus: str) -> None:
        """Before 2021.10.0 (``steal_release``): a worker that gave a stolen task up says so,
        and a task still processing there is released and sent again (dask's
        ``handle_release_data``, then ``stimulus_missing_data``)."""
        ts = self.tasks.get(msg.keys[0])
        if ts is None or ts.state != PROCESSING or ts.processing_on != msg.payload["worker"]:
            return
        self.reschedule(ts.key, out, stimulus)

    def _processing_erred(self, ts, recs, out, stimulus) -> None:
        self._leave_processing(ts, out)
        self._erred(ts, recs, out)

    def _waiting_erred(self, ts, recs, out, stimulus) -> None:
        self._erred(ts, recs, out)

    def _fire_and_forgotten(self, ts: TaskState, recs: dict[str, str]) -> None:
        """dask's ``fire_and_forget`` holds a key until its task ends, then lets go."""
        if FIRE_AND_FORGET in ts.who_wants:
            self._release(FIRE_AND_FORGET, ts.key, self.wants[FIRE_AND_FORGET][ts.key], recs)

    def _erred(self, ts, recs, out) -> None:
        self._report(out, ts, m.TASK_ERRED_REPORT, {"exception": ts.exception,
                                                     "text": ts.exception_text,
                                                     "traceback": ts.traceback})
        self._fire_and_forgotten(ts, recs)
        for key in sorted(ts.dependents):
            dts = self.tasks.get(key)
            if dts is not None and dts.state in (WAITING, RELEASED):
                dts.exception, dts.exception_text = ts.exception, ts.exception_text
                dts.traceback = ts.traceback
                recs[key] = ERRED

    def _memory_released(self, ts, recs, out, stimulus) -> None:
        """The last copy of the data is gone: tell the clients, forget pure data."""
        self._free_on_workers(ts, out, stimulus)
        self._report(out, ts, m.LOST_DATA)
        if ts.run_spec is None:
            recs[ts.key] = FORGOTTEN
        elif ts.who_wants or self._needed_by_dependents(ts):
            recs[ts.key] = WAITING

    def _to_released(self, ts, recs, out, stimulus) -> None:
        if ts.processing_on is not None:
            # dask's processing -> released: the worker is told to drop the task, which it
            # cancels if it is already running (its thread cannot be stopped).
            self.send(out, ts.processing_on, m.FREE_KEYS, (ts.key,),
                       incarnations={ts.key: ts.run_id}, stimulus_id=stimulus)
            self._leave_processing(ts, out)
        ts.waiting_on = NO_KEYS

    def _to_no_worker(self, ts, recs, out, stimulus) -> None:
        self.unrunnable.add(ts.key)

    def _no_worker_processing(self, ts, recs, out, stimulus) -> None:
        self.unrunnable.discard(ts.key)
        self._waiting_processing(ts, recs, out, stimulus)

    def _no_worker_released(self, ts, recs, out, stimulus) -> None:
        self.unrunnable.discard(ts.key)
        ts.waiting_on = NO_KEYS

    def _erred_released(self, ts, recs, out, stimulus) -> None:
        """dask's erred -> released (on the way to waiting: a retry): the error is let go, the
        erred dependents follow, and the clients holding the key hear it is pending again."""
        ts.exception = ts.exception_text = ts.traceback = None
        ts.waiting_on = NO_KEYS
        for key in sorted(ts.dependents):
            dts = self.tasks.get(key)
            if dts is not None and dts.state == ERRED:
                recs[key] = WAITING
        self._report(out, ts, m.TASK_RETRIED)

    def recommend(self, recs: dict[str, str], stimulus: str, out: Out) -> None:
        """Run the transitions ``recs`` asks for (an extension's way in: a retry)."""
        self._transitions(recs, stimulus, out)

    def _to_forgotten(self, ts, recs, out, stimulus) -> None:
        key = ts.key
        if ts.who_has:
            self._free_on_workers(ts, out, stimulus)
        if ts.who_wants:
            self._report(out, ts, m.CANCELLED_KEYS,
                         {"reason": f"{key} was forgotten by the scheduler"})
            for client in ts.who_wants:
                self.wants.get(client, _NO_WANTS).pop(key, None)
        tasks = self.tasks
        del tasks[key]
        for dep in ts.dependents:
            dts = tasks.get(dep)
            if dts is not None and dts.dependencies:
                dts.dependencies.discard(key)
        if ts.dependencies:
            self._forget_unneeded_dependencies(ts, recs)

    def _forget_unneeded_dependencies(self, ts: TaskState, recs: dict[str, str]) -> None:
        for dep in sorted(ts.dependencies):
            dts = self.tasks.get(dep)
            if dts is None:
                continue
            if ts.state == FORGOTTEN and dts.dependents:
                dts.dependents.discard(ts.key)
            unwanted = self._unwanted(dts)
            if unwanted is not None:
                recs[dep] = unwanted

    def _free_on_workers(self, ts: TaskState, out: Out, stimulus: str) -> None:
        for worker, incarnation in sorted(ts.who_has.items()):
            self.send(out, worker, m.FREE_KEYS, (ts.key,),
                       incarnations={ts.key: incarnation}, stimulus_id=stimulus)
        ts.who_has = {}

    _TRANSITIONS = {
        (RELEASED, WAITING): _released_waiting,
        (WAITING, PROCESSING): _waiting_processing,
        (PROCESSING, MEMORY): _processing_memory,
        (PROCESSING, ERRED): _processing_erred,
        (WAITING, ERRED): _waiting_erred,
        (RELEASED, ERRED): _waiting_erred,
        (MEMORY, RELEASED): _memory_released,
        (WAITING, RELEASED): _to_released,
        (PROCESSING, RELEASED): _to_released,
        (ERRED, RELEASED): _erred_released,
        (RELEASED, FORGOTTEN): _to_forgotten,
        (MEMORY, FORGOTTEN): _to_forgotten,
        (ERRED, FORGOTTEN): _to_forgotten,
        (WAITING, NO_WORKER): _to_no_worker,
        (RELEASED, NO_WORKER): _to_no_worker,
        (NO_WORKER, PROCESSING): _no_worker_processing,
        (NO_WORKER, RELEASED): _no_worker_released,
    }
    #: ``_TRANSITIONS`` by start state, then finish (what ``_transitions`` looks steps up in:
    #: no tuple to build and hash per step).  Every state a task can be in has an entry.
    _STEPS = _by_start(_TRANSITIONS)

    _handlers = {
        m.CLIENT_DESIRES_KEYS: _on_client_desires_keys,
        m.CLIENT_RELEASES_KEYS: _on_client_releases_keys,
        m.SCATTER: _on_scatter,
        m.UPDATE_DATA_REPLY: _on_update_data_reply,
        m.UPDATE_GRAPH: _on_update_graph,
        m.TASK_FINISHED: _on_task_finished,
        m.TASK_ERRED: _on_task_erred,
        m.RELEASE_WORKER_DATA: _on_release_worker_data,
        m.ADD_KEYS: _on_add_keys,
        m.GATHER: _on_gather,
        m.GET_DATA_REPLY: _on_get_data_reply,
        m.CANCEL_KEYS: _on_cancel_keys,
        m.CANCEL: _on_cancel,
        m.CANCEL_POLL: _on_cancel_poll,
        m.REPORT_KEY: _on_report_key,
        m.BALANCE: _on_balance,
        m.AMM: _on_amm,
        m.AMM_HANDLER: _on_amm_handler,
        m.STEAL_RESPONSE: _on_steal_response,
        m.RETIRE_WORKERS: _on_retire_workers,
        m.CLOSE_STREAM: _on_close_stream,
        m.HEARTBEAT_WORKER: _on_heartbeat_worker,
        m.REGISTER_WORKER: _on_register_worker,
        m.STEAL_RELEASE: _on_steal_release,
        **dict.fromkeys(EXTENSION_OPS, _on_query),
    }


def _add_durations(durations: dict[str, float], key: str, startstops: list[dict]) -> None:
    """dask's ``TaskPrefix.add_duration`` for ``compute``: the first duration, then an even
    mix of the newest and the average so far."""
    from dask.utils import key_split

    for entry in startstops:
        if entry["action"] == "compute":
            duration = max(round((entry["stop"] - entry["start"]) * 1e6), 0) / 1e6
            prefix = key_split(key)
            old = durations.get(prefix)
            durations[prefix] = duration if old is None else 0.5 * duration + 0.5 * old
