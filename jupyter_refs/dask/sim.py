"""A deterministic real cluster: distributed's own Scheduler, Workers and Clients, stepped.

``SimCluster(chooser)`` starts an in-process distributed cluster on an asyncio loop this
module drives (:class:`SimLoop`), with

- **virtual time**: the loop's clock and ``distributed.metrics.time`` / ``monotonic`` (and
  every module of distributed that imported them by name) read one virtual clock, which
  moves only when nothing else can happen: no callback ready, no message in flight, no
  task to run.  Then it jumps to the next timer;
- **every comm write a message** (:class:`SimMessage`): ``InProc.write`` (dask's in-process
  comm writes ``loop.add_callback(queue.put_nowait, msg)``) files the message in a FIFO per
  comm; it reaches the reader's queue only when the chooser delivers it.  Handshakes and
  end-of-stream marks go at once (they carry no protocol);
- **batching without a clock of its own**: each ``BatchedSend`` flushes on the loop's next
  turn (its interval is 0).  dask's 1–10 ms interval only delays a batched stream's
  messages, and the chooser already delivers them after any number of messages of other
  channels; what a batch holds is still what one turn of the loop sent;
- **task runs a step**: each worker's executor runs nothing on its own; a task run is a
  message on a channel of its own (op ``execute``) run, synchronously, when chosen; the
  offload thread (``distributed.utils._offload_executor``, which the scheduler's
  ``update-graph`` uses whatever ``distributed.comm.offload`` says) runs its work at once;
- **no thread**: the profiler is off, nothing else starts one; a callback posted to the loop
  from another thread is an error (:class:`SimError`), not a race;
- **the same ids every run**: ``uuid4`` / ``uuid1`` as distributed and dask call them, inproc
  addresses and ``random`` are seeded per run.

Every call a scenario makes on a client (``scatter``, ``submit(...).result()``, a future
dropped) runs the loop until it returns, the chooser picking each delivery on the way.
The run's trace (:attr:`SimCluster.trace`) lists each send, delivery, task run and timer
jump; :func:`compare` names the first event where two runs of one schedule part.

dask's private API this relies on is listed once, in :data:`PRIVATE_API`, with the release
it was checked on.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import heapq
import itertools
import random
import selectors
import sys
import threading
import time as _time
import uuid as _uuid
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from concurrent.futures import Future as CFuture
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..errors import JupyterRefsError, LivelockError

#: The release every entry of :data:`PRIVATE_API` was read and run on.
CHECKED_ON = "2026.8.0"

#: What of distributed's private API the simulator relies on (module: name — what for).
PRIVATE_API: dict[str, str] = {
    "distributed.comm.inproc.InProc.write": "replaced: a write files a SimMessage instead of "
                                            "loop.add_callback(write_q.put_nowait, msg)",
    "distributed.comm.inproc.InProc.abort": "replaced: the end-of-stream mark waits behind the "
                                            "comm's messages still in flight",
    "distributed.comm.inproc.InProc._write_q / _peer_addr / _local_addr": "read: the channel",
    "distributed.comm.inproc.InProcConnector.connect": "wrapped: which actor connected",
    "distributed.comm.inproc.global_manager.addr_suffixes": "reset per run: the same addresses",
    "distributed.comm.inproc._EOF": "the end-of-stream mark",
    "distributed.comm.inproc.Queue._q / peek": "a fast close marks each comm's end (its "
                                               "finalizer would warn of a dangling queue)",
    "distributed.client.Future._counter / _uid": "reset per run: a Future's token (so "
                                                 "submit's keys), the same in every process",
    "distributed.scheduler.TaskState._run_id_iterator": "reset per run: compute-task run ids",
    "distributed.utils_comm._round_robin_counter": "reset per run: scatter's worker choice",
    "distributed.batched.BatchedSend.interval": "set to 0 on every new BatchedSend",
    "distributed.utils._offload_executor": "replaced by an executor that runs at once",
    "distributed.metrics.time / monotonic (and each distributed module's imported copy)":
        "replaced by the virtual clock",
    "uuid (as each distributed and dask module imported it)": "seeded per run",
    "distributed.utils.SyncMethodMixin.sync (Client.sync)": "replaced on each client: a "
                                                            "blocking call drives the loop",
    "distributed.core.Server._workdir": "released at close (a work directory per server)",
    "distributed.node.ServerNode.start_http_server": "replaced: no HTTP server listens",
    "Worker(executor=...)": "public: the worker's tasks run as chosen steps",
    "tornado.ioloop.IOLoop.time": "replaced: tornado deadlines (BatchedSend's wait) are "
                                  "time.time() values, turned into loop delays against it",
    "asyncio.BaseEventLoop._run_once / _scheduled / _ready": "the loop is driven turn by turn",
}

#: dask's configuration under the simulator (set for the run, then restored).
CONFIG: dict[str, Any] = {
    "distributed.comm.offload": False,
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1h",
    "distributed.scheduler.work-stealing": False,
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
    "distributed.worker.memory.monitor-interval": "1h",
    "distributed.client.scheduler-info-interval": "1h",
    "distributed.worker.lifetime.duration": None,
    "distributed.scheduler.idle-timeout": None,
    "distributed.admin.system-monitor.interval": "1h",
    "distributed.scheduler.unknown-task-duration": "500ms",
}

EXECUTE = "execute"  # the model's op for a task run (protocol.messages.EXECUTE)
EPOCH = 1_800_000_000.0  # virtual wall clock at t=0 (distributed.metrics.time)


def _frames(msg: Any) -> list:
    """``msg`` as TCP writes it (``distributed.comm.tcp``: ``to_frames``, without offload).

    Why: dask's in-process comms hand the very objects across, so a future a client
    publishes reaches another client as the same object, bound to the first — a path no
    cluster over TCP takes (two in-process clients: ``get_dataset``'s future raises
    AttributeError in ``_gather``).  Users' clusters talk TCP.
    """
    from distributed.protocol import dumps

    return dumps(msg, on_error="raise")


def _put_pickled(q: Any, frames: list, deserialize: bool) -> None:
    """Deliver: deserialize as TCP's ``from_frames`` does, on the receiver's loop."""
    from distributed.protocol import loads

    q.put_nowait(loads(frames, deserialize=deserialize))


class SimError(JupyterRefsError, RuntimeError):
    """The simulation cannot stay deterministic (a thread touched the loop, a call hangs…)."""


class DivergenceError(SimError):
    """Two runs of one schedule differ: names the first event where they part."""


class HangError(SimError):
    """A scenario's call can never return: nothing ready, nothing in flight, no timer due."""


#: Which actor's code is running: set in each actor's start, inherited by its tasks.
ACTOR: contextvars.ContextVar[str] = contextvars.ContextVar("jupyter_refs_sim_actor",
                                                           default="?")

_ACTIVE: SimCluster | None = None  # the cluster whose run is in progress


# -- the loop -----------------------------------------------------------------------------------


class _Selector(selectors.DefaultSelector):
    """Never waits: a turn that would wait (nothing ready) stops the loop, and the driver
    decides what happens next (a delivery, a task run, or time moving on)."""

    def __init__(self) -> None:
        super().__init__()
        self.loop: SimLoop | None = None

    def select(self, timeout: float | None = None) -> list:
        events = super().select(0)
        if (timeout is None or timeout > 0) and not events:
            self.loop.idle = True
            self.loop.stop()
        return events


class SimLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on a virtual clock, driven turn by turn from one thread."""

    def __init__(self) -> None:
        selector = _Selector()
        super().__init__(selector)
        selector.loop = self
        self.now = 0.0
        self.idle = False
        self.owner = threading.get_ident()
        self.foreign: list[str] = []
        #: The scenario's thread while it runs (it runs only while the driver waits).
        self.guest: int | None = None

    def time(self) -> float:
        return self.now

    def call_soon_threadsafe(self, callback: Callable, *args: Any, context: Any = None) -> Any:
        if threading.get_ident() not in (self.owner, self.guest):
            self.foreign.append(getattr(callback, "__qualname__", repr(callback)))
        return self.call_soon(callback, *args, context=context)

    def settle(self) -> None:
        """Run until nothing is ready (timers due now included)."""
        self.idle = False
        while not self.idle:
            self.run_forever()

    def next_timer(self) -> float | None:
        while self._scheduled and self._scheduled[0]._cancelled:  # not ours: asyncio's
            heapq.heappop(self._scheduled)
            self._timer_cancelled_count -= 1
        return self._scheduled[0]._when if self._scheduled else None


# -- executors ----------------------------------------------------------------------------------


class _AtOnce(Executor):  # also the loop's default executor
    """Runs what it is given at once, on the calling thread (the offload thread's stand-in)."""

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> CFuture:
        fut: CFuture = CFuture()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - the caller reads it from the future
            fut.set_exception(exc)
        return fut


class _Steps(Executor):
    """A worker's executor: each task run waits as a message until the chooser runs it."""

    def __init__(self, sim: SimCluster, worker: str):
        self.sim = sim
        self.worker = worker

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> CFuture:
        fut: CFuture = CFuture()
        key = ACTOR_KEY.get()

        def run() -> None:
            if not fut.set_running_or_notify_cancel():
                return  # cancelled before it started: a thread pool would not run it either
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - the worker reads it from the future
                fut.set_exception(exc)

        self.sim._execution(self.worker, key, run)
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


#: The key of the task a worker is about to run (set by the wrapped ``Worker.execute``).
ACTOR_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar("jupyter_refs_sim_key",
                                                                       default=None)


# -- messages -----------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class SimMessage:
    """A write in flight (or a task run waiting), as the explorer's policies see a Message."""

    msg_id: int
    sender: str
    receiver: str
    op: str
    channel: str
    keys: tuple
    payload: Any = field(repr=False)
    deliver: Callable[[], None] = field(repr=False)
    auto: bool = False  # delivered as soon as it is its channel's head (no decision)

    @property
    def key(self) -> str | None:
        return self.keys[0] if self.keys else None


def _keys_of(msg: dict) -> list:
    out: list = []
    for name in ("keys", "key", "who_has", "data", "nbytes", "tasks"):
        v = msg.get(name)
        if v is None:
            continue
        if isinstance(v, (str, bytes, int)) or (isinstance(v, tuple) and name == "key"):
            out.append(v)
        elif isinstance(v, dict):
            out.extend(v)
        elif isinstance(v, (list, tuple, set, frozenset)):
            out.extend(k for k in v if isinstance(k, (str, tuple)))
    return out


def _delivered_already() -> None:
    raise SimError("a message was delivered twice")


def _describe(payload: Any, request: str | None) -> tuple[str, tuple]:
    """A write's op and keys: a batch's ops joined by ``+``, a reply ``<request>-reply``."""
    if isinstance(payload, list) and (request is None or any(
            isinstance(m, dict) and "op" in m for m in payload)):
        ops, keys = [], []
        for m in payload:
            if isinstance(m, dict):
                ops.append(str(m.get("op")))
                keys += _keys_of(m)
        return "+".join(ops) or "batch", tuple(dict.fromkeys(str(k) for k in keys))
    if isinstance(payload, dict) and "op" in payload:
        return str(payload["op"]), tuple(dict.fromkeys(str(k) for k in _keys_of(payload)))
    if request is not None:  # a reply: a dict, or a list of them (publish_get's datasets)
        parts = payload if isinstance(payload, list) else [payload]
        keys = [k for part in parts if isinstance(part, dict) for k in _keys_of(part)]
        return f"{request}-reply", tuple(dict.fromkeys(str(k) for k in keys))
    return "reply", ()


def _is_handshake(payload: Any) -> bool:
    return isinstance(payload, dict) and "pickle-protocol" in payload and "op" not in payload


# -- the cluster --------------------------------------------------------------------------------


Chooser = Callable[[Sequence[SimMessage]], SimMessage]


def oldest(heads: Sequence[SimMessage]) -> SimMessage:
    return heads[0]


class SimCluster:
    """An in-process distributed cluster on a :class:`SimLoop`, delivering as ``chooser`` picks.

    ``chooser(heads)`` gets the deliverable messages (each channel's oldest, task runs
    included), oldest first, and returns one; it is asked only when there are two or more
    (``decisions`` counts them).  Start-up delivers in order, without asking.
    """

    def __init__(self, chooser: Chooser = oldest, workers: int = 1, clients: int = 1,
                 threads_per_worker: int = 2, seed: int = 0, max_deliveries: int = 10_000,
                 max_wait: float = 10.0, pickled: bool = True):
        self.chooser = chooser
        #: Every message serialized when written and deserialized when delivered, as over TCP
        #: (see ``_send``); False: in-process comms, which hand the very objects across.
        self.pickled = pickled
        self.n_workers = workers
        self.n_clients = clients
        self.threads = threads_per_worker
        self.seed = seed
        self.max_deliveries = max_deliveries
        self.max_wait = max_wait
        self.trace: list[tuple] = []
        self.deliveries = 0
        self.decisions = 0
        self._ids = itertools.count(1)
        self._channels: dict[Any, deque[SimMessage]] = {}
        self._chan_names: dict[Any, str] = {}
        self._requests: dict[Any, deque[str]] = {}  # reverse channel -> request ops awaiting
        self._names: dict[str, str] = {}  # address -> actor name
        self._exec_ids = itertools.count(1)
        self._steering = False  # False during start-up and close: in order, no decision
        self._restore: list[Callable[[], None]] = []
        self.loop = SimLoop()
        #: Exceptions dask's own code raised on the loop and nobody caught (a handler that
        #: failed an assertion): (trace position, text).
        self.errors: list[tuple[int, str]] = []
        self.loop.set_exception_handler(self._loop_error)
        self.loop._default_executor = _AtOnce()  # run_in_executor(None), to_thread: at once
        self._to_driver = threading.Semaphore(0)
        self._to_guest = threading.Semaphore(0)
        self._request: Any = None
        self._reply: Any = None
        self.scheduler: Any = None
        self.workers: list[Any] = []
        self.clients: list[Any] = []
        self.closed = False
        #: Called once the loop has settled after each step (the explorer's checks).
        self.after_delivery: Callable[[], None] | None = None
        self._install()
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # -- patches ----------------------------------------------------------------------------

    def _install(self) -> None:
        global _ACTIVE
        if _ACTIVE is not None:
            raise SimError("another SimCluster is running in this process; close it first")
        _ACTIVE = self
        import logging

        import dask
        import distributed.utils as dutils
        from distributed.batched import BatchedSend
        from distributed.comm import inproc

        # dask logs each task cancelled by a fast close, and each comm a closed run left
        # open ("Closing dangling queue"): quiet while this cluster runs
        quiet = [logging.getLogger(n) for n in ("distributed", "distributed.comm.inproc")]
        levels = [q.level for q in quiet]
        for q in quiet:
            q.setLevel(logging.CRITICAL)
        self._restore.append(lambda: [q.setLevel(lv) for q, lv in zip(quiet, levels)])
        cfg = dask.config.set({**CONFIG, "temporary-directory": _scratch()})
        self._restore.append(lambda: cfg.__exit__(None, None, None))
        rng_state = random.getstate()
        random.seed(self.seed)
        self._restore.append(lambda: random.setstate(rng_state))
        # inproc addresses: the same every run
        manager = inproc.global_manager
        suffixes = manager.addr_suffixes
        manager.addr_suffixes = itertools.count(1_000_001)
        self._restore.append(lambda: setattr(manager, "addr_suffixes", suffixes))
        self._patch(dutils, "_offload_executor", _AtOnce())
        # process-wide counters that go into keys and messages: from the start each run
        import distributed.client as dclient
        import distributed.scheduler as dscheduler
        import distributed.utils_comm as dutils_comm

        self._patch(dclient.Future, "_counter", itertools.count())  # a Future's token
        self._patch(dclient.Future, "_uid", f"{random.Random(f'uid:{self.seed}').getrandbits(128):032x}")
        self._patch(dscheduler.TaskState, "_run_id_iterator", itertools.count())  # run ids
        self._patch(dutils_comm, "_round_robin_counter", [0])  # scatter's worker choice
        # virtual clocks
        vtime, vmono = _virtual_time, _virtual_monotonic
        for name, mod in list(sys.modules.items()):
            if not (name == "distributed" or name.startswith("distributed.")) or mod is None:
                continue
            d = getattr(mod, "__dict__", {})
            if d.get("time") is _time.time or (name != "distributed.metrics"
                                                 and d.get("time") is _METRICS_TIME):
                self._patch(mod, "time", vtime)
            if d.get("monotonic") is _time.monotonic or d.get("monotonic") is _METRICS_MONO:
                self._patch(mod, "monotonic", vmono)
            if d.get("uuid") is _uuid:
                self._patch(mod, "uuid", self._uuid_module())
        for name, mod in list(sys.modules.items()):
            if name.startswith("dask.") and getattr(mod, "uuid", None) is _uuid:
                self._patch(mod, "uuid", self._uuid_module())
        sim = self

        async def write(comm: Any, msg: Any, serializers: Any = None, on_error: Any = None) -> int:
            if comm.closed():
                from distributed.comm.core import CommClosedError
                raise CommClosedError()
            sim._send(comm, msg)
            return 1

        def abort(comm: Any) -> None:
            if not comm.closed():
                sim._send(comm, inproc._EOF)
                comm._read_q.put_nowait(inproc._EOF)
                comm._write_q = comm._read_q = None
                comm._closed = True  # not ours: distributed's InProc comm
                comm._finalizer.detach()

        original_connect = inproc.InProcConnector.connect

        async def connect(connector: Any, address: str, deserialize: bool = True,
                          **kwargs: Any) -> Any:
            comm = await original_connect(connector, address, deserialize, **kwargs)
            sim._names.setdefault(comm._local_addr, ACTOR.get())
            return comm

        original_bs_init = BatchedSend.__init__

        def bs_init(bs: Any, interval: Any, loop: Any = None, serializers: Any = None) -> None:
            original_bs_init(bs, interval, loop, serializers)
            bs.interval = 0

        from distributed.node import ServerNode
        from tornado.ioloop import IOLoop

        self._patch(IOLoop, "time", _ioloop_time)
        self._patch(ServerNode, "start_http_server", _no_http_server)
        self._patch(inproc.InProc, "write", write)
        self._patch(inproc.InProc, "abort", abort)
        self._patch(inproc.InProcConnector, "connect", connect)
        self._patch(BatchedSend, "__init__", bs_init)
        self._eof = inproc._EOF

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        had = name in vars(owner)
        old = vars(owner).get(name)
        setattr(owner, name, value)
        self._restore.append(lambda: setattr(owner, name, old) if had else delattr(owner, name))

    def _uuid_module(self) -> ModuleType:
        shim = getattr(self, "_uuid_shim", None)
        if shim is None:
            rng = random.Random(f"uuid:{self.seed}")
            shim = ModuleType("uuid")
            shim.__dict__.update({k: v for k, v in vars(_uuid).items() if not k.startswith("__")})
            shim.uuid4 = lambda: _uuid.UUID(int=rng.getrandbits(128), version=4)
            shim.uuid1 = lambda *a, **k: _uuid.UUID(int=rng.getrandbits(128), version=1)
            self._uuid_shim = shim
        return shim

    # -- start and close ----------------------------------------------------------------------

    def _start(self) -> None:
        from distributed import Client, Scheduler, Worker

        async def start_scheduler() -> Any:
            ACTOR.set("scheduler")
            s = Scheduler(protocol="inproc", dashboard=False, dashboard_address=None,
                          validate=False)
            await s
            return s

        self.scheduler = self._until(start_scheduler())
        self._names[self.scheduler.address] = "scheduler"
        for i in range(self.n_workers):
            name = f"worker:{i}"

            async def start_worker(name: str = name) -> Any:
                ACTOR.set(name)
                w = Worker(self.scheduler.address, nthreads=self.threads, name=name,
                           executor=_Steps(self, name), memory_limit=0, dashboard=False,
                           dashboard_address=None, validate=False)
                await w
                return w

            w = self._until(start_worker())
            self._names[w.address] = name
            self.workers.append(w)
            self._wrap_execute(w)
        for i in range(self.n_clients):
            name = f"client:{i + 1}"

            async def start_client(name: str = name) -> Any:
                ACTOR.set(name)
                c = Client(self.scheduler.address, asynchronous=True, set_as_default=False)
                await c
                return c

            c = self._until(start_client())
            c._asynchronous = False
            c.sync = functools.partial(self._sync, c, name)
            self.clients.append(c)
        self._settle_all()
        self.trace.clear()
        self._steering = True

    def _wrap_execute(self, worker: Any) -> None:
        original = worker.execute

        async def execute(key: Any, *args: Any, **kwargs: Any) -> Any:
            ACTOR_KEY.set(str(key))
            return await original(key, *args, **kwargs)

        worker.execute = execute

    def close(self, fast: bool = False) -> None:
        """Close clients, workers and scheduler (in order, no decision), then undo every patch.

        ``fast``: no orderly shutdown — every task on the loop is cancelled and the loop
        closed (the explorer's runs: nothing outlives the loop, and nobody is listening).
        """
        global _ACTIVE
        if self.closed:
            return
        self.closed = True
        self._steering = False
        self.loop.set_exception_handler(lambda loop, context: None)  # closing: dask's noise
        try:
            for c in self.clients if fast else ():
                c.status = "closed"
            for c in () if fast else self.clients:
                self._until(c._close(fast=True), limit=5.0, quiet=True)  # not ours: dask's Client
            for w in () if fast else self.workers:
                self._until(w.close(timeout=1), limit=5.0, quiet=True)
            if self.scheduler is not None and not fast:
                self._until(self.scheduler.close(), limit=5.0, quiet=True)
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            for server in [self.scheduler, *self.workers]:
                workdir = getattr(server, "_workdir", None)
                if workdir is not None:
                    workdir.release()  # else the next server's start scans every one left
            from distributed.comm import inproc

            for address in self._names:  # the listeners a fast close left registered
                inproc.global_manager.remove_listener(address.removeprefix("inproc://"))
            self._settle_all(limit=1.0, quiet=True)
            for q in self._channels:  # every comm's reader sees the end: no "dangling queue"
                if not isinstance(q, str) and q.peek(None) is not inproc._EOF:
                    q._q.appendleft(inproc._EOF)
            self._settle_all(limit=1.0, quiet=True)
        finally:
            try:
                self.loop.close()
            finally:
                for undo in reversed(self._restore):
                    undo()
                self._restore.clear()
                self.clients = []
                self.workers = []
                self.scheduler = None
                _ACTIVE = None

    # -- the network --------------------------------------------------------------------------

    def actor_name(self, address: str) -> str:
        """The trace's name for a dask address (``worker:0``), the address if it has none."""
        return self._names.get(address, address)

    def _send(self, comm: Any, msg: Any) -> None:
        q = comm._write_q
        sender, receiver = self.actor_name(comm._local_addr), self.actor_name(comm._peer_addr)
        chan = self._channels.get(q)
        if chan is None:
            chan = self._channels[q] = deque()
            n = len(self._chan_names) + 1
            self._chan_names[q] = f"{sender}->{receiver}#{n}"
        if msg is self._eof:
            op, keys, auto = "eof", (), True
        elif _is_handshake(msg):
            op, keys, auto = "handshake", (), True
        else:
            # a reply answers the oldest request that came the other way on this comm
            pending = self._requests.get(q)
            request = pending.popleft() if pending else None
            op, keys = _describe(msg, request)
            auto = False
            if isinstance(msg, dict) and "op" in msg and msg.get("reply", True):
                self._requests.setdefault(comm._read_q, deque()).append(str(msg["op"]))
        msg_id = next(self._ids)
        put = functools.partial(q.put_nowait, msg)
        if self.pickled and not auto:
            # The scheduler reads without deserializing (``Server(deserialize=False)``): it
            # unpickles a graph itself, in update_graph.
            put = functools.partial(_put_pickled, q, _frames(msg), receiver != "scheduler")
            msg = None  # written: as over TCP, the sender's objects are not held in flight
        m = SimMessage(msg_id, sender, receiver, op, self._chan_names[q], keys, msg, put, auto)
        chan.append(m)
        self._record("sent", m)

    def _execution(self, worker: str, key: str | None, run: Callable[[], None]) -> None:
        n = next(self._exec_ids)
        m = SimMessage(next(self._ids), worker, worker, EXECUTE, f"execute:{worker}#{n}",
                       (key,) if key else (), None, run)
        self._channels[m.channel] = deque([m])
        self._record("sent", m)

    def _record(self, what: str, m: SimMessage) -> None:
        if self.closed:
            return  # the trace is the run's; closing is not part of it
        self.trace.append((what, m.msg_id, m.sender, m.receiver, m.op, m.channel, m.keys,
                           round(self.loop.now, 9)))

    def heads(self) -> list[SimMessage]:
        """The deliverable messages: each channel's oldest, oldest first."""
        heads = [c[0] for c in self._channels.values() if c]
        heads.sort(key=lambda m: m.msg_id)
        return heads

    @property
    def in_flight(self) -> int:
        return sum(len(c) for c in self._channels.values())

    def _deliver(self, m: SimMessage) -> None:
        chan = self._channels[m.channel] if m.op == EXECUTE else None
        if chan is None:
            for c in self._channels.values():
                if c and c[0] is m:
                    chan = c
                    break
        chan.popleft()
        if not chan and m.op == EXECUTE:
            del self._channels[m.channel]
        self.deliveries += 1
        self._record("run" if m.op == EXECUTE else "delivered", m)
        deliver, m.deliver, m.payload = m.deliver, _delivered_already, None
        # Delivered, the message lets go of what it carried: the explorer keeps its decisions'
        # messages, and a future held there would keep its key wanted (no release) for ever.
        deliver()

    def _turn(self, steer: bool) -> bool:
        """One step once the loop has settled: a delivery or task run, else time moves on.
        False when nothing at all can happen."""
        heads = self.heads()
        auto = next((h for h in heads if h.auto), None)
        if auto is not None:
            self._deliver(auto)
            return True
        if heads:
            if len(heads) == 1 or not steer:
                pick = heads[0]
            else:
                self.decisions += 1
                pick = self.chooser(heads)
            if steer and self.deliveries >= self.max_deliveries:
                raise self._livelock()
            self._deliver(pick)
            return True
        when = self.loop.next_timer()
        if when is None:
            return False
        if when > self.loop.now:
            self.loop.now = when
            if not self.closed:
                self.trace.append(("time", round(when, 9)))
        return True

    def _loop_error(self, loop: Any, context: dict) -> None:
        exc = context.get("exception")
        if self.closed or isinstance(exc, asyncio.CancelledError):
            return
        where = ""
        task = context.get("future") or context.get("task")
        coro = getattr(task, "get_coro", lambda: None)() if task is not None else None
        if coro is not None:
            where = f" in {getattr(coro, '__qualname__', coro)}"
        if exc is not None:
            tb = exc.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            if tb is not None:
                code = tb.tb_frame.f_code
                where = f" in {code.co_name} ({code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno})"
            text = f"{type(exc).__name__}{where}: {exc}"
        else:
            text = f"{context.get('message')}{where}"
        self.errors.append((len(self.trace), text))

    def _livelock(self) -> LivelockError:
        """What the run kept delivering: the commonest messages of its last thousand."""
        seen = Counter(f"{e[4]}[{','.join(map(str, e[6]))}]" for e in self.trace[-2000:]
                       if e[0] == "delivered")
        repeated = ", ".join(f"{what} ×{n}" for what, n in seen.most_common(4))
        return LivelockError(f"the run delivered {self.max_deliveries:,} messages and went on "
                             f"repeating {repeated}: this order never lets the scenario finish")

    def _check_threads(self) -> None:
        if self.loop.foreign and not self.closed:
            raise SimError("a thread posted to the simulated loop (not deterministic): "
                           + ", ".join(self.loop.foreign[:3]))

    def _until(self, coro: Any, limit: float | None = None, quiet: bool = False) -> Any:
        """Run the loop until ``coro`` is done; start-up and close deliver in order.

        The outcome is kept in a box, not in the task: a finished task sits in a reference
        cycle until the collector runs, and a Future it returned would be released then,
        at a moment no schedule names.
        """
        box: list = []

        async def boxed() -> None:
            try:
                box.append((True, await coro))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                box.append((False, exc))

        task = self.loop.create_task(boxed())
        start = self.loop.now
        limit = self.max_wait if limit is None else limit
        try:
            while True:
                self.loop.settle()
                self._check_threads()
                if self.after_delivery is not None and self._steering:
                    self.after_delivery()
                if box:
                    break
                if not self._turn(self._steering):
                    if quiet:
                        task.cancel()
                        self.loop.settle()
                        return None
                    raise HangError("the call can never return: nothing ready, nothing in "
                                    "flight, no timer")
                if self.loop.now - start > limit:
                    if quiet:
                        task.cancel()
                        self.loop.settle()
                        return None
                    raise HangError(f"the call did not return within {limit:g} s of virtual "
                                    "time")
        except BaseException:
            if not task.done():
                task.cancel()
            raise
        del task
        # No local holds the outcome: this frame may outlive the call (a traceback that
        # passed through the loop keeps it), and with it whatever its locals held.
        if box[0][0] or quiet:
            return box.pop()[1] if box[0][0] else None
        raise box.pop()[1]

    def _settle_all(self, limit: float = 0.0, quiet: bool = False) -> None:
        """Deliver and run everything in flight (timers due later are left)."""
        while True:
            self.loop.settle()
            self._check_threads()
            if self.after_delivery is not None and self._steering:
                self.after_delivery()
            if not self.heads():
                return
            self._turn(self._steering)

    def drain(self) -> None:
        """After the scenario: every message in flight delivered (each a decision as usual)."""
        self._settle_all()

    def _sync(self, client: Any, actor: str, func: Callable, *args: Any,
              asynchronous: Any = None, callback_timeout: Any = None, **kwargs: Any) -> Any:
        """Client.sync: inside the loop, the coroutine; outside, the loop runs until it is done.

        Called from a scenario that :meth:`play` runs (on a thread of its own, which runs
        only while the driver waits for it), the call is handed to the driver.
        """
        if asyncio.events._get_running_loop() is self.loop or asynchronous:
            future = func(*args, **kwargs)
            if callback_timeout is not None:
                from distributed.utils import wait_for
                future = wait_for(future, callback_timeout)
            return future
        if self.closed:
            raise SimError("the simulated cluster is closed")

        async def call() -> Any:
            ACTOR.set(actor)
            if callback_timeout is not None:
                from distributed.utils import wait_for
                return await wait_for(func(*args, **kwargs), callback_timeout)
            return await func(*args, **kwargs)

        if threading.get_ident() != self.loop.guest:
            return self._until(call())
        self._request = call()
        self._to_driver.release()
        self._to_guest.acquire()
        ok, value = self._reply
        self._reply = None
        if ok:
            return value
        raise value

    def play(self, scenario: Callable[..., Any], *args: Any) -> Any:
        """Run ``scenario(*args)`` (default: the clients), each blocking call driving the loop.

        The scenario runs on a thread of its own that runs only while this one waits (so
        nothing is concurrent): the loop's frames then never sit under the scenario's, where
        a traceback kept in a reference cycle (tornado raises a TimeoutError at each batched
        flush) would keep the scenario's futures alive until the collector ran.
        Returns what the scenario returned; raises what it raised.
        """
        given = [args or tuple(self.clients)]
        outcome: list = []

        def guest() -> None:
            self.loop.guest = threading.get_ident()
            try:
                outcome.append((True, scenario(*given.pop())))
            except BaseException as exc:  # noqa: BLE001 - handed to the driver
                outcome.append((False, exc))
            finally:
                self._to_driver.release()

        thread = threading.Thread(target=guest, name="jupyter-refs-scenario", daemon=True)
        del args
        thread.start()
        while True:
            self._to_driver.acquire()
            if outcome:
                break
            coro, self._request = self._request, None
            try:
                self._reply = (True, self._until(coro))
            except BaseException as exc:  # noqa: BLE001 - raised in the scenario
                self._reply = (False, exc)
            self._to_guest.release()
        thread.join()
        self.loop.guest = None
        ok, value = outcome.pop()
        if ok:
            return value
        raise value

    def __enter__(self) -> SimCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SCRATCH: list[str] = []


def _scratch() -> str:
    """A directory of this process's own for the servers' work directories (each run's are
    removed when it closes): dask's shared scratch space is scanned at every server's start."""
    if not _SCRATCH:
        import atexit
        import shutil
        import tempfile

        _SCRATCH.append(tempfile.mkdtemp(prefix="jupyter-refs-sim-"))
        atexit.register(shutil.rmtree, _SCRATCH[0], True)
    return _SCRATCH[0]


def _virtual_time() -> float:
    """``distributed.metrics.time`` under the simulator (the real clock when none runs: a
    module first imported during a run keeps this function)."""
    sim = _ACTIVE
    return EPOCH + sim.loop.now if sim is not None else _time.time()


def _virtual_monotonic() -> float:
    sim = _ACTIVE
    return sim.loop.now if sim is not None else _time.monotonic()


def _no_http_server(node: Any, routes: Any, dashboard_address: Any, default_port: int = 0,
                    ssl_options: Any = None) -> None:
    """``ServerNode.start_http_server`` without a listening socket (no port, no real I/O)."""
    from distributed.http.routing import RoutingApplication
    from tornado.httpserver import HTTPServer

    node.http_application = RoutingApplication(routes)
    node.http_server = HTTPServer(node.http_application)
    node.http_server.address, node.http_server.port = "sim", 0


def _ioloop_time(self: Any) -> float:
    """tornado's ``IOLoop.time`` (``time.time()``: tornado turns its deadlines into asyncio
    delays against it, so it must read the virtual clock too)."""
    return _virtual_time()


_virtual_time.__name__ = "time"
_virtual_monotonic.__name__ = "monotonic"


import distributed.metrics as _metrics  # noqa: E402 - after the module's own definitions

_METRICS_TIME = _metrics.time
_METRICS_MONO = _metrics.monotonic


def compare(a: Sequence[tuple], b: Sequence[tuple]) -> None:
    """Raise :class:`DivergenceError` naming the first event where two traces differ."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            raise DivergenceError(f"the runs part at event {i}: {x!r} then {y!r}")
    if len(a) != len(b):
        i = min(len(a), len(b))
        extra = (a if len(a) > len(b) else b)[i]
        raise DivergenceError(f"the runs part at event {i}: one run ends, the other goes on "
                              f"with {extra!r}")
