"""The driver: actors + network + trace, and the only place with clocks and threads.

Two ways to drive the same sans-IO actors:

* **stepped** (immediate, random, manual, chooser): everything happens in the
  calling thread under a simulated clock.  A blocking call delivers messages
  in the policy's order until what it waits for has happened; if the policy
  holds everything (manual), it raises :class:`HeldMessagesError` naming the
  held messages instead of waiting forever.
* **live**: a background thread delivers each message when its latency has
  elapsed on the real clock, so races happen at random as they do on dask.

A task runs when its worker's ``execute`` message is delivered (see
``protocol/worker.py``).  Stepped, the delivery *is* the run: the function is
called in the thread driving the network, so the policy decides when tasks run
relative to every message, and a schedule replays exactly.  A task that calls
the cluster (``get_client().submit(...).result()``) makes a user call from inside
that step: the lock is re-entrant, and its wait delivers (and runs) what it
needs, nested — deterministic still, since one thread does everything.  Live,
the delivery hands the function to a worker thread that holds no lock; the
outcome re-enters under the lock as ``task-finished`` / ``task-erred``.  Under
``immediate`` a run with a deadline (``result(timeout=...)``) goes on a thread
too, and the caller waits for it no longer than the deadline — so a long task
times out as on dask, and finishes later on its own.

Every delivery is one step: record ``msg.received``, hand the message to its
actor, accept what the actor sends back.  The trace is flushed to its
subscribers (the checks first) when a public call returns and after every
live delivery; the checks read events in order, so batching loses nothing.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from dask.utils import parse_timedelta

from . import arguments, client_parts, gcscope, interrupts, stuck, task_runs
from .addresses import new_address
from .checks import Checks, Violation, quiet_limit_for
from .errors import (
    ArgumentValueError,
    ClusterClosedError,
    ConnectTimeoutError,
    HeldMessagesError,
)
from .focus import Focus
from .ids import AtomicIds, RacyIds
from .network import Immediate, Network, Policy, RandomLatency, make_policy
from .profiler import PROFILING, Profiler
from .protocol.client import BORROWED, ClientState
from .protocol.logs import LOG_LENGTH, NodeLog
from .protocol.messages import (
    CALL_TIMEOUT,
    EXECUTE,
    GET_DATA,
    GET_DATA_REPLY,
    SCHEDULER,
    Message,
    stream_channel,
)
from .protocol.scheduler import SchedulerState
from .protocol.variants import ProtocolVariant, get_variant
from .protocol.worker import TaskRun, WorkerState
from .task_runs import OnThreads, current_run
from .trace import TRACE_ACTOR, Trace
from .why import Chain

# How often the live thread looks for futures dropped by the GC: often while
# messages are in flight (a drop's release must not lag behind them), rarely when idle.
_LIVE_POLL_BUSY_S = 0.002
_LIVE_POLL_IDLE_S = 0.02


class WorkerPlugins(Protocol):
    """The worker plugins registered on a cluster (``plugins.Registry``): each worker that
    joins gets them all, as dask's ``add_worker`` sends them."""

    def joined(self, cluster: Cluster, worker: str) -> None: ...


def _never() -> bool:
    return False


_RULE = "-" * 49  # a line of dask's worker banner


def _amm_starts() -> bool:
    """dask's ``distributed.scheduler.active-memory-manager.start`` (True by default)."""
    try:
        import dask
    except ImportError:  # pragma: no cover - without dask, dask's default
        return True
    return bool(dask.config.get("distributed.scheduler.active-memory-manager.start", True))


def _log_length() -> int | None:
    """dask's ``distributed.admin.log-length``: how many lines each node's log keeps."""
    try:
        import dask
    except ImportError:  # pragma: no cover - without dask, dask's default
        return LOG_LENGTH
    return dask.config.get("distributed.admin.log-length", LOG_LENGTH)


def default_threads(workers: int) -> int:
    """Threads per worker as dask's ``LocalCluster`` picks them: the cores shared out, at least 1."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


class UserCall:
    """One user call in progress: the cluster's lock held, its messages sent and waited on.

    A class rather than ``@contextmanager``: every scatter, submit and gather
    enters one, and the explorer makes thousands of calls a second.
    """

    __slots__ = ("cluster", "cell", "_scoped", "_shield")

    def __init__(self, cluster: Cluster, cell: str | None):
        self.cluster = cluster
        self.cell = cell

    def __enter__(self) -> UserCall:
        # Shielded from interrupts before the lock is taken, until it is let go: one landing
        # between the two would keep the lock from the live thread for ever (interrupts.py).
        self._shield = interrupts.enter()
        cluster = self.cluster
        cluster._lock.acquire()
        self._scoped = gcscope.enter()
        try:
            cluster.begin_call(self.cell)
        except BaseException:
            if self._scoped:
                gcscope.leave()
            cluster._lock.release()
            interrupts.leave(self._shield)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.cluster._end_call()
        finally:
            if self._scoped:
                gcscope.leave()
            self.cluster._lock.release()
            interrupts.leave(self._shield)  # an interrupt noted meanwhile is raised here

    def send(self, messages: list[Message]) -> None:
        """Hand ``messages`` to the network (they go in the policy's order)."""
        self.cluster._send(messages)

    def expire(self, call: str) -> None:
        """The timeout of ``call``, waiting in a scheduler extension, fires (the driver's clock)."""
        self.cluster._send([Message(SCHEDULER, SCHEDULER, CALL_TIMEOUT,
                                    stream_channel(SCHEDULER, SCHEDULER), True, (),
                                    {"call": call})])

    def wait(self, done: Callable[[], bool], what: str, timeout: float | None = None,
             needs: Callable[[], list[Message]] | None = None, first: bool = False) -> None:
        """Block until ``done()``, delivering as the policy allows (see ``Cluster._wait``).

        ``first``: ``done`` is true once *any* of several tasks ends (``wait(...,
        FIRST_COMPLETED)``, ``as_completed``).  Immediate then runs the tasks side by side
        on worker threads, as dask does, so the quickest ends first — not the oldest.
        """
        self.cluster._wait(done, what, timeout, needs, first)


class _Locked:
    """``with cluster.locked():`` — the cluster's lock, shielded from interrupts as a user
    call is (see :class:`UserCall`): for what changes the cluster's state outside one."""

    __slots__ = ("_lock", "_shield")

    def __init__(self, lock: Any):
        self._lock = lock

    def __enter__(self) -> None:
        self._shield = interrupts.enter()
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        interrupts.leave(self._shield)


def _worker_names(workers: Any) -> list[str]:
    """The workers' names from a count (``worker:0`` …) or from names given (distinct strings).

    A string is not a list of names: ``workers="2"`` is refused, not one worker named "2".
    """
    if isinstance(workers, (list, tuple)):
        if not workers:
            raise ArgumentValueError("workers must name at least one worker")
        for name in workers:
            arguments.expect(name, str, "a worker's name", "a string")
        if len(set(workers)) < len(workers):
            raise ArgumentValueError(f"workers names a worker twice: {list(workers)!r}")
        return list(workers)
    arguments.expect(workers, int, "workers", "an int (how many) or a list of worker names")
    return [f"worker:{i}" for i in range(arguments.count(workers, "workers"))]


class Cluster:
    """A scheduler, workers and clients running inside this process.

    >>> with Cluster(protocol="dask", workers=1, network="manual") as cluster:
    ...     client = cluster.client()
    """

    def __init__(
        self,
        protocol: str | ProtocolVariant = "dask",
        workers: int | list[str] = 1,
        network: str | Policy = "live",
        seed: int | None = None,
        trace_capacity: int = 1_000_000,
        checks: bool = True,
        threads_per_worker: int | None = None,
        resources: dict[str, float] | None = None,
    ):
        """``workers`` is how many (named ``worker:0``, ``worker:1``, …) or their names;
        ``resources`` what each of them has (dask's worker resources, ``{"GPU": 1}``).

        Every argument is checked before anything starts (``arguments.py``).
        """
        self.variant = get_variant(arguments.protocol(protocol))
        names = _worker_names(workers)
        arguments.expect(network, (str, Policy), "network",
                         "a network's name (live, random, immediate or manual) or a Policy")
        arguments.expect(seed, (int, type(None)), "seed", "an int or None")
        arguments.count(trace_capacity, "trace_capacity")
        arguments.flag(checks, "checks")
        arguments.count(threads_per_worker, "threads_per_worker", none=True)
        arguments.expect(resources, (dict, type(None)), "resources",
                         "a dict of what each worker has ({\"GPU\": 1}) or None")
        self.live = network == "live"
        #: dask's ``scheduler_address``: this cluster's own, ``inproc://jupyter-refs/<n>``.
        self.scheduler_address = new_address(self)
        self.policy = make_policy(network, seed)
        self.network_name = network if isinstance(network, str) else self.policy.name
        self.seed = seed
        self._t0 = time.perf_counter_ns()
        self.trace = Trace(trace_capacity, clock=self._live_clock if self.live else None)
        if not self.live:
            # Stepped, the clock is simulated: the trace's ``now``, which the driver moves
            # (a delivery's time, the user's delay between calls) and every event reads.
            self.trace.now = 0
        self._network = Network()
        if self.policy.next_of is not None:  # the explorer's: one call a delivery, not two
            self._next = self.policy.next_of(self._network)
        # Only policies that time messages need to hear of each send, and only those that
        # simulate the user's own time need asking at each call (the explorer makes a
        # cluster per run: what a policy does not need is not called).
        self._on_send = (self.policy.on_send if type(self.policy).on_send is not Policy.on_send
                         else None)
        self._user_delay = (self.policy.user_delay_ns
                            if type(self.policy).user_delay_ns is not Policy.user_delay_ns
                            else None)
        self.scheduler = SchedulerState(self.variant, names, self.trace.record)
        self.scheduler.amm_starts = _amm_starts()
        self.threads_per_worker = (default_threads(len(names)) if threads_per_worker is None
                                   else threads_per_worker)
        #: Whether a nanny watches each worker (and restarts one that ends unasked); dask's
        #: ``LocalCluster(processes=False)`` has none (``local_cluster.LocalCluster`` says so).
        self.nannies = True
        #: What each worker has of resources (``protocol/resources.py``).
        self.worker_resources = dict(resources or {})
        self.workers = {n: WorkerState(n, self.variant, self.trace.record, self._bind,
                                       self.threads_per_worker, self.worker_resources)
                        for n in names}
        if self.worker_resources:
            self.scheduler.resources = {n: dict(self.worker_resources) for n in names}
        self.scheduler.nthreads = dict.fromkeys(self.workers, self.threads_per_worker)
        self._log_length = _log_length()
        self._timed_log(self.scheduler)
        self.scheduler.log.infos(("State start", ()),
                                 ("  Scheduler at: %25s", (self.scheduler_address,)))
        for name in self.workers:
            self._log_joined(name)
        self._actors: dict[str, Any] = {SCHEDULER: self.scheduler, **self.workers}
        # Each worker's own client (futures deserialized in its tasks) is an actor too.
        self._actors.update((w.client.name, w.client) for w in self.workers.values())
        #: Each actor's kind, as data (a name says nothing: a client may be called "alice").
        self.kinds: dict[str, str] = {SCHEDULER: "scheduler", **dict.fromkeys(self.workers, "worker")}
        self.kinds.update((w.client.name, "client") for w in self.workers.values())
        self.policy.kinds = self.kinds
        self.clients: dict[str, Any] = {}  # name -> client.Client
        self._worker_clients: dict[str, Any] = {}
        #: The worker plugins registered (``plugins.py`` makes them at the first).
        self.worker_plugins: WorkerPlugins | None = None
        self._lock = threading.RLock()
        # Only the live network, and immediate's runs with a deadline, have threads to
        # wake; every other stepped cluster runs in its caller's thread alone.
        self._cond = (threading.Condition(self._lock)
                      if self.live or isinstance(self.policy, Immediate) else None)
        #: Runs on worker threads, not yet finished (live, or immediate with a deadline).
        self._runs = OnThreads()
        self._drops: deque[tuple[ClientState, str, str | None]] = deque()
        self._ids = (AtomicIds if self.variant.atomic_ids else RacyIds)(self.trace.record)
        self.closed = False
        #: Hand each call's events to the subscribers when it returns (the explorer, which
        #: reads the verdict once per run, turns this off).
        self.flush_calls = True
        # Bounded with the trace, as a dask tracer's (``quiet_limit_for``): a live session
        # makes keys without end, and the history of every one ever forgotten grew with it.
        self.checks = (Checks(self.trace, quiet_limit=quiet_limit_for(trace_capacity))
                       if checks else None)
        self._thread: threading.Thread | None = None
        #: The workers' statistical profiler (``Client.profile``): a live cluster's.
        self.profiler: Profiler | None = None
        #: Whether workers may still join by themselves (an adaptive cluster below its
        #: maximum): every thread waiting is then no deadlock — dask's cluster grows out of it.
        self.grows: Callable[[], bool] = _never
        if self.live:
            self._thread = threading.Thread(target=self._run_live, name="jupyter-refs-network",
                                            daemon=True)
            self._thread.start()
            if PROFILING:  # dask's workers profile their tasks from the start
                self.profiler = Profiler(self)

    # -- clocks ----------------------------------------------------------------------

    def _live_clock(self) -> int:
        return time.perf_counter_ns() - self._t0

    # -- public surface ----------------------------------------------------------------

    def client(self, name: str | None = None) -> Any:
        """A new client of this cluster (the same as ``jupyter_refs.Client(cluster)``)."""
        return client_parts.make_client(self, name)

    def add_worker(self) -> str:
        """A new worker, ``worker:<n>``, with the cluster's threads per worker: the scheduler
        places new tasks on it from now on (dask's ``LocalCluster.scale`` up)."""
        with self.locked():
            self._check_open()
            name = f"worker:{len(self.workers)}"
            while name in self.workers:
                name += "'"
            worker = WorkerState(name, self.variant, self.trace.record, self._bind,
                                 self.threads_per_worker, self.worker_resources,
                                 nanny=self.nannies)
            self.workers[name] = worker
            self._actors[name] = worker
            self._actors[worker.client.name] = worker.client
            self.kinds[name], self.kinds[worker.client.name] = "worker", "client"
            self._log_joined(name)
            self._send(self.scheduler.add_worker(name, self.threads_per_worker,
                                                 self.worker_resources))
            self.trace.flush()
        if self.worker_plugins is not None:  # dask's add_worker hands it the worker plugins
            self.worker_plugins.joined(self, name)
        return name

    def _timed_log(self, actor: Any) -> NodeLog:
        """An actor's log, with the wall clock and the configured length (the actor's own
        is kept when it has that length: the explorer makes clusters by the thousand)."""
        log = actor.log
        if log.entries.maxlen != self._log_length:
            log = actor.log = NodeLog(log.logger, self._log_length)
        log.clock = time.time
        return log

    def _log_joined(self, name: str) -> None:
        """A worker starts and registers: dask's lines in its log and the scheduler's (a
        worker's name is its number, as ``LocalCluster`` names them)."""
        worker = self.workers[name]
        number = self.scheduler.names[name] = list(self.workers).index(name)
        log = self._timed_log(worker)
        log.infos(("      Start worker at: %26s", (name,)), ("          Worker name: %26s", (number,)),
                  (_RULE, ()), ("              Threads: %26d", (worker.nthreads,)), (_RULE, ()))
        self.scheduler.log.infos(("Register worker addr: %s name: %s", (name, number)),
                                 ("Starting worker compute stream, %s", (name,)))
        log.infos(("        Registered to: %26s", (self.scheduler_address,)), (_RULE, ()))

    @property
    def id_allocator(self) -> Any:
        """The protocol's allocator of future ids (``RacyIds`` or ``AtomicIds``, ids.py): the
        lesson on Julia's racy counter swaps its ``record`` to switch threads inside it."""
        return self._ids

    @id_allocator.setter
    def id_allocator(self, allocator: Any) -> None:
        """Put an allocator of one's own in the protocol's place (lesson 3's exercise: a
        student's lock-based counter): called with the actor, it returns an int, and its
        ``record`` attribute is where it logs each allocation (``id.alloc``).  Only protocols
        that draw non-hashed keys from a counter (``racy-ids``, ``atomic-ids``) ever call it."""
        if not callable(allocator) or not hasattr(allocator, "record"):
            raise TypeError("an id allocator is called with the actor and has a record attribute")
        with self._lock:
            self._ids = allocator

    def get_client(self) -> Any:
        """The cluster's first open client, or a new one (dask's ``cluster.get_client()``)."""
        for client in self.clients.values():
            if client.status == "running":
                return client
        return client_parts.make_client(self)

    def register_client(self, name: str | None) -> ClientState:
        """The actor behind a new ``Client``: named, traced, on the network."""
        with self.locked():
            self._check_open()
            name = name or f"client:{len(self.clients) + 1}"
            if name in self._actors:
                raise ValueError(f"an actor named {name!r} already exists")
            state = ClientState(name, self.variant, self.trace.record)
            self._actors[name] = state
            self.kinds[name] = "client"
            self.scheduler.add_client(name)
            return state

    @property
    def in_flight(self) -> list[Message]:
        """Messages sent and not yet delivered, oldest first."""
        with self.locked():
            self._process_drops()
            return sorted(self._network.in_flight.values(), key=lambda m: m.msg_id)

    @property
    def violations(self) -> list[Violation]:
        with self.locked():
            self._process_drops()
            self.trace.flush()
            return list(self.checks.violations) if self.checks else []

    def deliver(self, msg_id: int) -> Message:
        """Deliver one in-flight message now (it must be first on its channel)."""
        arguments.expect(msg_id, int, "msg_id", "a message's id (an int)")
        with self.locked():
            self._check_open()
            self._process_drops()
            msg = self._network.get(msg_id)
            self._deliver(msg)
            self.trace.flush()
            return msg

    def step(self, n: int = 1) -> list[Message]:
        """Deliver the next ``n`` messages in the policy's order (oldest first if it holds)."""
        arguments.count(n, "n", minimum=0)
        delivered = []
        with self.locked():
            self._check_open()
            self._process_drops()
            deliver, next_ = self._deliver, self._next
            for _ in range(n):
                if interrupts.pending:
                    interrupts.check()  # between two deliveries, the state is whole
                msg = next_(True)
                if msg is None:
                    break
                deliver(msg)
                delivered.append(msg)
            self.trace.flush()
        return delivered

    def hold(self, pattern: str) -> None:
        """Hold the messages of channels matching ``pattern`` (e.g. ``client:1->scheduler``).

        They wait in :attr:`in_flight` until ``deliver(msg_id)``, ``step()`` or
        :meth:`release_holds`; every other channel keeps flowing.  This is how a
        race is forced by hand on the live network.
        """
        arguments.text(pattern, "pattern")
        with self.locked():
            self._check_open()
            self._network.hold(pattern)

    def release_holds(self) -> set[str]:
        """Stop holding; held messages then flow in the policy's order."""
        with self.locked():
            released = self._network.unhold()
            self._wake()
            return released

    @property
    def held(self) -> set[str]:
        """The channel patterns being held (see :meth:`hold`)."""
        return set(self._network.held)

    @property
    def can_hold(self) -> bool:
        """Any network can hold channels while the cluster is open (see :meth:`hold`)."""
        return not self.closed

    @property
    def steppable(self) -> bool:
        """Whether messages wait for ``deliver`` / ``step``: the network delivers nothing on
        its own (``manual``), so a view offers the step controls."""
        return not self.policy.autonomous

    @property
    def actors(self) -> set[str]:
        """The scheduler, the workers and the clients (the workers' own ones too)."""
        with self._lock:
            return set(self.kinds)

    def channels(self) -> set[str]:
        """The channels that have carried a message and still exist (streams; RPCs in use)."""
        with self._lock:
            return set(self._network.channels())

    def run_until_idle(self, timeout: float = 60.0, quiet: float | None = None) -> int:
        """Deliver until nothing is in flight and no task runs (manual networks too).

        Returns how many were delivered (live: 0).  Live, a ``TimeoutError`` after
        ``timeout`` seconds of tasks still running or messages still moving.

        With ``quiet`` (seconds; live and immediate networks), a task still running
        when nothing has happened for that long is left running — dask's scheduler
        keeps it ``processing`` — and the call returns.  Immediate then runs tasks on
        worker threads, so a task that blocks does not block the settling.
        """
        arguments.number(timeout, "timeout")
        arguments.number(quiet, "quiet", none=True)
        if quiet is not None and self._cond is not None:
            return self._settle(timeout, quiet)
        if self.live:
            with self.locked():
                self._check_open()
                idle = lambda: (not self._drops and not self._network.in_flight  # noqa: E731
                                and not self._runs.running)
                while True:
                    self._cond.notify_all()
                    if not self._wait_for(lambda: idle() or self._stuck(), timeout):
                        raise self._still_busy(timeout)
                    if idle():
                        return 0
                    # Only held messages are left: deliver them too, oldest first.
                    self._deliver(self._network.oldest(held_too=True))
                    self.trace.flush()
        return len(self.step(1 << 62))

    def _settle(self, timeout: float, quiet: float) -> int:
        """``run_until_idle`` with ``quiet``: idle, or only running tasks left and nothing moved."""
        delivered = 0
        deadline = time.monotonic() + timeout
        with self.locked():
            self._check_open()
            while True:
                if not self.live:
                    self._process_drops()
                    msg = self._network.oldest(held_too=True)
                    if msg is not None:
                        self._deliver(msg, threaded=True)  # a run goes on a worker thread
                        delivered += 1
                        continue
                    self.trace.flush()
                if not self._drops and not self._network.in_flight and not self._runs.running:
                    return delivered
                seen = self.trace.next_seq
                self._cond.notify_all()
                self._wait_for(None, quiet)  # woken when a run ends or a message moves
                if self.trace.next_seq == seen and not self._network.in_flight and not self._drops:
                    return delivered  # only running tasks, and nothing happened meanwhile
                if time.monotonic() > deadline:
                    raise self._still_busy(timeout)
                if self.live and self._stuck():
                    self._deliver(self._network.oldest(held_too=True))
                    self.trace.flush()

    def _still_busy(self, timeout: float) -> TimeoutError:
        return TimeoutError(f"run_until_idle: still busy after {timeout} s "
                            f"({len(self._network)} messages in flight, "
                            f"{len(self._runs.running)} tasks running)")

    def close(self) -> None:
        """Stop the network thread (if any).  Futures stay readable; nothing more is sent."""
        shield = interrupts.enter()  # the join too: an interrupt would leave the thread behind
        try:
            with self._lock:
                if self.closed:
                    return
                self.closed = True
                self._wake()
            if self._thread is not None:
                self._thread.join()
                self._thread = None
            if self.profiler is not None:
                self.profiler.stop()
            self._runs.shutdown()  # a task still running ends on its own; nothing is sent
            self.trace.flush()
        finally:
            interrupts.leave(shield)

    def dispose(self) -> None:
        """Close, then cut the reference cycles between actors, trace, checks and clients.

        For callers that make clusters by the thousand (the explorer): a disposed cluster
        is freed by reference counting the moment it is dropped, not by the cycle
        collector.  Its trace stays readable; its checks and clients are gone.
        """
        self.close()
        if self.checks is not None:
            self.checks.close()
            self.checks = None
        for worker in self.workers.values():
            worker.bind = None
        self.scheduler.let_go_of_parts()  # a part and its scheduler: a cycle
        for client in (*self.clients.values(), *self._worker_clients.values()):
            client.cluster = None
        for actor in self._actors.values():
            if isinstance(actor, ClientState):
                actor.on_done = None  # its client's own method: a cycle
                actor.on_event = None
        self.clients.clear()
        self._worker_clients.clear()
        self._actors.clear()
        self.trace.clock = time.perf_counter_ns

    def locked(self) -> _Locked:
        """The lock, shielded from interrupts: ``with self.locked():`` where state changes."""
        return _Locked(self._lock)

    def _wait_for(self, predicate: Callable[[], bool] | None, timeout: float | None) -> bool:
        """Wait on the condition (under the lock), open to interrupts: waiting is what a user
        interrupts, and the state is whole here.  ``predicate`` None: one wake-up or the timeout."""
        token = interrupts.opened()
        try:
            if predicate is None:
                return self._cond.wait(timeout)
            return self._cond.wait_for(predicate, timeout)
        finally:
            interrupts.close(token)

    def _wake(self) -> None:
        """Wake the live thread and live waiters (call under the lock)."""
        if self._cond is not None:
            self._cond.notify_all()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def title(self) -> str:
        """What a view calls this cluster: its protocol and network."""
        return f"protocol={self.variant.name} network={self.network_name}"

    @property
    def ended(self) -> str:
        """How its end is told once closed (see :class:`~jupyter_refs.handle.ClusterHandle`)."""
        return f"the cluster ({self.title}) was closed"

    def sync(self) -> None:
        """Hand the checks and views every event recorded so far.

        The kernel-side trace has nothing buffered elsewhere (a dask tracer does), so
        this is a flush; dropped futures wait for :meth:`apply_drops` or the next call.
        """
        self.trace.flush()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._network)} in flight"
        return (f"<Cluster protocol={self.variant.name} network={self.network_name} "
                f"workers={len(self.workers)} clients={len(self.clients)} {state}>")

    def why(self, key: str, client: str | None = None) -> Chain:
        """The causal chain from the user's line to the loss of ``key`` (see ``why.py``)."""
        from .why import why

        key = arguments.key(key)
        arguments.text(client, "client", none=True)
        self.violations  # noqa: B018 - applies drops and brings the checks up to date
        return why(self.trace, key, client)

    @property
    def focused(self) -> Focus | None:
        """The keys the trace follows (None: every key); see :meth:`focus`."""
        return self.trace.focus

    def focus(self, keys: Any = None, sample: int = 1) -> Focus | None:
        """Trace only ``keys`` from now on (globs, key prefixes or a predicate; ``sample=N``:
        one key in N); ``focus()`` traces every key again.  Returns the new focus.

        The change is an event of the trace (``focus.changed``), so the checks forget the
        keys that left and judge a key that joined only from its next life.  While focused,
        every actor records through the trace's filtering ``record`` (``Trace.set_focus``);
        unfocused, through the plain one, as fast as before.
        """
        new = Focus.of(keys, sample)  # a bad focus is refused before anything changes
        with self.locked():
            fields = new.fields if new is not None else ((), 1)
            old = self.trace.focus
            alive: set[str] = set()
            if old is not None:  # with every key followed, no key joins
                alive.update(self.scheduler.tasks)
                for actor in self._actors.values():
                    alive.update(getattr(actor, "refcount", ()))  # clients
                    alive.update(getattr(actor, "data", ()))  # workers
            joined = tuple(sorted(k for k in alive if not old.wants(k)  # type: ignore[union-attr]
                                  and (new is None or new.wants(k))))
            self.trace.record(TRACE_ACTOR, "focus.changed", None, *fields, joined)
            self.trace.set_focus(new)
            record = self.trace.record
            for actor in self._actors.values():
                actor.record = record
            self._ids.record = record
        self.trace.flush()
        return new

    def scheduler_state(self, key: str) -> str:
        """The scheduler's state for ``key`` ("forgotten" if it has no task)."""
        with self._lock:
            ts = self.scheduler.tasks.get(key)
            return ts.state if ts is not None else "forgotten"

    # -- the one path of a user call -----------------------------------------------------

    def call(self, cell: str | None = None) -> UserCall:
        """Enter a user call (scatter, submit, gather, a release, …): ``with cluster.call(): …``.

        Every call the user makes goes through here: the lock is taken, dropped
        futures are released first (the safe point), the call's messages are
        stamped with the user's line, and on the way out the network is drained
        (``immediate``), the trace flushed and the live thread woken.
        """
        return UserCall(self, cell)

    def new_id(self, actor: str) -> int:
        """An id for a non-hashed key, from this protocol's allocator (race 3 lives here)."""
        return self._ids(actor)

    def drop(self, state: ClientState, key: str, cell: str | None = None) -> None:
        """A Future was dropped (``del``, GC, ``release()``): released at the next safe point.

        Safe from any thread and from ``__del__``: it only appends to a queue, as
        dask's ``Future.release`` only schedules ``_dec_ref`` on the event loop.
        ``cell`` is the user's line that dropped it, stamped on the release's events.
        """
        self._drops.append((state, key, cell))

    # -- used by UserCall ---------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise ClusterClosedError("the cluster is closed; start a new one with Cluster(...)")

    def worker_client(self, worker: str, timeout: float | None = None) -> Any:
        """The client of ``worker`` (``client:<worker>``): what ``get_client()`` gives its tasks.

        dask gives each worker process its own client; an in-process dask cluster
        (``LocalCluster(processes=False)``) hands a task the user's own client
        instead.  The model always uses the worker's, so nested work shows on its
        own lane.

        A worker process makes its client on first use, connecting within ``timeout``
        seconds: with 0 that fails (``OSError``), and the next use tries again.  Once made,
        or in-process (the user's client, already connected), the timeout does not matter.
        """
        state = self.workers[worker].client
        if (timeout is not None and timeout <= 0 and state.name not in self._worker_clients
                and getattr(self, "processes", True)):
            raise ConnectTimeoutError(f"Timed out trying to connect to "
                                      f"{self.scheduler_address} after {timeout} s")
        return self._client_of(state)

    def _client_of(self, state: ClientState) -> Any:
        client = self._worker_clients.get(state.name)
        if client is None:
            client = self._worker_clients[state.name] = client_parts.wrap_client(self, state)
        return client

    def _bind(self, state: ClientState, key: str, fs: Any, future_id: int) -> Any:
        """The ``Future`` a task receives for a future in its arguments (the worker's client's)."""
        if fs.state == BORROWED:
            return client_parts.unbound_future(key)  # today's dask: unbound, it holds nothing
        return client_parts.bound_future(self._client_of(state), key, fs, future_id)

    def begin_call(self, cell: str | None) -> None:
        """Entering a user call: under the lock, before any of its messages.

        A task may call the cluster (nested submission): on a worker thread it
        takes the lock like any caller; in a stepped run it already holds it.
        """
        self._check_open()
        if self._user_delay is not None and not self.live:
            self.trace.now += self._user_delay()
        if self._drops:
            self._process_drops()
        self.trace.user_line = cell

    def _end_call(self) -> None:
        self.trace.user_line = None
        if self.policy.drains and not self.live:
            self._drain_network()
        if self.flush_calls:
            self.trace.flush()
        if self.live:
            self._cond.notify_all()

    def _send(self, messages: list[Message]) -> None:
        if self.live or self.scheduler.task_stream is not None:
            self._stamp_fetches(messages)
        now = self.trace.time()
        self._network.accept(messages, now)
        on_send = self._on_send
        if on_send is not None:
            for msg in messages:
                on_send(msg, now)
        self.trace.record_sent(messages)

    def _stamp_fetches(self, messages: list[Message]) -> None:
        """On the live network (and while a task stream is kept), a worker's fetch from
        another carries when it was sent (the reply echoes it, and when it arrived): the
        workers' transfer logs, and the ``transfer`` entries of a task stream's records.
        (Not on the stepped networks: the explorer's states would all differ by a time.)"""
        for msg in messages:
            if msg.op == GET_DATA and msg.sender in self.workers and msg.receiver in self.workers:
                msg.payload = {**msg.payload, "sent_at": time.time()}

    @property
    def pending_drops(self) -> deque[tuple[ClientState, str, str | None]]:
        """The futures dropped and not released yet, oldest first: (client actor, key, the
        user's line); they are released at the next safe point.  Read, never change."""
        return self._drops

    @property
    def actor_states(self) -> dict[str, Any]:
        """Every actor by name: the scheduler's, workers' and clients' state machines.  Read,
        never change (the explorer's state fingerprint)."""
        return self._actors

    @property
    def network(self) -> Network:
        """The messages in flight, per channel (``network.py``)."""
        return self._network

    def running(self) -> list[TaskRun]:
        """The task runs not finished yet: on worker threads, and the one this thread runs."""
        with self.locked():
            runs = self._runs.unfinished()
            mine = current_run.get()
            if mine is not None and mine[0] is self and mine[1] not in runs:
                runs.append(mine[1])
            return runs

    def apply_drops(self) -> None:
        """Send the releases of futures dropped since the last call, as the next call would.

        A dropped future is released at the cluster's next safe point.  In a
        notebook the end of a cell is one (dask's event loop runs between cells
        too), so ``%load_ext jupyter_refs`` calls this after every cell: ``del x``
        then shows in the refs and the sidebar without another call.
        """
        with self.locked():
            if self._drops and not self.closed:
                self._process_drops()
                self._end_call()

    def _process_drops(self) -> None:
        drops, trace = self._drops, self.trace
        while drops:
            state, key, cell = drops.popleft()
            if cell is None:
                self._send(state.release(key))
                continue
            # The release's events name the line that dropped the future.
            outer, trace.user_line = trace.user_line, cell
            try:
                self._send(state.release(key))
            finally:
                trace.user_line = outer

    def _wait(self, done: Callable[[], bool], what: str, timeout: float | None,
              needs: Callable[[], list[Message]] | None = None, first: bool = False) -> None:
        """Block until ``done()``, delivering messages as the policy allows (call under the lock).

        The call's source line stops being stamped here: what the network does
        while we wait is not the user's line.
        """
        self.trace.user_line = None
        if isinstance(timeout, str):  # dask takes "10 ms", "0.5s", "2 minutes" everywhere
            timeout = parse_timedelta(timeout, default="s")
        if self.live:
            mine = current_run.get()
            # A task waiting inside its run is counted as waiting, for what, until when.
            with self._runs.waiting_in(mine[1] if mine is not None else None, done, timeout):
                self._cond.notify_all()
                # Only a waiting task is told of a deadlock: its error then reaches the rest.
                starving = self._starved if mine is not None else _never
                if not self._wait_for(
                        lambda: done() or self.closed or self._stuck() or starving(), timeout):
                    raise TimeoutError(f"{what} did not complete within {timeout} s "
                                       f"({len(self._network)} messages in flight)")
                starved = not done() and starving()
            self._check_open()
            if not done():
                if starved:
                    self._raise_stuck(what, needs)
                raise self.held_error(what, [m for m in self.in_flight
                                              if self._network.is_held(m.channel)])
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        next_, deliver = self._next, self._deliver
        if current_run.get() is not None and isinstance(self.policy, Immediate):
            next_ = self._next_in_task  # a task waits: the others run beside it, not inside
        while not done():
            if interrupts.pending:
                interrupts.check()  # between two deliveries, the state is whole
            if self.closed:
                self._check_open()
            if self._drops:
                self._process_drops()
            msg = next_(False)
            if msg is None:
                if self._runs.running and self._runs.others():
                    # Immediate: a run from an earlier, timed-out call is still going.
                    self._wait_threads(lambda: done() or bool(self._network.in_flight)
                                       or not self._runs.others(), what, deadline)
                    continue
                if (deadline is not None and self._cond is not None
                        and not self._network.in_flight):
                    # Immediate, nothing in flight, a timeout: only another thread can
                    # help (a Variable set, a Queue put); wait it out, as dask does.
                    self._wait_threads(lambda: done() or bool(self._network.in_flight)
                                       or bool(self._drops), what, deadline)
                    continue
                self._raise_stuck(what, needs)
            if first and msg.op == EXECUTE and self._cond is not None:
                self._deliver(msg, threaded=True)  # runs side by side: the quickest ends first
                continue
            if deadline is not None and msg.op == EXECUTE and self._cond is not None:
                # Immediate with a deadline: the run goes on a thread; wait no longer than asked.
                run = self._deliver(msg, threaded=True)
                if run is not None:
                    self._wait_threads(lambda r=run: r.done or self.closed, what, deadline)
                continue
            deliver(msg)

    def _starved(self) -> bool:
        """Live: nothing in flight, every running task waits, and a worker's ready tasks have
        no thread — a deadlock (dask hangs in it; here each waiter is told)."""
        return (not self._network.in_flight and not self._drops and self._runs.all_waiting()
                and any(w.ready and not w.free_slots() for w in self.workers.values())
                and not self.grows())

    def _wait_threads(self, until: Callable[[], bool], what: str, deadline: float | None) -> None:
        """Immediate: let worker threads run (the lock released) until ``until()`` or the deadline."""
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._wait_for(until, remaining):
            raise TimeoutError(f"{what} did not complete within the timeout "
                               f"({len(self._runs.running)} task(s) still running)")

    def _raise_stuck(self, what: str, needs: Callable[[], list[Message]] | None) -> None:
        """Nothing can be delivered and ``what`` is not done: say why, rather than hang."""
        raise stuck.why_stuck(what, self.workers.values(), self._network, self.network_name,
                              needs)

    def held_error(self, what: str, held: list[Message]) -> HeldMessagesError:
        """The error for ``what`` waiting on ``held``, naming the holds that keep them: the
        user lifts a hold (``%hold --off``), or steps a manual network — never confuse the two."""
        return stuck.held_error(what, held, self._network, self.network_name)

    def _drain_network(self) -> None:
        """Immediate, at the end of a call: deliver every message — but run no task.

        A task runs when someone waits for it (``result``, ``gather``, ``wait``):
        ``submit`` returns a pending future, as on dask.
        """
        oldest = self._network.oldest_message
        while True:
            if interrupts.pending:
                interrupts.check()
            if self._drops:
                self._process_drops()
            msg = oldest()
            if msg is None:
                return
            self._deliver(msg)

    def _stuck(self) -> bool:
        """Live: only held messages are left, so nothing will move on its own."""
        network = self._network
        return bool(network.held and network.in_flight and not self._drops
                    and not network.heads())

    # -- delivery ----------------------------------------------------------------------

    def _next(self, force: bool) -> Message | None:
        # The simulated time is the trace's (stepped); live, whose clock is the real one,
        # a step() here asks the policy as of time 0, and moves no time.
        now = self.trace.now
        choice = self.policy.next(self._network, 0 if now is None else now)
        if choice is None:
            return self._network.oldest(held_too=True) if force else None
        msg, at = choice
        if now is not None and at > now:
            self.trace.now = at
        return msg

    def _next_in_task(self, force: bool) -> Message | None:
        """Immediate, a task waiting inside its run: :meth:`Immediate.next_in_task`."""
        choice = self.policy.next_in_task(self._network, self.trace.now)
        if choice is None:
            return self._network.oldest(held_too=True) if force else None
        return choice[0]

    def _deliver(self, msg: Message, threaded: bool = False) -> TaskRun | None:
        network, trace = self._network, self.trace
        network.take(msg)
        receiver = msg.receiver
        trace.record_msg(receiver, "msg.received", msg)
        run = None
        if msg.op == EXECUTE:
            run = self._execute(self.workers[receiver], msg.keys[0], threaded or self.live)
        else:
            if msg.op == GET_DATA_REPLY and "sent_at" in msg.payload:
                msg.payload["received_at"] = time.time()
            elif msg.op == GET_DATA and receiver in self.workers and (
                    self.live or self.scheduler.task_stream is not None):
                msg.payload = {**msg.payload, "received_at": time.time()}
            out = self._actors[receiver].handle(msg)
            if out:
                self._send(out)
        if not network.in_flight and not self._runs.running:
            trace.record(SCHEDULER, "network.drained", None)
        return run

    # -- task runs -----------------------------------------------------------------------

    def _execute(self, worker: WorkerState, key: str, threaded: bool) -> TaskRun | None:
        """Run ``key`` on ``worker``: here and now (stepped), or on a worker thread."""
        run, out = worker.begin(key)
        if out:
            self._send(out)
        if run is None:
            return None
        if threaded:
            # A partial, not a lambda: a lambda's variables are cells, made on every call.
            self._runs.start(run, partial(self._run_on_thread, worker, run))
            return run
        ok, value = self.run_inline(run)
        self._send(worker.finish(key, ok, value, self._timing(run)))
        run.done = True
        return run

    def run_inline(self, run: TaskRun) -> tuple[bool, Any]:
        """Run a task here and now (a stepped network's execute): the explorer wraps it for
        each run, to know which task's frame a delivery happens inside."""
        return task_runs.call(self, run)

    def _timing(self, run: TaskRun) -> tuple[int, float, float] | None:
        """``(thread, start, stop)`` of a run that just ended, while the scheduler keeps a task
        stream (``get_task_stream``) or the tasks' durations (``adapt``); None otherwise
        (nobody reads it)."""
        if self.scheduler.task_stream is None and self.scheduler.durations is None:
            return None
        return run.thread, run.started, run.stopped

    def _run_on_thread(self, worker: WorkerState, run: TaskRun) -> None:
        ok, value = task_runs.call(self, run)  # no lock held: the cluster goes on meanwhile
        with self._lock:
            self._runs.ended(run)
            if self.closed:
                return
            self._send(worker.finish(run.key, ok, value, self._timing(run)))
            if self.policy.drains:
                self._drain_network()
            if not self._network.in_flight and not self._runs.running:
                self.trace.record(SCHEDULER, "network.drained", None)
            self.trace.flush()
            self._cond.notify_all()

    def secede(self, run: TaskRun) -> None:
        """``run`` leaves its thread slot (``secede()``); a ready task may take it."""
        with self.call(None) as user_call:
            user_call.send(self.workers[run.worker].secede(run.key))

    def rejoin(self, run: TaskRun) -> None:
        """``run`` waits for a free slot of its worker and takes it (``rejoin()``)."""
        worker = self.workers[run.worker]
        if run.key not in worker.long_running:
            return
        with self.call(None) as user_call:
            user_call.wait(lambda: worker.free_slots() > 0, f"rejoin of {run.key}")
            worker.rejoin(run.key)

    def _run_live(self) -> None:
        policy = self.policy
        assert isinstance(policy, RandomLatency)
        cond = self._cond
        with cond:
            while not self.closed:
                self._process_drops()
                due = policy.due_ns(self._network)
                now = self._live_clock()
                if due is None or due > now:
                    wait = (_LIVE_POLL_IDLE_S if due is None
                            else min(_LIVE_POLL_BUSY_S, (due - now) / 1e9))
                    cond.wait(wait)
                    continue
                choice = policy.next(self._network, now)
                if choice is not None:
                    self._deliver(choice[0])
                    self.trace.flush()
                    cond.notify_all()
