"""``attach(client)``: trace a real dask.distributed cluster into a jupyter_refs Trace.

Three sources feed one trace:

* the **client**, in this process: hooks on this ``Client`` instance only (its
  refcounting, the messages it sends, the reports it handles, the scatter RPC);
* the **scheduler** and every **worker**, wherever they run: the plugins of
  :mod:`jupyter_refs.dask.remote`, whose batches come back as dask events on the
  ``jupyter-refs`` topic.

Events from different processes arrive late and in batches, so they wait in a
reorder buffer and enter the trace in timestamp order once they are ``lag``
seconds old and no source may still send older ones — each remote batch says
when it was taken (:meth:`DaskTracer.watermark`) — or at once on
:meth:`DaskTracer.sync`.  Remote timestamps are
corrected by each process's clock offset, estimated at attach time from a round
trip (the midpoint rule).  Dask messages carry no ids: a send and its receipt are
paired by content — same sender, receiver, operation and keys, first in first
out, which is what a batched stream guarantees.
"""

from __future__ import annotations

import asyncio
import bisect
import contextvars
import functools
import itertools
import operator
import os
import socket
import sys
import threading
import time
from collections import defaultdict, deque
from typing import Any

import dask
import distributed

from .. import arguments, gcscope
from ..checks import Checks, Violation, quiet_limit_for
from ..errors import JupyterRefsError, UnknownMessageError
from ..events import KINDS, namer
from ..focus import Focus, filter_while_focused
from ..trace import EXTRA, TRACE_ACTOR, Trace
from ..userline import add_library, user_frame
from . import holds as holds_mod
from . import remote
from .hooks import SKIP, Hooks
from .remote import CHANNEL, shared

_CHUNK = 256  # events merged between two yields of the GIL
CLIENT_OPS = remote.CLIENT_OPS
BATCHED = {*CLIENT_OPS, *remote.REPORT_OPS, *remote.WORKER_OPS}

# The keys of the scatter being run by this asyncio task, so that futures created by it
# are known to come from a scatter.
_scattering: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "jupyter_refs_scattering", default=None)
#: The user's line (``file:line``) of the call or drop being served.  Set in the user's
#: thread around a call, it reaches the call's coroutine on dask's event loop with the
#: context ``loop.add_callback`` copies; a drop's ``_dec_ref`` runs under the line that
#: dropped the future.  ``why`` starts its chains there, as on the kernel-side cluster.
_user_line: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jupyter_refs_user_line", default=None)
#: Kinds never stamped with the user's line: what happens while the call waits (as the
#: kernel-side cluster stops stamping once a call blocks).
#: No line read for a drop (out of focus, or reading it raised): ``_dec_ref`` goes as dask sent it.
_NO_LINE = object()
_UNSTAMPED = frozenset({"msg.received", "future.state", "hook.failed"})
#: The Client methods whose calls are stamped with the user's line.
USER_CALLS = ("scatter", "submit", "map", "gather", "compute", "persist")
# dask's frames are not the user's (a drop runs ``Future.__del__`` and ``Future.release`` of
# distributed on its way to ``loop.add_callback``), wherever dask is installed from.
add_library(os.path.dirname(os.path.abspath(distributed.__file__)))
add_library(os.path.dirname(os.path.abspath(dask.__file__)))


_time = operator.itemgetter(0)
#: A pending message row holds its peer where the trace row will hold its channel, and the
#: channel it knows (or None) where the trace row will hold its msg id.
CHANNEL_AT = 6
#: Items of a pending row (the trace's row shape, its extra one item):
#: ``DaskTracer._incoming`` holds them flat.
_ROW = 10
#: Items recorded here before the background thread seals them into a tuple (``_seal``).
_SEAL = 50_000
#: Named extras kept for reuse (``DaskTracer._rename``).
_RENAMED = 4096
#: The share of ``max_events`` that may wait for the merge while nobody watches.
#:
#: Waiting events are memory besides the trace's: once the trace is full, each one merged
#: drops one from the trace, but until then both are kept.  With the whole of
#: ``max_events`` allowed to wait (as before), an unwatched session held the full trace
#: *and* a second trace's worth of waiting rows (~155 B each), and each background merge
#: turned them into rows all at once (another ~140 B each, briefly, and the process keeps
#: that memory): a 2,000-task map in a loop under the default million grew from 264 to
#: 502 MB at the first merge.  A sixteenth keeps both to ~20 B per event of ``max_events``.
#: The merge's work per event is the same in any slices; only more of it falls during a
#: computation instead of at ``sync()`` (``benchmarks/bench_memory.py``).
BUFFER_SHARE = 16


def buffer_for(max_events: int) -> int:
    """The default ``buffer`` of a tracer keeping ``max_events``: see :data:`BUFFER_SHARE`."""
    return max(1_000, max_events // BUFFER_SHARE)


def _pending(t: int, actor: str, thread: str, kind: str, key: str | None, op: str | None,
             peer: str | None, keys: tuple, extra: tuple, cell: str | None) -> tuple:
    """A row recorded here, waiting for the merge: the trace's row shape (``trace.Row``)
    with its extra as one item, ``_ROW`` items (see :func:`_final`).

    A message's row is not final until the merge pairs it (its id and channel are only
    known then, in time order): until then it holds the peer in the channel's place and
    the channel it knows, if any, in the id's; its extra, its keys, is already final.
    """
    if kind == "msg.sent" or kind == "msg.received":
        return (t, actor, thread, kind, keys[0] if len(keys) == 1 else None,
                extra[1] if extra and extra[0] == CHANNEL else None, peer, op, cell, keys)
    return (t, actor, thread, kind, key, None, None, None, cell, extra)


def _final(flat: Any) -> list[tuple]:
    """The pending rows laid out flat in ``flat`` (``_ROW`` items each), each in the trace's
    row shape, its extra's fields in the row: a message's row (its keys in the extra's
    place already) waits for its pairing as it is."""
    return [row if row[CHANNEL_AT] is not None else row[:EXTRA] + row[EXTRA]
            for row in remote.events(flat, _ROW)]


def _interned(flat: list) -> list[tuple]:
    """A batch's flat events, as tuples, with their strings interned (see
    ``DaskTracer._unpack_remote``)."""
    intern = sys.intern
    out = []
    for t, kind, key, op, peer, keys, extra in remote.events(flat):
        out.append((t, intern(kind), None if key is None else intern(key),
                    None if op is None else intern(op), None if peer is None else intern(peer),
                    tuple(intern(k) if type(k) is str else k for k in keys) if keys else (),
                    tuple(intern(x) if type(x) is str else x for x in extra)))
    return out


def _caller_line() -> str | None:
    """``file:line`` of the user's line (``userline.py``): the first frame outside libraries."""
    frame = user_frame(sys._getframe(1))
    return _line(frame.f_code.co_filename, frame.f_lineno) if frame is not None else None


@functools.lru_cache(maxsize=4096)
def _line(filename: str, lineno: int) -> str:
    """One string per user line, so a line that drops 50,000 futures is one ``file:line`` in
    the trace, not 50,000 equal ones each kept until the merge (as ``remote.shared``)."""
    return f"{filename}:{lineno}"


# Kinds whose fields hold dask's raw client ids / worker addresses, by their declarations:
# the merge names them like the kernel-side actors.
_NAMED = {kind: rename for kind in KINDS if (rename := namer(kind)) is not None}


class NotOnDaskError(JupyterRefsError, RuntimeError):
    """Holding on a tracer that is detached."""


class AlreadyTracedError(JupyterRefsError, RuntimeError):
    """One tracer per dask cluster: their hooks would wrap each other."""


#: The client's requests its ``client.scheduler`` proxy observes: dask's method → the op.
#: The scatter path's always; :data:`.holds.STEERED_REQUESTS` only while ``confirm`` steers.
_OBSERVED = {"scatter": "scatter", "update_data": "update-data",
             **{name: name for name in holds_mod.STEERED_REQUESTS}}


class _SchedulerProxy:
    """``client.scheduler`` with the scatter-path RPCs observed (sent, with keys) and, while
    holds are installed, their replies held where the client awaits them; while ``confirm``
    steers, its requests too (``gather``)."""

    def __init__(self, rpc: Any, tracer: DaskTracer):
        self._rpc = rpc
        self._tracer = tracer

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._rpc, name)
        op = _OBSERVED.get(name)
        if op is None:
            return attr
        tracer = self._tracer
        steered = op in holds_mod.STEERED_REQUESTS
        if steered and (tracer._holds is None or tracer._holds.controller is None):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            keys = tuple(remote.key_text(k) for k in (kwargs.get("data") or kwargs.get("who_has")
                                                        or kwargs.get("keys") or ()))
            channel = tracer.rpc_channel(tracer.me)
            holds = tracer._holds
            if holds is not None:
                holds.expect(channel, tracer.me, "scheduler", op, keys)
            if steered:  # (its gate, told a proxy sent it, records only its receipt)
                tracer._local("msg.sent", None, op, "scheduler", keys, extra=(CHANNEL, channel))
            else:
                tracer._sent_scatter(op, keys, channel)
            result = await attr(*args, **kwargs)
            holds = tracer._holds
            if holds is not None:
                await holds.reply(channel, "scheduler", tracer.client.id, f"{op}-reply", keys)
            if op in remote.REPLIED:  # the scheduler's plugin recorded its send
                tracer._local("msg.received", None, f"{op}-reply", "scheduler", keys,
                              extra=(CHANNEL, channel))
            return result

        return call


class DaskTracer:
    """The trace, checks and views of one dask ``Client`` and the cluster it talks to."""

    def __init__(self, client: Any, *, max_events: int = 1_000_000,
                 remote_capacity: int | None = None,
                 interval: float = 0.05, lag: float = 0.25, ordered_scatter: bool = False,
                 buffer: int | None = None, stale: float = 5.0, keys: Any = None, sample: int = 1):
        arguments.dask_client(client)  # before any hook or plugin goes in
        focus = Focus.of(keys, sample)  # a bad focus is refused before anything is installed
        self.client = client
        self.trace = Trace(max_events, clock=time.time_ns)
        # The checks forget what they keep of keys long gone (see Beliefs.quiet_limit), so
        # their memory is bounded by ``max_events`` too.
        self.checks = Checks(self.trace, quiet_limit=quiet_limit_for(max_events), drains=False)
        self._watchers = self.trace.subscribers  # the checks: beyond them, someone watches live
        self.lag_ns = int(lag * 1e9)
        #: Events buffered before the background thread merges them even with nobody watching:
        #: ``max_events // 16`` by default (see :data:`BUFFER_SHARE`).
        self.buffer = buffer or buffer_for(max_events)
        self.closed = False
        self.late = 0  # events that arrived after later ones had entered the trace
        #: CPU time spent merging and checking, in the background and in ``sync`` (seconds of
        #: the merging thread's own time: not the time it waited for the GIL).
        self.merge_seconds = 0.0
        #: Guards what the event-loop callbacks update (``_marks``, ``_batches``, drop counts):
        #: held for a few dict updates only, so ``_on_remote`` — on the event loop that, in
        #: process, the scheduler and workers share — never waits for a merge.
        self._lock = threading.Lock()
        #: Guards the merge's own state (``_waiting``, ``_names``, the pairing tables): held for
        #: a whole merge, by one merging thread at a time.
        self.merging = threading.Lock()
        #: Set on a thread while it merges or syncs: a read then (the checks judging) must
        #: not ask for another merge.
        self._busy = threading.local()
        #: Recorded here, not yet sorted: rows of ``_ROW`` items laid out flat, as a remote
        #: batch is (a tuple kept per event until the merge made the collector run more).
        self._incoming: deque[Any] = deque()
        #: Older rows of ``_incoming``, sealed into tuples by the background thread (``_seal``).
        self._sealed: deque[tuple] = deque()
        self._sealed_rows = 0
        self._remote: deque[tuple[str, tuple]] = deque()  # (source, events) as they came
        self._buffered = 0  # remote events in ``_remote`` (a hint: updated without the lock)
        self._waiting: list[tuple] = []  # sorted by time, not yet old enough for the trace
        self._threads: dict[int, str] = {}
        self._msg_ids = itertools.count(1)
        #: (sender, receiver, op, keys) -> the sends not yet received, oldest first: (msg id,
        #: channel, extra).  One send waits as a 1-tuple, more in a deque: a message's keys are
        #: in its signature, so nearly every entry holds one send, and a deque is 760 B from
        #: malloc (a defaultdict of them made one per message, and one per receipt whose send
        #: is not in the trace, every key-in-memory of a map, only to delete it).
        self.unmatched: dict[tuple, tuple[tuple[int, str, tuple]] | deque[tuple[int, str, tuple]]] = {}
        #: (responder, requester, "op-reply", keys) -> the channels of requests not yet answered.
        self._awaiting_reply: dict[tuple, deque[str]] = defaultdict(deque)
        self._streams: dict[tuple[str, str], str] = {}  # (sender, receiver) -> its channel
        #: (kind, dask's extra) -> the extra named: once for the many events that say the same
        #: (every task's ``desire.applied`` by one client), see ``_rename``.
        self._renamed = functools.lru_cache(maxsize=_RENAMED)(self._rename)
        self._names: dict[str, str] = {client.id: "client:1"}
        self._offsets: dict[str, int] = {}
        self._batches: dict[str, int] = {}
        self._marks: dict[str, int] = {}  # per remote source: the ``now`` of its latest batch
        #: Remote sources the scheduler removed (raw address -> when): not waited for.
        self._gone: dict[str, int] = {}
        #: A remote source silent this long is not waited for (see :meth:`watermark`).
        self.stale_ns = int(stale * 1e9)
        self._released_t = 0
        self._barriers: dict[int, asyncio.Future] = {}
        self._tokens = itertools.count(1)
        self.ordered_scatter = ordered_scatter
        self.me = "client:1"
        self._rpc_calls: dict[str, itertools.count] = {}
        self._holds: Any = None  # holds.Holds, installed by the first hold
        self.hooks = Hooks(self.hook_failed)
        self._reported: set[str] = set()  # hooks whose failure is in the trace (once each)
        #: Whether remote batches reach us serialized (see ``_unpack_remote``).
        self._serialized = not str(client.scheduler.address).startswith("inproc://")
        if client.run_on_scheduler(remote.installed):
            raise AlreadyTracedError(
                f"{client.scheduler.address} is already traced by another tracer; detach it first")
        self._estimate_offsets()
        # A source's buffer holds what one of its handlers records before the next drain:
        # the update-graph of a 53,000-task map records 159,000 transitions in one go.  The
        # trace keeps the newest ``max_events`` anyway, so that bound is the buffers' too.
        remote_capacity = remote_capacity or max_events
        self._remote_capacity, self._interval = remote_capacity, interval
        self._refocus(None)
        if focus is not None:
            self._changed(focus)
            self._refocus(focus)
        self._subscribe()
        client.register_plugin(remote.SchedulerRecorder(remote_capacity, interval, focus),
                               name=remote.SCHEDULER_PLUGIN)
        client.register_plugin(remote.WorkerRecorder(remote_capacity, interval, focus),
                               name=remote.WORKER_PLUGIN)
        self._install_client_hooks()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jupyter-refs-dask", daemon=True)
        self._thread.start()
        self.trace.before_read = self._before_read

    # -- public ------------------------------------------------------------------------

    @property
    def dropped_remote(self) -> int:
        """Events a scheduler's or worker's recorder dropped (its buffer was full): ``trace.lost``."""
        return self.trace.lost

    @property
    def violations(self) -> list[Violation]:
        if not self.closed:
            self.sync()
        return list(self.checks.violations)

    def why(self, key: str, client: str | None = None) -> Any:
        """The causal chain from the user's line to the loss of ``key`` (see ``why.py``)."""
        from ..why import why

        self.sync()
        return why(self.trace, key, client)

    def sync(self, timeout: float = 10.0) -> None:
        """Bring every buffered event into the trace: scheduler and workers flush, we wait."""
        busy, self._busy.on = getattr(self._busy, "on", False), True
        try:
            expected = {"scheduler": self.client.run_on_scheduler(remote.flush_scheduler)}
            expected.update(self.client.run(remote.flush_worker))
            self._wait_for(expected, timeout)
            self.merge_upto(None)
        finally:
            self._busy.on = busy

    def _before_read(self) -> None:
        """Someone reads the trace (``len``, ``events``, an export): :meth:`sync` first, as
        ``violations`` does, so no reader sees a trace behind what happened.

        Not on dask's event loop (it would wait for itself), nor while this thread merges or
        syncs already, nor once detached (the trace then holds everything there was).
        """
        if self.closed or getattr(self._busy, "on", False):
            return
        if threading.get_ident() == getattr(self.client.loop.asyncio_loop, "_thread_id", None):
            return
        self.sync()

    def detach(self) -> None:
        """Remove every hook and plugin; the cluster is left as it was.  The trace stays."""
        if self.closed:
            return
        if self._holds is not None:
            # What is held is delivered first, in order; then every gate comes off.
            self._holds.close()
        self.closed = True
        self._stop.set()
        self._thread.join()
        client = self.client
        try:
            last = {"scheduler": client.run_on_scheduler(remote.uninstall_scheduler)}
            last.update(client.run(remote.flush_worker))
            self._wait_for(last, 5.0)
        finally:
            self.hooks.undo()
            client.unsubscribe_topic(remote.TOPIC)
            client.unregister_scheduler_plugin(remote.SCHEDULER_PLUGIN)
            client.unregister_worker_plugin(remote.WORKER_PLUGIN)
            self.merge_upto(None)

    close = detach

    def __enter__(self) -> DaskTracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.detach()

    def __repr__(self) -> str:
        state = "detached from" if self.closed else "attached to"
        return f"<DaskTracer {state} {self.client.scheduler.address}: {len(self.trace)} events>"

    @property
    def title(self) -> str:
        return f"dask {self.client.scheduler.address}"

    @property
    def ended(self) -> str:
        """How its end is told once detached (see :class:`~jupyter_refs.handle.ClusterHandle`)."""
        return f"the tracer was detached from {self.client.scheduler.address}"

    # What the magics and views need of a cluster (see handle.ClusterHandle).  Holds: holds.py.

    @property
    def can_hold(self) -> bool:
        """Whether channels can be held here: the scheduler runs in this process."""
        return not self.closed and holds_mod.servers(self.client)[0] is not None

    @property
    def steppable(self) -> bool:
        """Where channels can be held, held messages wait for ``deliver`` / ``step``: a view
        offers the step controls (dask delivers everything else on its own)."""
        return self.can_hold

    def channels(self) -> set[str]:
        """The channels the trace has seen messages on."""
        return self.trace.channels()

    @property
    def actors(self) -> set[str]:
        """The scheduler, this client, the workers the scheduler last reported, the clients
        seen: named as the trace names them."""
        workers = self.client.scheduler_info().get("workers", {})
        return {"scheduler", self.me, *map(self.actor_name, workers), *self._names.values()}

    def apply_drops(self) -> None:
        """Nothing to do: dask releases a dropped future on its own event loop (``Future.release``
        defers ``_dec_ref`` there), with no safe point for a cell's end to prompt."""

    def reach(self) -> str:
        """What can be held on this cluster from here, in one sentence."""
        return holds_mod.reach(self.client)

    def need_holds(self) -> holds_mod.Holds:
        if self.closed:
            raise NotOnDaskError("this tracer is detached: nothing can be held")
        if self._holds is None:
            self._holds = holds_mod.Holds(self)
        return self._holds

    @property
    def in_flight(self) -> list[holds_mod.HeldMessage]:
        """The messages held in dask, oldest first (only held ones: dask delivers the rest)."""
        return [] if self._holds is None else self._holds.in_flight

    @property
    def held(self) -> set[str]:
        return set() if self._holds is None else set(self._holds.patterns)

    def hold(self, pattern: str) -> None:
        """Hold the messages of channels matching ``pattern`` (e.g. ``client:1->scheduler``,
        ``rpc:scheduler#*``) in dask until ``deliver`` / ``step`` / ``release_holds``."""
        self.need_holds().hold(pattern)

    def deliver(self, msg_id: int) -> holds_mod.HeldMessage:
        """Let dask handle one held message (the first on its channel); returns when it has."""
        if self._holds is None:
            raise UnknownMessageError(f"message {msg_id!r} is not held (nothing is held)")
        return self._holds.deliver(msg_id)

    def step(self, n: int = 1) -> list[holds_mod.HeldMessage]:
        """Deliver the ``n`` oldest held messages (channel heads), one at a time."""
        return [] if self._holds is None else self._holds.step(n)

    def release_holds(self) -> set[str]:
        """Stop holding; what was held is delivered, each channel in order."""
        return set() if self._holds is None else self._holds.release()

    def wait_held(self, op: str | None = None, n: int = 1, timeout: float = 10.0,
                  until: Any = None) -> list[holds_mod.HeldMessage]:
        """Wait until ``n`` messages (of ``op``, if given) are held, or ``until(held)`` is true.

        A message sent is not yet held: it reaches its gate a moment later.  This waits for
        that, never for a race: what is held stays held until delivered.
        """
        holds = self.need_holds()
        if until is None:
            def until(held: list) -> bool:
                return sum(op is None or m.op == op for m in held) >= n
        holds.wait(until, timeout)
        return self.in_flight

    def run_until_idle(self, timeout: float = 10.0) -> int:
        """Deliver everything held (holds stay on), then bring the trace up to date."""
        delivered = 0
        while self._holds is not None and self._holds.in_flight:
            delivered += len(self._holds.step(len(self._holds.in_flight)))
        self.sync(timeout)
        return delivered

    def scheduler_state(self, key: str) -> str:
        """The real scheduler's state for ``key`` ("forgotten" if it has no task)."""
        return self.client.run_on_scheduler(remote.task_state, key=key)

    # -- focus ---------------------------------------------------------------------------

    @property
    def focused(self) -> Focus | None:
        """The keys the trace follows (None: every key); see :meth:`focus`."""
        return self._focus

    def focus(self, keys: Any = None, sample: int = 1) -> Focus | None:
        """Trace only ``keys`` from now on, everywhere: here, on the scheduler and on every
        worker (a worker that joins later too); ``focus()`` traces every key again.

        ``keys``: a glob (``"inc-*"``), a key prefix, a list of those, or a function
        ``key -> bool``; ``sample=N`` keeps one key in N, the same keys on every process.
        The change is an event of the trace (``focus.changed``): the checks forget keys
        that left, and judge a key that joined only from its next life.  Returns the focus.
        """
        new = Focus.of(keys, sample)
        if self.closed:
            raise NotOnDaskError("this tracer is detached: there is nothing to focus")
        old, t = self._focus, time.time_ns()
        joined = set(remote.joining(old, new, list(self.client.refcount)))
        self._refocus(new)
        joined.update(self.client.run_on_scheduler(
            remote.focus_scheduler, focus=new,
            worker_plugin=remote.WorkerRecorder(self._remote_capacity, self._interval, new)))
        for keys in self.client.run(remote.focus_worker, focus=new).values():
            joined.update(keys)
        self._changed(new, tuple(sorted(joined)), t)
        return new

    def _changed(self, focus: Focus | None, joined: tuple = (), t: int | None = None) -> None:
        """Record the change at ``t``, when it began: ``joined`` are the keys alive anywhere
        that joined the focus (see ``Beliefs.refocus``)."""
        fields = focus.fields if focus is not None else ((), 1)
        self._record(TRACE_ACTOR, "focus.changed", None, *fields, joined, t=t)

    def _refocus(self, focus: Focus | None) -> None:
        """Filter this client's events by ``focus``: ``_local`` and ``push`` become
        filtering ones (instance attributes) only while focused."""
        self._focus: Focus | None = focus
        #: The focus's answers so far ({} unfocused), which the client's pre-checks read
        #: (:func:`remote.turned_down_key`).
        self.answers: dict[str, bool] = {} if focus is None else focus.answers
        filter_while_focused(self, focus, _local="_local_focused", push="_push_focused")

    def _in_focus(self, key: str | None, keys: tuple) -> tuple | None:
        """The keys an event keeps under the focus, or None if it is left out."""
        focus = self._focus
        if key is not None:
            return keys if focus.wants(key) else None  # type: ignore[union-attr]
        if keys:
            return focus.keep(keys) or None  # type: ignore[union-attr]
        return keys

    def _local_focused(self, kind: str, key: str | None, op: str | None = None,
                       peer: str | None = None, keys: tuple = (), extra: tuple = ()) -> None:
        kept = self._in_focus(key, keys)
        if kept is not None:
            DaskTracer._local(self, kind, key, op, peer, kept, extra)

    def _push_focused(self, t: int, actor: str, thread: str, kind: str, key: str | None,
                      op: str | None = None, peer: str | None = None, keys: tuple = (),
                      extra: tuple = ()) -> None:
        kept = self._in_focus(key, keys)
        if kept is not None:
            DaskTracer.push(self, t, actor, thread, kind, key, op, peer, kept, extra)

    def _record(self, actor: str, kind: str, key: str | None, *extra: Any,
                t: int | None = None) -> None:
        """An event of this process with no client's hook behind it (the trace's own)."""
        self.push(time.time_ns() if t is None else t, actor, actor, kind, key, extra=extra)

    # -- recording -----------------------------------------------------------------------

    def push(self, t: int, actor: str, thread: str, kind: str, key: str | None,
              op: str | None = None, peer: str | None = None, keys: tuple = (),
              extra: tuple = ()) -> None:
        # A deque extend by a tuple is atomic (no Python code runs in it): recording takes no
        # lock (the hooks run on dask's threads), and the merge always takes whole rows.
        self._incoming.extend(_pending(t, actor, thread, kind, key, op, peer, keys, extra, None))

    def _local(self, kind: str, key: str | None, op: str | None = None, peer: str | None = None,
               keys: tuple = (), extra: tuple = ()) -> None:
        thread = self._threads.get(threading.get_ident())
        if thread is None:
            thread = self._threads[threading.get_ident()] = threading.current_thread().name
        cell = None if kind in _UNSTAMPED else _user_line.get()
        if kind == "msg.sent" or kind == "msg.received":
            self._incoming.extend(_pending(time.time_ns(), self.me, thread, kind, key, op, peer,
                                           keys, extra, cell))
        else:  # most of what the hooks record: the row itself, without a call in between
            self._incoming.extend((time.time_ns(), self.me, thread, kind, key, None, None, None,
                                   cell, extra))

    def actor_name(self, raw: str | None) -> str | None:
        if raw is None:
            return None
        name = self._names.get(raw)
        if name is None:
            if raw == "scheduler":
                name = "scheduler"
            elif raw.startswith("Client-") or not raw.startswith(("tcp://", "inproc://", "ucx://",
                                                                    "tls://", "ws://")):
                name = f"client:{1 + sum(n.startswith('client:') for n in self._names.values())}"
            else:
                name = "worker:" + raw.split("://", 1)[1]
            self._names[raw] = name
        return name

    def _on_remote(self, event: tuple) -> None:
        """A batch from the scheduler or a worker (runs on the client's event loop).

        It is only queued: naming its actors and ordering its events is the merge's job,
        off the event loop that the client, and in-process the scheduler and workers, share.
        Whatever it raises is reported (``hook.failed``), never passed to dask's handler.
        """
        try:
            self._queue_remote(event)
        except Exception as exc:  # noqa: BLE001 - dask's event loop would log it
            self.hook_failed("DaskTracer._on_remote", exc)

    def _queue_remote(self, event: tuple) -> None:
        _, msg = event
        events = msg["events"]
        if type(events) is not tuple:  # a batch from an older recorder, or a decoded list
            events = tuple(events)
        self._remote.append((msg["src"], events, self._serialized))
        self._buffered += len(events) // remote.STRIDE
        with self._lock:
            self.trace.lost += msg["dropped"]
            self._batches[msg["src"]] = max(self._batches.get(msg["src"], 0), msg["batch"])
            if "now" in msg:
                self._marks[msg["src"]] = max(self._marks.get(msg["src"], 0), msg["now"])
            if "gone" in msg:
                self._sources_gone(msg["gone"])

    def _sources_gone(self, gone: list) -> None:
        """Workers the scheduler removed: the merge stops waiting for them at once (call
        under the lock).

        Nothing older than the removal can still come from a killed worker: its batches
        travel to the scheduler on the stream whose closing made the removal, and from
        the scheduler to us on one stream, before the batch that says it is gone.  A
        retiring worker's last batch may come after it; it is merged like any other.
        """
        for address, t in gone:
            self._gone.setdefault(address, t)

    @property
    def gone(self) -> dict[str, int]:
        """The workers the scheduler removed (each with a ``worker.removed`` in the trace,
        once merged): actor name -> when, in ns.  The merge no longer waits for them."""
        with self._lock:
            gone = dict(self._gone)
        with self.merging:  # the names are the merge's
            return {self.actor_name(address): t for address, t in gone.items()}

    def _unpack_remote(self) -> list[tuple]:
        """The queued remote batches as pending rows (see :func:`_pending`), named (call while
        merging).

        A batch that came over a socket arrives with a fresh string object for every key,
        kind and state name in it (msgpack shares none), so those are interned: a key's
        twenty-odd events then hold one string, and a retained event stays near its
        in-process size.  Over ``inproc://`` a batch holds the recorder's own objects.
        """
        out: list[tuple] = []
        append = out.append
        name = self.actor_name
        renamed = self._renamed
        batches = self._remote
        for _ in range(len(batches)):
            src, events, serialized = batches.popleft()
            self._buffered -= len(events) // remote.STRIDE
            actor = name(src)
            offset = self._offsets.get(src, 0)
            rows = _interned(events) if serialized else remote.events(events)
            for t, kind, key, op, peer, keys, extra in rows:
                if kind == "msg.sent" or kind == "msg.received":
                    keys = tuple(keys)
                    append((t - offset, actor, actor, kind, keys[0] if len(keys) == 1 else None,
                            None, name(peer), op, None, keys))
                elif kind in _NAMED:
                    try:
                        named = renamed(kind, extra)
                    except TypeError:  # an unhashable field (a list a decoder made)
                        named = self._rename(kind, extra)
                    append((t - offset, actor, actor, kind, key, None, None, None, None, *named))
                else:
                    append((t - offset, actor, actor, kind, key, None, None, None, None, *extra))
        return out

    def _rename(self, kind: str, extra: Any) -> tuple:
        """``extra`` with its actors named (cached as ``_renamed`` for the next event that says
        the same).

        Named once for the many events that say the same, which also share what it holds
        (a ``who_wants`` tuple).  That keeps the collector away from the dask heap: a row
        holding fresh tuples of tuples is untracked one level per look of the collector,
        after promotion to the oldest generation, and a merge of a million events promoted
        enough of them to run a full collection over everything dask holds (0.36 s).  A
        shared tuple is older than the rows that hold its fields, and they are untracked at
        the first look.
        """
        return _NAMED[kind](self.actor_name, extra)

    def hook_failed(self, label: str, exc: BaseException) -> None:
        """One of our hooks raised: reported once per hook, as ``hook.failed`` (the ones
        ``Hooks`` wraps are removed by it; ``hooks.failed`` lists every one of this client's)."""
        if label in self._reported:
            return
        self._reported.add(label)
        error = f"{type(exc).__name__}: {exc}"
        self.hooks.failed.setdefault(label, error)
        self._local("hook.failed", None, extra=(label, error))

    # -- merging into the trace ------------------------------------------------------------

    def _run(self) -> None:
        """Merge in the background only while it is worth its cost.

        Merging and checking take the GIL from dask's own threads (in-process, from the
        event loop the scheduler and workers share), so nobody pays for them during a
        computation unless a live view watches the trace or the buffer grows past
        ``buffer`` events; ``sync()`` (and ``violations``, the magics, ``detach``) merges
        everything at once.
        """
        while not self._stop.wait(self.lag_ns / 2e9):
            if (self.trace.subscribers > self._watchers
                    or (len(self._incoming) // _ROW + self._sealed_rows + self._buffered
                        > self.buffer)):
                self.merge_upto(self.watermark(time.time_ns()), yield_gil=True)
            elif len(self._incoming) >= _SEAL:
                self._seal()

    def _seal(self) -> None:
        """Move the rows recorded here so far into one tuple, which the collector soon stops
        walking.

        Until the merge, events wait in containers, and every full collection visits
        every item of every list and deque it tracks: a million events laid out flat in
        lists cost each one about 60 ms here, and a 53,000-task map makes a dozen.  A
        tuple of strings, numbers and such tuples is untracked within a few of the
        collector's looks, so the remote batches come as tuples and this thread seals
        the client's own rows likewise.  The hooks keep appending to ``_incoming`` (no
        lock, whole rows); only a merging thread takes rows out, so sealing takes the
        merge's lock (and skips a turn while it is held).
        """
        if not self.merging.acquire(blocking=False):
            return
        try:
            incoming = self._incoming
            popleft = incoming.popleft
            rows = tuple([popleft() for _ in range(len(incoming))])
            self._sealed.append(rows)
            self._sealed_rows += len(rows) // _ROW
        finally:
            self.merging.release()

    def watermark(self, now: int) -> int:
        """How far the trace can be merged in order: ``lag`` ago, and no later than any source
        that may still send older events.

        Each remote batch says when it was taken (``now``; an idle source sends an empty one
        every ``remote.HEARTBEAT_S``), so under load a late scheduler or worker holds the
        merge back instead of having its events enter the trace after later ones — where a
        check would judge a state that never was.  A source silent for ``stale`` seconds
        (a worker gone) is not waited for, nor, at once, one the scheduler has removed.
        """
        upto = now - self.lag_ns
        with self._lock:
            gone = self._gone
            marks = [mark - self._offsets.get(src, 0) for src, mark in self._marks.items()
                     if src not in gone]
        for mark in marks:
            if now - mark < self.stale_ns:
                upto = min(upto, mark)
        return upto

    def merge_upto(self, upto: int | None, yield_gil: bool = False) -> None:
        """Move buffered events up to time ``upto`` (all if None) into the trace, in time order.

        The work per event is kept to what needs Python: rows are built once, in their
        final shape, when they are recorded or unpacked; one stable sort by time orders
        them (each source's rows come in time order, so it merges a few runs, and equal
        times keep the order they came in); then slice by slice, in time order, each
        receipt is paired with its send and the slice enters the trace and the checks.
        ``yield_gil`` (the background thread, during a computation): let dask's threads
        have the GIL between slices, since in-process the scheduler waits on us otherwise.
        """
        busy, self._busy.on = getattr(self._busy, "on", False), True
        with self.merging, gcscope.scope(full=False):
            began = time.thread_time()
            try:
                self._merge(upto, yield_gil)
            finally:
                self.merge_seconds += time.thread_time() - began
                self._busy.on = busy

    def _merge(self, upto: int | None, yield_gil: bool) -> None:
        """The body of :meth:`merge_upto`, under its lock."""
        fresh: list[tuple] = []
        sealed = self._sealed
        while sealed:  # older than what is still in _incoming
            rows = sealed.popleft()
            self._sealed_rows -= len(rows) // _ROW
            fresh += _final(rows)
        incoming = self._incoming
        # Whole rows only: a hook's extend is atomic, so the length is a multiple of _ROW.
        popleft = incoming.popleft
        fresh += _final([popleft() for _ in range(len(incoming))])
        if self._remote:
            fresh += self._unpack_remote()
        waiting = self._waiting
        if fresh:
            waiting.extend(fresh)
            waiting.sort(key=_time)
        n = len(waiting) if upto is None else bisect.bisect_right(waiting, upto, key=_time)
        if not n:
            self.trace.flush()
            return
        self._waiting = waiting[n:]
        # Rows older than what earlier merges released came too late to be in order.
        self.late += bisect.bisect_left(waiting, self._released_t, 0, n, key=_time)
        self._released_t = max(self._released_t, waiting[n - 1][0])
        pair = self._pair
        extend, flush = self.trace.extend, self.trace.flush
        # One slice at a time, paired, into the trace and checked: each row is visited while
        # it is in the cache.  Copying and pairing the whole merge first (a 40,000-task map's
        # update-graph brings 160,000 rows in one merge, tens of MB with their inputs) made
        # two more passes over every row, and the checks met it out of the cache again:
        # cachegrind, a 40,000-task merge replayed, 15.2 against 9.9 last-level misses per event.
        for start in range(0, n, _CHUNK):
            ready = waiting[start:min(start + _CHUNK, n)]
            for i, row in enumerate(ready):
                if row[CHANNEL_AT] is not None:
                    t, actor, thread, kind, key, channel, peer, op, cell, keys = row
                    sender, receiver = (actor, peer) if kind == "msg.sent" else (peer, actor)
                    msg_id, channel, keys = pair(kind, sender, receiver, op, keys, channel)
                    ready[i] = (t, actor, thread, kind, key, msg_id, channel, op, cell, keys)
            extend(ready)
            # Hand the checks a slice: a live view sees the trace grow.
            flush()
            if yield_gil:
                time.sleep(0)

    def _pair(self, kind: str, sender: str, receiver: str, op: str, keys: tuple,
              channel: str | None = None) -> tuple[int, str, tuple]:
        """A msg id for a send; for a receipt, the id (and channel) of the oldest unmatched
        identical send.  Returns the row's keys too: a receipt takes its send's, an equal
        tuple, so a message's two rows hold one (a receipt's own was ~48 B: on a map, a few
        B of the ~220 a kept event cost)."""
        channel_key = (sender, receiver, op, keys)
        unmatched = self.unmatched
        waiting = unmatched.get(channel_key)
        if kind == "msg.sent":
            msg_id = next(self._msg_ids)
            if op.endswith("-reply"):
                # A reply goes back on its request's channel (``rpc:client:1#3``), as on the
                # kernel-side cluster; the scheduler's plugin that records it cannot know it.
                requests = self._awaiting_reply.get(channel_key)
                if requests:
                    asked = requests.popleft()
                    channel = channel or asked
                    if not requests:
                        del self._awaiting_reply[channel_key]
            elif op in remote.REPLIED and channel is not None:
                self._awaiting_reply[(receiver, sender, f"{op}-reply", keys)].append(channel)
            if channel is None:
                channel = self._channel(sender, receiver, op, msg_id)
            send = (msg_id, channel, keys)
            if waiting is None:  # the usual case: no identical send in flight
                unmatched[channel_key] = (send,)
            elif type(waiting) is tuple:
                unmatched[channel_key] = deque((*waiting, send))
            else:
                waiting.append(send)
            return msg_id, channel, keys
        if waiting is None:  # its send is not in the trace (a report dask's scheduler sent)
            msg_id = next(self._msg_ids)
            if channel is None:
                channel = self._channel(sender, receiver, op, msg_id)
        elif type(waiting) is tuple:
            msg_id, channel, keys = waiting[0]
            del unmatched[channel_key]
        else:
            msg_id, channel, keys = waiting.popleft()
            if not waiting:
                del unmatched[channel_key]
        return msg_id, channel, keys

    def _channel(self, sender: str, receiver: str, op: str, msg_id: int) -> str:
        """The channel of a message whose send did not name one: its batched stream
        (``scheduler->client:1``: one string per stream, not one per message, in a trace
        that holds a few hundred thousand), or an RPC of its own (``rpc:client:1#7``)."""
        if op not in BATCHED:
            return f"rpc:{sender}#{msg_id}"
        name = self._streams.get((sender, receiver))
        if name is None:
            name = self._streams[(sender, receiver)] = f"{sender}->{receiver}"
        return name

    def rpc_channel(self, sender: str) -> str:
        """A new RPC channel of ``sender``: ``rpc:client:1#3``, as the kernel-side cluster names them."""
        calls = self._rpc_calls.get(sender)
        if calls is None:
            calls = self._rpc_calls.setdefault(sender, itertools.count(1))
        return f"rpc:{sender}#{next(calls)}"

    def _subscribe(self, timeout: float = 10.0) -> None:
        """Subscribe to our topic, and wait until the scheduler has taken the subscription.

        ``subscribe_topic`` travels on the client's batched stream, and the plugins are
        registered, flushed and uninstalled by RPCs, which can overtake it — the very race
        this project is about.  A batch published before the scheduler knows we subscribed
        goes to nobody (and the plugin then truncates the topic): a worker's first batch
        with the data it already held, or, on an ``attach`` then ``detach`` in quick
        succession, the last batch ``detach`` waits for (seen after a run of ``confirm``).
        """
        client = self.client
        client.subscribe_topic(remote.TOPIC, self._on_remote)
        deadline = time.monotonic() + timeout
        while not client.run_on_scheduler(remote.subscribed, client=client.id):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the scheduler did not take our subscription to "
                                   f"{remote.TOPIC!r} within {timeout} s")
            time.sleep(0.002)

    def _wait_for(self, expected: dict[str, int], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                behind = [s for s, n in expected.items() if n and self._batches.get(s, 0) < n]
            if not behind:
                return
            time.sleep(0.005)
        raise TimeoutError(f"events from {', '.join(behind)} did not arrive within {timeout} s")

    def _estimate_offsets(self, rounds: int = 5) -> None:
        """Each process's clock minus ours.

        Processes on this host read the same clock: offset 0, exactly.  For another
        host, the midpoint of the fastest of ``rounds`` round trips (error under
        half that round trip).
        """
        here = socket.gethostname()
        best: dict[str, tuple[int, int]] = {}  # source -> (round trip, offset)
        for _ in range(rounds):
            t0 = time.time_ns()
            answers = {"scheduler": self.client.run_on_scheduler(remote.clock)}
            answers.update(self.client.run(remote.clock))
            t1 = time.time_ns()
            for source, (host, theirs) in answers.items():
                offset = 0 if host == here else theirs - (t0 + t1) // 2
                if source not in best or t1 - t0 < best[source][0]:
                    best[source] = (t1 - t0, offset)
            if all(host == here for host, _ in answers.values()):
                break
        self._offsets = {source: offset for source, (_, offset) in best.items()}

    # -- the client's hooks ------------------------------------------------------------------

    def _install_client_hooks(self) -> None:
        client, hooks = self.client, self.hooks
        # The per-future hooks have pre-checks: a key the focus turned down passes them untouched.
        by_key, by_message = remote.turned_down_key(self), remote.turned_down_message(self)
        hooks.attr(client, "_inc_ref", after=self._inc_ref, skip=by_key)
        hooks.attr(client, "_dec_ref", before=self._dec_ref, skip=by_key)
        self._stamp_user_lines()
        hooks.attr(client, "_send_to_scheduler", before=self._send, skip=by_message)
        hooks.attr(client, "_scatter", before=self._scatter_begin, after=self._scatter_end)
        for op in remote.REPORT_OPS:
            if op in client._stream_handlers:
                hooks.item(client._stream_handlers, op, before=self._report_before,
                           after=functools.partial(self._report_after, op), label=f"client {op}",
                           skip=by_message)
        hooks.item(client._stream_handlers, remote.BARRIER_ACK, before=self._barrier_ack)
        # client.scheduler is an rpc object: swap in a proxy that observes scatter calls.
        saved = client.scheduler
        client.scheduler = _SchedulerProxy(saved, self)
        hooks.on_undo("client.scheduler", lambda: setattr(client, "scheduler", saved))
        if self.ordered_scatter:
            self._order_scatters()

    # The client's per-future hooks ask the focus first: out of focus, they step aside before
    # reading anything, so a one-key trace of a huge map costs a question per future.

    def _inc_ref(self, state: Any, result: Any, key: Any) -> None:
        key = remote.key_text(key)
        focus = self._focus
        if focus is not None and not focus.wants(key):
            return
        after = self.client.refcount.get(key, 0)
        scattering = _scattering.get()
        origin = "scatter" if scattering is not None and key in scattering else "future"
        self._local("future.created", key, extra=shared((0, origin, after)))
        self._local("refcount.inc", key, extra=shared((after - 1, after)))

    def _dec_ref(self, key: Any) -> None:
        # Recorded before the call: the release it sends at zero follows the drop in the trace.
        name = remote.key_text(key)
        focus = self._focus
        if focus is not None and not focus.wants(name):
            return
        before = self.client.refcount.get(key, 0)
        if before:
            self._local("refcount.dec", name, extra=shared((before, before - 1)))

    def _stamp_user_lines(self) -> None:
        """Stamp the user's line on what this client records for a call or a drop.

        A call (``scatter``, ``submit``, …) is wrapped in the user's thread: the line is
        set for the call's duration, and its coroutine on dask's loop sees it (the context
        is copied by ``loop.add_callback``).  A drop (``del x``, rebinding, ``release()``)
        reaches ``loop.add_callback(client._dec_ref, key)`` in the user's thread, from
        ``Future.__del__``: the line is read there and ``_dec_ref`` runs under it.
        """
        client, hooks, tracer = self.client, self.hooks, self

        def under_the_callers_line(original: Any) -> Any:
            label = f"user line {original.__name__}"

            @functools.wraps(original)
            def call(*args: Any, **kwargs: Any) -> Any:
                try:
                    line = _caller_line()
                except Exception as exc:  # noqa: BLE001 - the user's call goes on, unstamped
                    line = None
                    tracer.hook_failed(label, exc)
                token = _user_line.set(line)
                try:
                    return original(*args, **kwargs)
                finally:
                    _user_line.reset(token)

            return call

        for name in USER_CALLS:
            hooks.replace_attr(client, name, under_the_callers_line, label=f"user line {name}")
        dec_ref = vars(client)["_dec_ref"]  # the hooked one, which Future.release passes
        loop = client.loop
        loop_thread = getattr(loop.asyncio_loop, "_thread_id", None)

        def dec_ref_at(line: str | None, key: Any) -> None:
            token = _user_line.set(line)
            try:
                dec_ref(key)
            finally:
                _user_line.reset(token)

        def with_the_droppers_line(add_callback: Any) -> Any:
            @functools.wraps(add_callback)
            def add(callback: Any, *args: Any, **kwargs: Any) -> None:
                if callback is dec_ref and threading.get_ident() != loop_thread:
                    # dask's Future.__del__ / release called this: what we add must not
                    # raise into it (the drop would be lost, and dask would log it).
                    try:
                        focus = tracer._focus
                        line = (_caller_line() if focus is None
                                or focus.wants(remote.key_text(args[0])) else _NO_LINE)
                    except Exception as exc:  # noqa: BLE001
                        tracer.hook_failed("user line add_callback", exc)
                        line = _NO_LINE
                    if line is not _NO_LINE:
                        return add_callback(dec_ref_at, line, *args, **kwargs)
                return add_callback(callback, *args, **kwargs)

            return add

        hooks.replace_attr(loop, "add_callback", with_the_droppers_line,
                           label="user line add_callback")

    def _send(self, msg: dict) -> None:
        op = msg.get("op")
        if op in CLIENT_OPS:
            keys = remote.message_keys(self._focus, msg.get("keys") or ())
            if keys is not None:
                self._local("msg.sent", None, op, "scheduler", keys)

    def _sent_scatter(self, op: str, keys: tuple, channel: str) -> None:
        scattering = _scattering.get()
        if scattering is not None:
            scattering.extend(keys)
        for key in keys:
            self._local("scatter.begin", key, extra=(0,))
        self._local("msg.sent", None, op, "scheduler", keys, extra=(CHANNEL, channel))

    def _scatter_begin(self, *args: Any, **kwargs: Any) -> None:
        _scattering.set([])

    def _scatter_end(self, state: Any, result: Any, *args: Any, **kwargs: Any) -> None:
        futures = self.client.futures
        for key in _scattering.get() or ():
            st = futures.get(key)
            if st is not None and st.status == "finished":
                self._local("future.state", key, extra=("pending", "finished", None, None))

    def _report_before(self, *args: Any, **kwargs: Any) -> Any:
        keys = remote.followed(self._focus, kwargs.get("keys") or [kwargs.get("key")])
        if not keys:
            return SKIP  # the report is about no key the trace follows
        futures = self.client.futures
        return {remote.key_text(k): futures[k].status if k in futures else None for k in keys}

    def _report_after(self, op: str, before: dict[str, str], result: Any, *args: Any,
                      **kwargs: Any) -> None:
        keys = tuple(before)
        self._local("msg.received", None, op, "scheduler", keys)
        futures = self.client.futures
        for key, was in before.items():
            st = futures.get(key)
            now = st.status if st is not None else None
            if was is not None and now is not None and now != was:
                self._local("future.state", key,
                            extra=shared((was, now, None, kwargs.get("reason"))))

    # -- the workaround: scatter behind a barrier on the release stream ------------------------

    def _order_scatters(self) -> None:
        """Make every scatter wait until the scheduler has handled what this client sent before.

        A barrier message goes on the client's batched stream — behind any queued
        ``client-releases-keys`` — and the scheduler answers on its stream to the
        client; the scatter RPC starts only then, so a release can no longer overtake it.
        """
        client = self.client
        scatter = client._scatter  # the traced one

        async def ordered(*args: Any, **kwargs: Any) -> Any:
            token = next(self._tokens)
            done = self._barriers[token] = asyncio.get_running_loop().create_future()
            client._send_to_scheduler({"op": remote.BARRIER, "token": token, "client": client.id})
            try:
                await done
            finally:
                self._barriers.pop(token, None)
            return await scatter(*args, **kwargs)

        self.hooks.on_undo("ordered scatter", lambda: setattr(client, "_scatter", scatter))
        client._scatter = ordered

    def _barrier_ack(self, token: int = 0, **kwargs: Any) -> None:
        done = self._barriers.get(token)
        if done is not None and not done.done():
            done.set_result(None)


def attach(client: Any, **options: Any) -> DaskTracer:
    """Trace ``client`` and the cluster it talks to; ``tracer.detach()`` undoes everything.

    ``max_events`` bounds the memory: the trace keeps the newest that many events (each
    checked before it goes) and counts the rest, which every view shows as dropped; the
    scheduler's and each worker's buffer hold at most that many between two drains
    (``remote_capacity``), and count what they drop as lost; while nobody watches, a
    sixteenth of it waits here for the merge (``buffer``), and the checks keep the history
    of one quiet key per 50 events.  A session then holds at most ~300 B per event of
    ``max_events`` more than untraced, plus a fixed part, however long it runs.
    ``ordered_scatter=True`` applies the workaround for dask#8576: each scatter
    first waits for a barrier on the client's batched stream.

    ``keys=`` (a glob such as ``"inc-*"``, a key prefix, a list of those, or a function
    ``key -> bool``) and ``sample=N`` (one key in N, the same on every process) trace only
    those keys: the scheduler and the workers leave the others out before buffering them,
    so a one-key trace of a huge computation costs next to nothing (``tracer.focus`` changes
    it later).
    """
    return DaskTracer(client, **options)
