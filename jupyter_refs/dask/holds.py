"""Holding messages of a real, in-process dask cluster: ``tracer.hold(pattern)``.

A held message is held *in dask*: it has reached its receiver, but the receiver's
handler has not run (a batched stream's message), or the RPC handler has not
started (a request), or the caller has not resumed (a reply).  ``deliver(msg_id)``
runs it, on the receiver's event loop, and returns once that loop has nothing
left to do right away — what the message caused has happened.  dask's own tests
force orders the same way, one place at a time (``freeze_batched_send`` blocks a
``BatchedSend``'s writes, ``BlockedGatherDep`` a worker's fetch, ``LockedComm`` a
comm's reads and writes); here every place the races live is one gate:

* the four batched streams, at their receiving ends: every entry of the
  scheduler's ``stream_handlers`` (client→scheduler, worker→scheduler: the
  ``client`` / ``worker`` that dask passes each handler names the sender), of each
  worker's ``stream_handlers`` (scheduler→worker) and of the client's
  ``_stream_handlers`` (scheduler→client).  Once a message of a channel waits,
  every later one on that channel waits behind it: FIFO, as on the wire;
* the RPCs on the scatter path: the request at its handler (the scheduler's
  ``scatter`` and ``update_data``, the worker's ``update_data`` — the data put),
  the reply where the caller awaits it (the client's ``client.scheduler`` proxy of
  :mod:`.tracer`, and a proxy of the scheduler's connection pool);
* while a controller steers (``confirm``), the client's ``gather`` the same way.

The gates wrap what the tracer already hooks (:class:`.hooks.Hooks` keeps the undo),
outermost, so a held message's receipt enters the trace when it is delivered.
Channel names and message ids are the trace's: ``client:1->scheduler``,
``scheduler->worker:<address>``, ``rpc:client:1#3``, ``rpc:scheduler#2``; a held
message's id is the id its send has in the trace.  dask's keep-alives and client
heartbeats, and the tracer's own event batches, are never held.

Only servers running in this process can be gated: see :func:`reach`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import JupyterRefsError, NotDeliverableError, UnknownMessageError
from ..protocol import messages as m
from ..protocol.payloads import kind_of
from . import remote

if TYPE_CHECKING:
    import distributed

    from ..focus import Focus


class DaskTracer(Protocol):
    """What holds need of the tracer that installs them (``tracer.DaskTracer`` has it):
    declared here, so that the tracer, which makes its holds, and its holds do not import
    each other."""

    client: distributed.Client
    me: str
    merging: threading.Lock
    #: Receipts not yet paired with their send, by signature (see ``DaskTracer.unmatched``).
    unmatched: dict[tuple, tuple[tuple[int, str, tuple]] | deque[tuple[int, str, tuple]]]

    @property
    def focused(self) -> Focus | None: ...

    def actor_name(self, raw: str | None) -> str | None: ...

    def hold(self, pattern: str) -> None: ...

    def hook_failed(self, label: str, exc: BaseException) -> None: ...

    def merge_upto(self, upto: int | None, yield_gil: bool = False) -> None: ...

    def push(self, t: int, actor: str, thread: str, kind: str, key: str | None,
             op: str | None = None, peer: str | None = None, keys: tuple = (),
             extra: tuple = ()) -> None: ...

    def rpc_channel(self, sender: str) -> str: ...

    def sync(self, timeout: float = 10.0) -> None: ...

#: Ops that are never held: dask's liveness messages and the tracer's own event batches.
NEVER_HELD = {"keep-alive", "heartbeat-client"}
#: Sends the tracer's hooks already record (sender kind, op), and receipts (receiver kind, op).
SENDS_TRACED = {("client", op) for op in (*remote.CLIENT_OPS, m.SCATTER, m.UPDATE_DATA)}
SENDS_TRACED |= {("scheduler", op) for op in (*remote.REPORT_OPS, *remote.WORKER_OPS,
                                               *(f"{rpc}-reply" for rpc in remote.REPLIED))}
RECEIPTS_TRACED = {("scheduler", op) for op in (*remote.CLIENT_OPS, m.SCATTER)}
RECEIPTS_TRACED |= {("client", op) for op in (*remote.REPORT_OPS,
                                             *(f"{rpc}-reply" for rpc in remote.REPLIED))}
RECEIPTS_TRACED |= {("worker", op) for op in remote.WORKER_OPS}
#: How long a blocking deliver waits for the receiver's loop.
DELIVER_TIMEOUT_S = 10.0
#: The client's requests gated only while a controller steers (``confirm``), and only the
#: traced client's (its ``client.scheduler`` proxy announces them): dask's ``Future.result()``
#: sends ``gather`` once the future's state wakes it, and the model orders it too.
STEERED_REQUESTS = ("gather",)


class Controller(Protocol):
    """What steers holds beyond the patterns (``confirm``'s overtakes): asked of each message
    at its gate, told of each delivery, and of each send (whatever reaches a gate was sent)."""

    def must_wait(self, sig: tuple, occurrence: int) -> bool: ...

    def delivered(self, sig: tuple, occurrence: int) -> None: ...

    def sent(self, sig: tuple, occurrence: int) -> None: ...


class HoldsUnavailableError(JupyterRefsError, RuntimeError):
    """The channel's receiving end runs in another process: it cannot be held from here."""


class StepNeverCameError(JupyterRefsError, RuntimeError):
    """A step of an order to deliver in never came: its message was never held."""


@dataclass(eq=False)
class HeldMessage:
    """A message held in dask, as ``Cluster.in_flight`` lists the kernel-side cluster's."""

    sender: str
    receiver: str
    op: str
    channel: str
    batched: bool
    keys: tuple[str, ...]
    msg_id: int | None = None
    t_ns: int = 0
    # How to deliver it: a stream message's handler call, or a gate's future.
    _loop: Any = field(default=None, repr=False)
    _call: Any = field(default=None, repr=False)
    _go: Any = field(default=None, repr=False)
    _occurrence: int = 0
    _record_receipt: bool = False

    def __str__(self) -> str:
        # as the model's Message prints: an RPC names its channel, never reads as the stream
        keys = ",".join(self.keys[:3]) + ("…" if len(self.keys) > 3 else "")
        line = f"#{self.msg_id} {self.op}[{keys}] {self.sender}->{self.receiver}"
        return line if self.batched else f"{line} on {self.channel}"

    def __repr__(self) -> str:
        return f"<HeldMessage {self} on {self.channel}>"

    @property
    def signature(self) -> tuple:
        return (self.sender, self.receiver, self.op, self.keys)


def _keys(kwargs: dict) -> tuple[str, ...]:
    keys = kwargs.get("keys")
    if keys is None:
        key = kwargs.get("key")
        return () if key is None else (remote.key_text(key),)
    return tuple(remote.key_text(k) for k in keys)


def servers(client: Any) -> tuple[Any, dict[str, Any], list[str]]:
    """This process's scheduler of ``client`` (or None), its workers here, and its workers elsewhere."""
    from distributed import Scheduler, Worker

    address = client.scheduler.address
    scheduler = next((s for s in list(Scheduler._instances) if s.address == address), None)
    if scheduler is not None:
        addresses = list(scheduler.workers)
    else:
        addresses = list(client.scheduler_info().get("workers", {}))
    local = {w.address: w for w in list(Worker._instances) if w.address in addresses}
    return scheduler, local, [a for a in addresses if a not in local]


def reach(client: Any) -> str:
    """What can be held on ``client``'s cluster from this process, in one sentence."""
    scheduler, workers, elsewhere = servers(client)
    if scheduler is None:
        return ("the scheduler runs in another process: nothing can be held from here "
                "(holds need the scheduler in this process)")
    if elsewhere:
        return (f"{len(elsewhere)} worker(s) run in other processes: the client's streams, the "
                "workers' streams to the scheduler and the scatter RPC can be held, not the "
                "scheduler's streams to workers nor the worker's data put")
    return "everything: scheduler and workers run in this process"


class Holds:
    """Every gate of one traced cluster, and the messages waiting at them."""

    def __init__(self, tracer: DaskTracer):
        from .hooks import Hooks

        self.tracer = tracer
        client = tracer.client
        self.scheduler, self.workers, self.elsewhere = servers(client)
        if self.scheduler is None:
            raise HoldsUnavailableError(
                f"the scheduler {client.scheduler.address} runs in another process: its channels "
                "cannot be held from here; holds work on in-process clusters "
                "(LocalCluster(processes=False), or a Scheduler and Workers started in this kernel)")
        self.patterns: set[str] = set()
        self._queues: dict[str, deque[HeldMessage]] = {}
        self._cond = threading.Condition(threading.RLock())
        self._seen: dict[tuple, int] = defaultdict(int)
        #: (receiver kind, op) of every message a gate here can hold.
        self.gated: set[tuple[str, str]] = set()
        self._expected: dict[tuple, deque[str]] = defaultdict(deque)
        self._draining: set[str] = set()
        self._settling: set[asyncio.Task] = set()  # let-through messages not yet handled
        self._closed = False
        #: When a gate last saw a message arrive or go (``time.monotonic()``).
        self.last_activity = time.monotonic()
        #: Optional: decides holds beyond the patterns, told of every delivery (``confirm``).
        self.controller: Controller | None = None
        #: Record every message the gates see (not only held ones) in the trace.
        self.record_all = False
        self.hooks = Hooks(tracer.hook_failed)
        self._install()

    # -- what the user calls ------------------------------------------------------------

    def unreachable(self, pattern: str) -> list[str]:
        """Channels ``pattern`` would name whose receiving end is in another process."""
        names = [self.actor_name(a) for a in self.elsewhere]
        out = [f"scheduler->{n}" for n in names if fnmatchcase(f"scheduler->{n}", pattern)]
        if self.elsewhere and fnmatchcase("rpc:scheduler#1", pattern):
            out.append("rpc:scheduler#… (the worker's data put)")
        return out

    def hold(self, pattern: str) -> None:
        far = self.unreachable(pattern)
        if far:
            raise HoldsUnavailableError(
                f"{pattern!r} names {', '.join(far)}, whose receiving end runs in another "
                f"process; here {reach(self.tracer.client).split(': ', 1)[-1]}")
        with self._cond:
            self.patterns.add(pattern)

    def release(self) -> set[str]:
        """Stop holding; what was held is delivered, each channel in order."""
        with self._cond:
            released, self.patterns = self.patterns, set()
            channels = [c for c, q in self._queues.items() if q]
        self._run_all(channels)
        return released

    @property
    def in_flight(self) -> list[HeldMessage]:
        """Held messages, oldest first: in the order they reached their gates.

        That is each channel's FIFO order, which ids do not always follow.  An id is its
        send's in the trace, and a message whose send the trace did not see (sent before
        ``attach``, or past the client's hooks, as dask sends a few of its own) is
        numbered when first listed, after messages already numbered that wait behind it.
        """
        self._resolve()
        with self._cond:
            return sorted((m for q in self._queues.values() for m in q), key=_arrival)

    def deliver(self, msg_id: int) -> HeldMessage:
        held = self.in_flight
        msg = next((m for m in held if m.msg_id == msg_id), None)
        if msg is None:
            raise UnknownMessageError(
                f"message {msg_id!r} is not held"
                + (f" (held: {', '.join(str(m.msg_id) for m in held)})" if held
                   else " (nothing is held)"))
        with self._cond:
            head = self._queues[msg.channel][0]
        if head is not msg:
            raise NotDeliverableError(
                f"message {msg_id} waits behind #{head.msg_id} on FIFO channel {msg.channel}; "
                f"deliver #{head.msg_id} first")
        self._run(msg.channel, msg)
        return msg

    def step(self, n: int = 1) -> list[HeldMessage]:
        delivered = []
        for _ in range(n):
            held = self.in_flight
            with self._cond:
                heads = [m for m in held if self._queues[m.channel][0] is m]
            if not heads:
                break
            msg = min(heads, key=_arrival)
            self._run(msg.channel, msg)
            delivered.append(msg)
        return delivered

    def held_count(self) -> int:
        with self._cond:
            return sum(len(q) for q in self._queues.values())

    def wait(self, until: Callable[[list[HeldMessage]], Any], timeout: float = 10.0) -> Any:
        """Wait until ``until(held messages)`` is true (the held messages, unresolved ids)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                got = until([m for q in self._queues.values() for m in q])
                if got:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no held message as expected within {timeout} s")
                # Woken by every arrival and delivery; ``until`` may also read what no gate
                # sees (a future done), so it is asked again now and then.
                self._cond.wait(min(left, 0.02))

    def steer(self, controller: Controller | None) -> None:
        """Let ``controller`` decide holds beyond the patterns (``confirm``), recording every
        message the gates see; ``None`` stops.  Occurrences (the n-th message of a signature,
        by which a controller knows a message) count from here: what this tracer saw before
        — an earlier run, the user's own traffic — is not part of the run being steered."""
        with self._cond:
            self._seen.clear()
            self.controller = controller
            self.record_all = controller is not None

    def close(self) -> None:
        """Deliver everything held, then remove every gate."""
        if self._closed:
            return
        self.controller = None
        self.release()
        self._closed = True
        self.hooks.undo()

    # -- installing the gates -----------------------------------------------------------------

    def _install(self) -> None:
        s, hooks = self.scheduler, self.hooks
        tracer = self.tracer
        s_loop = s.loop.asyncio_loop

        def scheduler_sender(kwargs: dict) -> str:
            return kwargs["worker"] if "worker" in kwargs else kwargs.get("client", "?")

        self._gate_streams(s.stream_handlers, "scheduler", scheduler_sender, s_loop, "scheduler")
        for worker in self.workers.values():
            self._gate_worker(worker)
        # A worker that joins later is gated once the tracer's recorder is set up on it
        # (its hooks first, so the gates stay outermost).
        remote.WORKER_SETUP.append(self._worker_joined)
        hooks.on_undo("worker setup", lambda: remote.WORKER_SETUP.remove(self._worker_joined))
        client = tracer.client
        self._gate_streams(client._stream_handlers, client.id, lambda kw: "scheduler",
                           client.loop.asyncio_loop, "client")
        self._gate_request(s.handlers, "scatter", "scheduler", "scatter", s_loop,
                           lambda kw: kw.get("client", "?"),
                           lambda kw: tuple(remote.key_text(k) for k in kw.get("data") or ()))
        self._gate_request(s.handlers, "update_data", "scheduler", "update-data", s_loop,
                           lambda kw: kw.get("client", "?"),
                           lambda kw: tuple(remote.key_text(k) for k in kw.get("who_has") or ()))
        for name in STEERED_REQUESTS:
            self._gate_request(s.handlers, name, "scheduler", name, s_loop,
                               functools.partial(self._announced, name, _keys), _keys)
        pool = s.rpc
        s.rpc = _PoolProxy(pool, self)
        hooks.on_undo("scheduler.rpc", lambda: setattr(s, "rpc", pool))
        # The replies held where their callers await them (the proxies' ``reply``).
        self.gated |= {("client", "scatter-reply"), ("client", "update-data-reply"),
                       ("scheduler", "update-data-reply")}
        self.gated |= {("client", f"{name}-reply") for name in STEERED_REQUESTS}

    def _gate_worker(self, worker: Any) -> None:
        address, loop = worker.address, worker.loop.asyncio_loop
        self._gate_streams(worker.stream_handlers, address, lambda kw: "scheduler", loop,
                           f"worker {address}")
        self._gate_request(worker.handlers, "update_data", address, "update-data", loop,
                           lambda kw: "scheduler",
                           lambda kw: tuple(remote.key_text(k) for k in kw.get("data") or ()))

    def _worker_joined(self, worker: Any) -> None:
        """A worker of this cluster, started in this process after the first hold."""
        if (self._closed or worker.address in self.workers
                or getattr(worker.scheduler, "address", None) != self.scheduler.address):
            return
        self.workers[worker.address] = worker
        self._gate_worker(worker)

    def _gate_streams(self, table: dict, receiver: str, sender_of: Callable[[dict], str],
                      loop: Any, label: str) -> None:
        kind = label.split(" ", 1)[0]
        for op in list(table):
            if op in NEVER_HELD:
                continue
            self.gated.add((kind, op))
            self.hooks.replace(table, op, functools.partial(self._stream_gate, op, receiver,
                                                            sender_of, loop),
                               label=f"hold {label} {op}")

    def _stream_gate(self, op: str, receiver: str, sender_of: Callable[[dict], str], loop: Any,
                     original: Callable[..., Any]) -> Callable[..., Any]:
        arrive = self._arrive
        exempt = op in ("event", "log-event", "subscribe-topic", "unsubscribe-topic")

        def call(args: tuple, kwargs: dict) -> HeldMessage | None:
            if exempt and kwargs.get("topic") == remote.TOPIC:
                return None  # the tracer's own plumbing
            return arrive(sender_of(kwargs), receiver, op, _keys(kwargs), True, loop,
                          (original, args, kwargs))

        if inspect.iscoroutinefunction(original):
            @functools.wraps(original)
            async def async_gate(*args: Any, **kwargs: Any) -> Any:
                if call(args, kwargs) is None:
                    return await original(*args, **kwargs)
                return None

            return async_gate

        @functools.wraps(original)
        def gate(*args: Any, **kwargs: Any) -> Any:
            if call(args, kwargs) is None:
                return original(*args, **kwargs)
            return None

        return gate

    def _gate_request(self, table: dict, name: str, receiver: str, op: str, loop: Any,
                      sender_of: Callable[[dict], str], keys_of: Callable[[dict], tuple]) -> None:
        if name not in table:
            return
        self.gated.add(("scheduler" if receiver == "scheduler" else "worker", op))

        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(original)
            async def gate(*args: Any, **kwargs: Any) -> Any:
                keys = keys_of(kwargs)
                sender = sender_of(kwargs)
                msg = None if sender is None else self._arrive(sender, receiver, op, keys, False,
                                                               loop, None)
                if msg is not None:
                    await msg._go
                result = original(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
                return result

            return gate

        self.hooks.replace(table, name, make, label=f"hold {receiver} {name}")

    # -- arriving at a gate --------------------------------------------------------------------

    def actor_name(self, raw: str) -> str:
        """The trace's name for a dask address (``worker:0``), as the tracer names it."""
        with self.tracer.merging:
            return self.tracer.actor_name(raw)

    def _channel(self, sender: str, receiver: str, op: str, keys: tuple,
                 batched: bool) -> tuple[str, bool]:
        """The message's channel, and whether a proxy here already recorded its send."""
        if batched:
            return f"{sender}->{receiver}", False
        expected = self._expected.get((sender, receiver, op, keys))
        if expected:
            return expected.popleft(), True
        return self.tracer.rpc_channel(sender), False

    def _announced(self, op: str, keys_of: Callable[[dict], tuple], kwargs: dict) -> str | None:
        """The traced client, if its proxy announced this request (:data:`STEERED_REQUESTS`
        name no sender); None — not gated — for any other's."""
        me = self.tracer.me
        with self._cond:
            return (self.tracer.client.id
                    if self._expected.get((me, "scheduler", op, keys_of(kwargs))) else None)

    def expect(self, channel: str, sender: str, receiver: str, op: str, keys: tuple) -> None:
        """A request sent on ``channel`` (by a proxy here): its handler's gate will know it by it."""
        with self._cond:
            self._expected[(sender, receiver, op, keys)].append(channel)

    def can_hold(self, receiver: str, op: str) -> bool:
        """Whether a gate here holds ``op`` on its way to ``receiver`` (a trace's actor name):
        only such a message's delivery is seen, and only its order can be made."""
        return (kind_of(receiver), op) in self.gated

    def _arrive(self, sender_raw: str, receiver_raw: str, op: str, keys: tuple, batched: bool,
                loop: Any, call: Any, channel: str | None = None) -> HeldMessage | None:
        """A message reached its receiver: hold it (returned) or let it through (None)."""
        sender, receiver = self.actor_name(sender_raw), self.actor_name(receiver_raw)
        send_traced, receipt_traced = self._traced(sender, receiver, op)
        now = time.time_ns()
        self.last_activity = time.monotonic()
        with self._cond:
            if channel is None:
                channel, proxied = self._channel(sender, receiver, op, keys, batched)
                send_traced = send_traced or proxied
            sig = (sender, receiver, op, keys)
            self._seen[sig] += 1
            occurrence = self._seen[sig]
            queue = self._queues.get(channel)
            controller = self.controller
            if controller is not None:
                # Whatever reaches a gate was sent: a message that waits for its send goes.
                controller.sent(sig, occurrence)
                self._kick()
            hold = not self._closed and (
                bool(queue) or any(fnmatchcase(channel, p) for p in self.patterns)
                or (controller is not None and controller.must_wait(sig, occurrence)))
            if not hold:
                # An RPC message is always recorded (both ends), a stream's only when held.
                if not batched or self.record_all:
                    self._record("msg.sent", sender, receiver, op, keys, channel, now, send_traced)
                    self._record("msg.received", sender, receiver, op, keys, channel, now,
                                 receipt_traced)
                if controller is not None:
                    self._handled(loop, controller, sig, occurrence)
                return None
            msg = HeldMessage(sender, receiver, op, channel, batched, keys, None, now, loop, call,
                              None if batched else loop.create_future(), occurrence)
            self._record("msg.sent", sender, receiver, op, keys, channel, now, send_traced)
            msg._record_receipt = not receipt_traced
            if queue is None:
                queue = self._queues[channel] = deque()
            queue.append(msg)
            self._cond.notify_all()
            return msg

    def _handled(self, loop: Any, controller: Any, sig: tuple, occurrence: int) -> None:
        """Tell ``controller`` of a message let through once its receiver has handled it.

        Its gate returns before the handler runs, and a reply resumes its caller only a few
        turns of the loop later: the scheduler registers a scatter after the put's reply
        passed its gate, behind ``asyncio.gather``.  A message that must wait for the reply
        and is let go at the gate could be handled first, which is not the order the model
        made (CI: a release let go before the scatter it was to follow had registered).
        """

        async def settle() -> None:
            await _settle()
            controller.delivered(sig, occurrence)
            if self.controller is controller:
                self._kick()

        def start() -> None:
            task = loop.create_task(settle())
            self._settling.add(task)
            task.add_done_callback(self._settling.discard)

        if _running_in(loop):
            start()
        else:
            loop.call_soon_threadsafe(start)

    def _traced(self, sender: str, receiver: str, op: str) -> tuple[bool, bool]:
        """Whether the tracer's own hooks record this message's send, and its receipt."""
        me = self.tracer.me
        kind_s, kind_r = sender.split(":", 1)[0], receiver.split(":", 1)[0]
        send = (kind_s, op) in SENDS_TRACED and (kind_s != "client" or sender == me)
        receipt = (kind_r, op) in RECEIPTS_TRACED and (kind_r != "client" or receiver == me)
        return send, receipt

    def _record(self, kind: str, sender: str, receiver: str, op: str, keys: tuple, channel: str,
                t: int, skip: bool = False) -> None:
        if skip:
            return
        actor, peer = (sender, receiver) if kind == "msg.sent" else (receiver, sender)
        self.tracer.push(t, actor, actor, kind, None, op, peer, keys, (remote.CHANNEL, channel))

    # -- replies, at the caller -----------------------------------------------------------------

    async def reply(self, channel: str, sender_raw: str, receiver_raw: str, op: str,
                    keys: tuple) -> None:
        """The reply of the RPC on ``channel`` reached its caller: wait here while it is held."""
        loop = asyncio.get_running_loop()
        msg = self._arrive(sender_raw, receiver_raw, op, keys, False, loop, None, channel)
        if msg is not None:
            await msg._go

    # -- delivering -------------------------------------------------------------------------------

    def _run(self, channel: str, msg: HeldMessage | None) -> None:
        """Deliver ``msg`` (the head of ``channel``), or drain the channel if None; wait for it."""
        loop = (msg or self._queues[channel][0])._loop
        coro = self._deliver(channel, msg)
        if _running_in(loop):
            loop.create_task(coro)
            return
        asyncio.run_coroutine_threadsafe(coro, loop).result(DELIVER_TIMEOUT_S)

    def _run_all(self, channels: Iterable[str]) -> None:
        for channel in channels:
            with self._cond:
                queue = self._queues.get(channel)
                if not queue:
                    continue
            self._run(channel, None)

    async def _deliver(self, channel: str, only: HeldMessage | None,
                       until: Callable[[HeldMessage], bool] | None = None) -> None:
        """On the receiver's loop: run the channel's head (``only``), or every message on it."""
        queue = self._queues.get(channel)
        while queue:
            with self._cond:
                msg = queue[0]
                if only is not None and msg is not only:
                    return
                if until is not None and not until(msg):
                    return
                queue.popleft()
            self.last_activity = time.monotonic()
            if msg._record_receipt:
                self._record("msg.received", msg.sender, msg.receiver, msg.op, msg.keys, channel,
                             time.time_ns())
            if msg._go is not None:
                if not msg._go.done():
                    msg._go.set_result(None)
            else:
                handler, args, kwargs = msg._call
                result = handler(*args, **kwargs)
                if inspect.isawaitable(result):
                    await result
            await _settle()
            # Delivered once handled: a reply resumes its caller a few turns of the loop
            # after its gate opens (the scheduler registers a scatter after the put's reply
            # is delivered), and a message that must wait for it arrives meanwhile.
            controller = self.controller
            if controller is not None:
                controller.delivered(msg.signature, msg._occurrence)
            with self._cond:
                self._cond.notify_all()
            if controller is not None:
                self._kick()
            if only is not None:
                return

    def _kick(self) -> None:
        """Deliver every channel head the controller no longer makes wait (on the loop)."""
        controller = self.controller
        if controller is None:
            return
        with self._cond:
            for channel, queue in self._queues.items():
                if (not queue or channel in self._draining
                        or any(fnmatchcase(channel, p) for p in self.patterns)):
                    continue
                head = queue[0]
                if controller.must_wait(head.signature, head._occurrence):
                    continue
                self._draining.add(channel)
                head._loop.call_soon_threadsafe(self._start_drain, channel)

    def _start_drain(self, channel: str) -> None:
        controller = self.controller

        def free(msg: HeldMessage) -> bool:
            return controller is None or not controller.must_wait(msg.signature, msg._occurrence)

        async def drain() -> None:
            try:
                await self._deliver(channel, None, free)
            finally:
                with self._cond:
                    self._draining.discard(channel)
                    self._cond.notify_all()
                self._kick()

        asyncio.get_running_loop().create_task(drain())

    # -- ids ------------------------------------------------------------------------------------------

    def _resolve(self, again: bool = True) -> None:
        """Give each held message the id its send has in the trace."""
        with self._cond:
            pending = [m for q in self._queues.values() for m in q if m.msg_id is None]
        if not pending:
            return
        tracer = self.tracer
        if again:
            tracer.sync()
        with self._cond, tracer.merging:
            taken = {m.msg_id for q in self._queues.values() for m in q if m.msg_id is not None}
            focus = tracer.focused
            for msg in sorted(pending, key=lambda m: m.t_ns):
                sig = msg.signature
                if focus is not None:  # the trace holds only the keys in focus
                    sig = (*sig[:3], focus.keep(sig[3]))
                waiting = tracer.unmatched.get(sig, ())
                ids = [send[0] for send in waiting if send[0] not in taken]
                if ids:
                    msg.msg_id = ids[0]
                    taken.add(msg.msg_id)
        missing = [m for m in pending if m.msg_id is None]
        if missing and again:
            # Its send was not seen by any hook (a report dask sent past Scheduler.report):
            # it enters the trace now, with the time it arrived.
            for msg in missing:
                self._record("msg.sent", msg.sender, msg.receiver, msg.op, msg.keys, msg.channel,
                             msg.t_ns)
            tracer.merge_upto(None)
            self._resolve(again=False)


#: How long :func:`wait_step` waits for a step before it gives up.
STEP_TIMEOUT_S = 5.0


def wait_step(tracer: Any, step: str, key: str, second: Any = None,
              timeout: float = STEP_TIMEOUT_S) -> list[HeldMessage]:
    """Wait until the message of operation ``step`` about ``key`` is held, or, for the step
    ``"scattered"``, until the future ``second`` (a second scatter, run in a thread) is done;
    also stop at a held ordered-scatter barrier.  Returns what is held.

    A step that does not come within ``timeout`` seconds raises :class:`StepNeverCameError`,
    in one line naming the step and the channels held: its message travels on a channel not
    held (dask delivered it on its own), or it waits for a step ordered after it.
    """
    def ready(held: list[HeldMessage]) -> bool:
        if second is not None and any(msg.op == remote.BARRIER for msg in held):
            return True
        if step == "scattered":
            return second.done()
        return any(msg.op == step and key in msg.keys for msg in held)

    try:
        return tracer.wait_held(until=ready, timeout=timeout)
    except TimeoutError:
        held = ", ".join(sorted(tracer.held)) or "none"
        why = ("the second scatter did not return: a message it needs is still held" if step == "scattered"
               else f"no {step} about {key} reached a held channel (dask delivered it, or it comes later)")
        raise StepNeverCameError(f"step {step!r} never came within {timeout:g} s: {why}; "
                                 f"channels held: {held}") from None


def deliver_in_order(tracer: Any, order: Iterable[str], key: str, second: Any,
                     timeout: float = STEP_TIMEOUT_S) -> bool:
    """Deliver, step by step, the held messages about ``key`` in ``order`` (#8576 by hand).

    Each step is a message's operation — delivered once held, after whatever waits ahead
    of it on its channel — or ``"scattered"``: wait until the future ``second`` is done.
    Returns whether every step was taken: under ordered scatter the second scatter waits
    behind the held release (its barrier held there), so the order cannot happen.  A step
    that never comes raises :class:`StepNeverCameError` (see :func:`wait_step`); the caller
    releases its holds either way (``try/finally: tracer.release_holds()``).
    """
    for step in order:
        held = wait_step(tracer, step, key, second, timeout)
        if any(msg.op == remote.BARRIER for msg in held):
            return False  # ordered scatter: the scatter waits behind the held release
        if step != "scattered":
            target = next(msg for msg in held if msg.op == step and key in msg.keys)
            # Ahead of it on its channel may wait what an earlier round dropped: it goes first,
            # in the listing's order, not by id (a send the trace did not see is numbered late).
            for msg in [m for m in held[:held.index(target)] if m.channel == target.channel]:
                tracer.deliver(msg.msg_id)
            tracer.deliver(target.msg_id)
    return True


def _arrival(msg: HeldMessage) -> int:
    return msg.t_ns


async def _settle(rounds: int = 200) -> None:
    """Let the loop run what the delivery made ready (in-process comms included), then return."""
    loop = asyncio.get_running_loop()
    for _ in range(rounds):
        await asyncio.sleep(0)
        if not getattr(loop, "_ready", True):
            return


def _running_in(loop: Any) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class _PoolProxy:
    """The scheduler's connection pool with the worker's data put (``update_data``) gated."""

    def __init__(self, pool: Any, holds: Holds):
        self._pool = pool
        self._holds = holds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def __call__(self, addr: str, *args: Any, **kwargs: Any) -> Any:
        return _RPCProxy(self._pool(addr, *args, **kwargs), addr, self._holds)


class _RPCProxy:
    def __init__(self, rpc: Any, addr: str, holds: Holds):
        self._rpc = rpc
        self._addr = addr
        self._holds = holds

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._rpc, name)
        if name != "update_data":
            return attr
        holds, addr = self._holds, self._addr

        async def call(*args: Any, **kwargs: Any) -> Any:
            keys = tuple(remote.key_text(k) for k in kwargs.get("data") or ())
            tracer = holds.tracer
            channel = tracer.rpc_channel("scheduler")
            worker = holds.actor_name(addr)
            holds._record("msg.sent", "scheduler", worker, "update-data", keys, channel,
                          time.time_ns())
            holds.expect(channel, "scheduler", worker, "update-data", keys)
            result = await attr(*args, **kwargs)
            await holds.reply(channel, addr, "scheduler", "update-data-reply", keys)
            return result

        return call


