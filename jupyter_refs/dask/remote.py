"""What runs inside the dask scheduler and workers: hooks, and bounded buffers.

Both plugins record compact events into a bounded buffer (the oldest are dropped
and counted when nobody drains it) and publish what they have as *one*
``log_event`` on the ``jupyter-refs`` topic per interval — dask's own event
mechanism, so events from worker processes reach the client through the
scheduler with no extra port and no file.  A recorded event is
``(t_ns, kind, key, op, peer, keys, extra)`` with dask's raw ids (client ids,
worker addresses); the client-side tracer names them.  A buffer and a batch hold
those fields *flat*, event after event (:data:`STRIDE` items each; :func:`events`
reads them back): a tuple per event, kept until the tracer merges, made the
collector run once more every 700 events in dask's own process.

The scheduler is observed where references change:

* stream handlers ``client-releases-keys``, ``client-desires-keys`` and
  ``update-graph`` (a message received, then what it did to ``who_wants``);
* the ``scatter`` RPC and ``Scheduler.update_data`` — a scatter registers its
  data without any transition, so no plugin hook would see it;
* ``Scheduler.report`` (the reports sent to clients) and every transition
  (``SchedulerPlugin.transition``, with its stimulus id).

Workers report their data put and freed (``WorkerPlugin.transition``).

This module is imported inside the scheduler and worker processes: it needs
only ``distributed``, the standard library and the project's stdlib-only modules
(``focus``, ``protocol.messages``: dask's op names, declared once).
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from collections import deque
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin
from tornado.ioloop import PeriodicCallback

from ..focus import Focus, filter_while_focused
from ..protocol import messages as m
from .hooks import Hooks, Precheck

TOPIC = "jupyter-refs"
SCHEDULER_PLUGIN = "jupyter-refs"
WORKER_PLUGIN = "jupyter-refs-worker"
BARRIER, BARRIER_ACK = "jupyter-refs-barrier", "jupyter-refs-barrier-ack"
WORKER_BARRIER_ACK = "jupyter-refs-worker-barrier-ack"
#: The client's batched ops that start or end its holds.
CLIENT_OPS = (m.CLIENT_RELEASES_KEYS, m.CLIENT_DESIRES_KEYS, m.UPDATE_GRAPH)
REPORT_OPS = (m.KEY_IN_MEMORY, m.LOST_DATA, m.CANCELLED_KEYS, m.TASK_ERRED_REPORT)
#: Scheduler→worker stream messages recorded at both ends (sent in ``send_all``).
WORKER_OPS = (m.FREE_KEYS,)
#: RPCs whose reply the scheduler's plugin records (``scatter-reply``): the reply's send is
#: part of the handler, so a chain from the client's future walks back through it.
REPLIED = ("scatter",)
#: ``extra`` of a message event that names its channel: ``(CHANNEL, "rpc:scheduler#2")``.
CHANNEL = "@channel"


_time_ns = time.time_ns

#: Items per event in a buffer or a batch: ``t_ns, kind, key, op, peer, keys, extra``.
STRIDE = 7


def events(flat: Any, stride: int = STRIDE) -> Any:
    """The events of a batch's flat ``events``, as ``(t_ns, kind, …, extra)`` tuples (or
    the rows of any flat buffer of ``stride`` items each: the client tracer's own)."""
    return zip(*[iter(flat)] * stride)


def flatten(rows: Any) -> list:
    """Events given as tuples, laid out flat as a batch holds them."""
    return [item for row in rows for item in row]


def key_text(key: Any) -> str:
    """A key as the trace names it: a tuple key by its ``str()``."""
    return key if isinstance(key, str) else str(key)


@functools.lru_cache(maxsize=4096)
def shared(extra: tuple) -> tuple:
    """``extra``, or an equal one recorded before (the cache answers without calling this).

    Most per-task events say what many others say (``(0, "future", 1)`` for every future
    made, ``("waiting", "processing", stimulus)`` for each task of one graph).  A fresh
    tuple per event, kept until the merge, is a new object to CPython's collector: it
    makes young collections come sooner, and each is a chance of an older one over the
    dask process's heap.  A shared tuple is one object, and it is untracked by then.
    """
    return extra


def followed(focus: Focus | None, keys: Any) -> Any:
    """The keys among dask's ``keys`` that ``focus`` follows (all of them: None).

    The per-key hooks filter *first*, so a key out of focus costs one question and not
    the work of describing it (``who_wants`` sorted, a tuple built) for a record that
    would drop it; most messages and reports name one key, asked without a generator.
    """
    if focus is None:
        return keys
    if len(keys) == 1:
        # dask passes lists, tuples, sets and dict views: a set of one key has no [0].
        (key,) = keys
        return keys if focus.wants(key_text(key)) else ()
    return tuple(k for k in keys if focus.wants(key_text(k)))


def turned_down_key(owner: Any) -> Precheck:
    """A pre-check for a call whose first argument is a key (``Client._inc_ref(key)``): it skips the
    call when ``owner.answers`` (a recorder's, the tracer's) says the focus turned the key down."""
    def skip(args: tuple, kwargs: dict) -> bool:
        return owner.answers.get(args[0]) is False

    return skip


def turned_down_message(owner: Any) -> Precheck:
    """A pre-check for a message about one key: a stream handler's keywords, or a message dict as the
    first argument (``Client._send_to_scheduler(msg)``).  It skips one whose only key the focus
    turned down, as the observers of messages would; a message about several keys goes on."""
    def skip(args: tuple, kwargs: dict) -> bool:
        msg = args[0] if args else kwargs
        keys = msg.get("keys")
        if keys is None:
            return owner.answers.get(msg.get("key")) is False
        return len(keys) == 1 and owner.answers.get(keys[0]) is False

    return skip


def _to_no_worker(args: tuple, kwargs: dict) -> bool:
    """The pre-check of ``Scheduler.send_all(client_msgs, worker_msgs)``: a stimulus that sends the
    workers nothing (a task's report to its client, one in three per task) has nothing for
    its observer, which records messages to workers."""
    return not (args[1] if len(args) > 1 else kwargs["worker_msgs"])


def message_keys(focus: Focus | None, keys: Any) -> tuple[str, ...] | None:
    """The keys a message's record names: every one (unfocused), those ``focus`` follows,
    or None when it follows none, so the message is not recorded at all."""
    if focus is not None and not (keys := followed(focus, keys)):
        return None
    return tuple(key_text(k) for k in keys)


#: Called with each worker whose recorder was just set up in this process, after its hooks:
#: the holds gate a worker that joins after the first hold (:mod:`.holds`).
WORKER_SETUP: list[Any] = []

#: Why the scheduler removed a worker that was not retiring, by the prefix of the removal's
#: stimulus id (distributed 2026.8's names).  A retirement (``retire_workers``, a worker's
#: ``close_gracefully``) is ``expected`` and reads "retired".
REMOVALS = (("handle-worker-cleanup", "connection lost: killed, crashed or closed"),
            ("nanny-close", "closed by its nanny"),
            ("check-worker-ttl", "no heartbeat within worker-ttl"),
            ("worker-send-comm-fail", "a message to it could not be sent"))


def removal_reason(stimulus_id: str, expected: bool | None) -> str:
    """The words a ``worker.removed`` gives: the user asks "was it killed, or did I retire it?"."""
    if expected:
        return "retired"
    return next((why for prefix, why in REMOVALS if stimulus_id.startswith(prefix)), "removed")


#: An idle source still sends an empty batch this often: its ``now`` tells the tracer that
#: nothing older is on its way, so events from other sources need not wait for it.
HEARTBEAT_S = 0.5


class Recorder:
    """A bounded event buffer, drained into one ``log_event`` per interval.

    Every batch carries ``now``, read before the events are taken: the source's
    events up to then are all in it or in an earlier batch (recording and draining
    run on the same event loop), which is what lets the tracer merge sources in order.
    """

    def __init__(self, source: str, capacity: int, focus: Focus | None = None):
        self.source = source
        # Flat: each event is STRIDE items, and a full buffer drops the oldest item by item,
        # so it always drops whole events.
        self.events: deque[Any] = deque(maxlen=capacity * STRIDE)
        self.dropped = 0
        self.batches = 0
        self._sent_ns = 0
        self.focus: Focus | None = None
        #: Hooks that raised (label -> the error): each is reported once, as ``hook.failed``.
        self.failed: dict[str, str] = {}
        self.set_focus(focus)

    def set_focus(self, focus: Focus | None) -> None:
        """Buffer only events about keys in ``focus`` (None: every key).

        While focused, ``record`` and ``record_key`` are filtering ones (instance
        attributes); unfocused, the plain ones, so the per-task hooks pay nothing for a
        focus nobody set.  An event about no key is kept; a message keeps the keys in
        focus and is left out when none is.
        """
        self.focus = focus
        #: What the focus has answered so far, key -> wanted ({} unfocused): the pre-checks and
        #: the transitions look here before asking (:func:`turned_down_key`).
        self.answers: dict[str, bool] = {} if focus is None else focus.answers
        filter_while_focused(self, focus, record="_record_focused",
                             record_key="_record_key_focused")

    def _record_focused(self, kind: str, key: Any = None, op: str | None = None,
                        peer: str | None = None, keys: tuple = (), extra: tuple = ()) -> None:
        if key is not None:
            if not self.focus.wants(key_text(key)):  # type: ignore[union-attr]
                return
        elif keys:
            keys = self.focus.keep(keys)  # type: ignore[union-attr]
            if not keys:
                return
        Recorder.record(self, kind, key, op, peer, keys, extra)

    def _record_key_focused(self, kind: str, key: Any, extra: tuple) -> None:
        key = key if type(key) is str else str(key)
        wanted = self.answers.get(key)
        if wanted is None:
            wanted = self.focus.wants(key)  # type: ignore[union-attr]
        if wanted:
            Recorder.record_key(self, kind, key, extra)

    def record(self, kind: str, key: Any = None, op: str | None = None, peer: str | None = None,
               keys: tuple = (), extra: tuple = ()) -> None:
        events = self.events
        if len(events) == events.maxlen:
            self.dropped += 1
        events.extend((time.time_ns(), kind, None if key is None else key_text(key), op, peer, keys, extra))

    def record_key(self, kind: str, key: Any, extra: tuple) -> None:
        """``record(kind, key, extra=extra)`` for the per-task hooks: no keywords, one call,
        and the extra shared with the equal ones before it (:func:`shared`)."""
        events = self.events
        if len(events) == events.maxlen:
            self.dropped += 1
        events.extend((_time_ns(), kind, key if type(key) is str else str(key), None, None, (),
                       shared(extra)))

    def drain(self) -> dict[str, Any] | None:
        now = time.time_ns()
        if not self.events and not self.dropped and now - self._sent_ns < HEARTBEAT_S * 1e9:
            return None
        # A tuple, not a list: the batch waits in the tracer until the merge, and the collector
        # stops walking a tuple of strings and numbers within a few looks (``DaskTracer._seal``).
        events = tuple(self.events)
        self.events.clear()
        self.batches += 1
        self._sent_ns = now
        msg = {"src": self.source, "events": events, "dropped": self.dropped, "batch": self.batches,
               "now": now}
        self.dropped = 0
        return msg

    def hook_failed(self, label: str, exc: BaseException) -> None:
        if label in self.failed:
            return
        self.failed[label] = error = f"{type(exc).__name__}: {exc}"
        self.record("hook.failed", None, extra=(label, error))


def _removed(*args: Any, **kwargs: Any) -> None:
    """What a plugin's hook becomes once it has raised: nothing (see ``_Periodic._raised``)."""


class _Periodic:
    """Flush every ``interval`` seconds on the server's event loop; and what a plugin does
    when one of its own hooks raises."""

    rec: Recorder
    interval: float
    #: The plugin's methods dask calls for what happens (not its start and end): switched
    #: off when the start fails (:meth:`_start_failed`).
    PLUGIN_HOOKS: tuple[str, ...] = ()

    def _start_flushing(self, interval: float) -> None:
        self._pc = PeriodicCallback(self._flush_now, interval * 1000)
        self._pc.start()

    def _flush_now(self) -> None:
        """The periodic flush, on dask's event loop (tornado would log what it raised)."""
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - nothing of ours reaches dask's loop
            self.rec.hook_failed(f"{type(self).__name__}.flush", exc)

    def _raised(self, name: str, exc: BaseException) -> None:
        """The plugin's hook ``name`` (one dask calls: ``transition``, ``update_graph`` …)
        raised: dask would log it (and call it again for every task), so, as ``Hooks`` does
        for what it wraps, it is removed — an instance attribute doing nothing shadows it —
        and reported once as ``hook.failed``.  The exception never reaches dask's code."""
        setattr(self, name, _removed)
        self.rec.hook_failed(f"{type(self).__name__}.{name}", exc)

    def _start_failed(self, name: str, exc: BaseException) -> None:
        """The plugin's start (``setup``, ``start``) raised part-way.  Raised on, it would reach
        dask: ``register_plugin`` fails, and a worker that joins later does not start at all.
        So what it hooked comes off, its own hooks go too (half a recorder would tell half
        of each story, which the checks would read as a race), the failure is reported once as
        ``hook.failed``, and the plugin still flushes, so the tracer hears of it."""
        hooks = getattr(self, "hooks", None)
        if hooks is not None:
            with contextlib.suppress(Exception):
                hooks.undo()
        for hook in self.PLUGIN_HOOKS:
            setattr(self, hook, _removed)
        self.rec.hook_failed(f"{type(self).__name__}.{name}", exc)
        if getattr(self, "_pc", None) is None:
            with contextlib.suppress(Exception):  # it was the flush that failed: nothing more
                self._start_flushing(self.interval)

    def _stop_flushing(self) -> None:
        pc = getattr(self, "_pc", None)
        if pc is not None:
            pc.stop()
            self._pc = None

    def flush(self) -> int:
        raise NotImplementedError


class SchedulerRecorder(SchedulerPlugin, _Periodic):
    """Installed with ``client.register_plugin``; ``uninstall()`` removes every hook."""

    name = SCHEDULER_PLUGIN
    PLUGIN_HOOKS = ("transition", "update_graph", "remove_worker")

    def __init__(self, capacity: int = 100_000, interval: float = 0.05,
                 focus: Focus | None = None):
        self.capacity = capacity
        self.interval = interval
        self.focus = focus
        self.scheduler: Any = None

    async def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self.rec = Recorder("scheduler", self.capacity)
        self._barriers: dict[tuple[str, int], set[str]] = {}
        #: Workers removed since the last batch, ``(address, t_ns)``: the batch says so
        #: apart from its events, so the tracer stops waiting for them without reading those.
        self._gone: list[tuple[str, int]] = []
        self._removed: set[tuple[str, str]] = set()  # (address, stimulus id) recorded
        self.hooks = Hooks(self.rec.hook_failed)
        try:
            self._install(scheduler)
        except Exception as exc:  # noqa: BLE001 - register_plugin would fail with it
            self._start_failed("start", exc)

    def _install(self, s: Any) -> None:
        rec, hooks = self.rec, self.hooks
        self.follow(self.focus)
        hooks.item(s.stream_handlers, m.CLIENT_RELEASES_KEYS, before=self._releases,
                   skip=turned_down_message(rec))
        hooks.item(s.stream_handlers, m.CLIENT_DESIRES_KEYS, before=self._desires_received,
                   after=self._desires_applied)
        hooks.item(s.stream_handlers, m.UPDATE_GRAPH, before=self._graph_received)
        hooks.item(s.handlers, "scatter", before=self._scatter_received, after=self._scattered)
        hooks.attr(s, "update_data", after=self._registered)
        hooks.attr(s, "report", before=self._report)
        hooks.attr(s, "send_all", before=self._send_all, skip=_to_no_worker)
        hooks.item(s.stream_handlers, BARRIER, before=self._barrier)
        hooks.item(s.stream_handlers, WORKER_BARRIER_ACK, before=self._worker_barrier_ack)
        self._start_flushing(self.interval)

    def uninstall(self) -> int:
        """Remove every hook, stop flushing, publish what is left.  Returns the last batch."""
        self._stop_flushing()
        if self.scheduler is not None:
            self.hooks.undo()
        return self.flush()

    def flush(self) -> int:
        msg = self.rec.drain()
        if msg is not None:
            if self._gone:
                msg["gone"], self._gone = self._gone, []
            self.scheduler.log_event(TOPIC, msg)
        return self.rec.batches

    def follow(self, focus: Focus | None) -> None:
        """Record only keys in ``focus`` (None: every key) from now on."""
        self.focus = focus
        self.rec.set_focus(focus)

    # -- plugin hooks -----------------------------------------------------------------

    def transition(self, key: Any, start: str, finish: str, *args: Any, stimulus_id: str = "",
                   **kwargs: Any) -> None:
        # A key the focus has already turned down steps aside here, before a tuple is built
        # and a call made: dask calls this for every transition of every task.
        try:
            rec = self.rec
            if rec.answers.get(key) is False:
                return
            rec.record_key("transition", key, (start, finish, stimulus_id))
        except Exception as exc:  # noqa: BLE001 - dask would log it, task after task
            self._raised("transition", exc)

    def log_event(self, topic: str, msg: Any) -> None:
        """A batch of ours was published: the subscribed tracer has it, so the scheduler
        need not keep it too.

        dask's broker keeps the last ``distributed.admin.low-level-log-length`` events of
        every topic (1,000 by default) for ``get_events``; for our topic each is a whole
        batch, and in-process those are the very lists the tracer merges, so the log kept
        most of a trace twice (on a 3,000-task map: 486 batches, 21,000 of its 33,000
        events).  The broker calls plugins after it has sent the event to the subscribers.
        """
        try:
            if topic == TOPIC:
                broker = getattr(self.scheduler, "_broker", None)
                if broker is not None:
                    broker.truncate(TOPIC)
            elif topic == "all" and type(msg) is dict and msg.get("action") == "remove-worker":
                self._worker_removed(msg["worker"], msg.get("stimulus_id", ""),
                                     msg.get("expected"), len(msg.get("lost-computed-tasks", ())),
                                     len(msg.get("lost-scattered-tasks", ())))
        except Exception as exc:  # noqa: BLE001
            self._raised("log_event", exc)

    def _worker_removed(self, worker: str, stimulus_id: str, expected: bool | None,
                        recompute: int | None = None, lost: int | None = None) -> None:
        """A worker left: recorded once, before the transitions its removal makes.

        ``Scheduler.remove_worker`` logs ``remove-worker`` on the ``all`` topic (with
        ``expected``: a retirement) before it transitions the worker's tasks, and calls
        ``SchedulerPlugin.remove_worker`` only after them, with the stimulus id alone.  So
        the log is where the checks learn it in time (a scattered key forgotten with its
        only worker is not a lost reference); the plugin hook is the fallback.
        """
        if (worker, stimulus_id) in self._removed:
            return
        self._removed.add((worker, stimulus_id))
        self.rec.record("worker.removed", None, extra=(
            worker, removal_reason(stimulus_id, expected), stimulus_id, recompute, lost))
        self._gone.append((worker, time.time_ns()))

    def _followed(self, keys: Any) -> Any:
        return followed(self.rec.focus, keys)

    def update_graph(self, scheduler: Any, *, client: str, keys: Any, **kwargs: Any) -> None:
        try:
            tasks = scheduler.tasks
            for key in self._followed(keys):
                ts = tasks.get(key)
                if ts is not None:
                    self.rec.record("desire.applied", key, extra=_desired(client, ts.who_wants))
        except Exception as exc:  # noqa: BLE001
            self._raised("update_graph", exc)

    # -- observers ----------------------------------------------------------------------

    def _releases(self, keys: Any = (), client: str = "", **kwargs: Any) -> None:
        keys = self._followed([key_text(k) for k in keys])
        if not keys:
            return
        rec, s = self.rec, self.scheduler
        rec.record("msg.received", None, m.CLIENT_RELEASES_KEYS, client, tuple(keys))
        cs = s.clients.get(client)
        for key in keys:
            ts = s.tasks.get(key)
            if ts is not None and cs is not None and ts in cs.wants_what:
                rest = _who(w for w in ts.who_wants or () if w is not cs)
                rec.record("release.applied", key, extra=shared((client, 0, rest)))

    def _desires_received(self, keys: Any = (), client: str = "", **kwargs: Any) -> frozenset:
        self.rec.record("msg.received", None, m.CLIENT_DESIRES_KEYS, client,
                        tuple(key_text(k) for k in keys))
        # The keys the scheduler does not know: a desire that makes a task for one (dask
        # until PR 8827, 2024.8.1 and before) made a ghost, a task with no run spec.
        tasks = self.scheduler.tasks
        return frozenset(k for k in keys if k not in tasks)

    def _desires_applied(self, unknown: Any, result: Any, keys: Any = (), client: str = "",
                         **kwargs: Any) -> None:
        tasks = self.scheduler.tasks
        for key in self._followed(keys):
            ts = tasks.get(key)
            if ts is None:
                self.rec.record("desire.unknown", key, extra=(client, None))
            else:
                self.rec.record("desire.applied", key, extra=_desired(
                    client, ts.who_wants, bool(unknown) and key in unknown))

    def _graph_received(self, client: str = "", keys: Any = (), **kwargs: Any) -> None:
        self.rec.record("msg.received", None, m.UPDATE_GRAPH, client, tuple(key_text(k) for k in keys))

    def _scatter_received(self, *args: Any, data: Any = None, client: str = "",
                          **kwargs: Any) -> None:
        self.rec.record("msg.received", None, "scatter", client, tuple(key_text(k) for k in data or ()))

    def _scattered(self, state: Any, result: Any, *args: Any, data: Any = None, client: str = "",
                   **kwargs: Any) -> None:
        self.rec.record("msg.sent", None, m.SCATTER_REPLY, client, tuple(key_text(k) for k in data or ()))

    def _registered(self, state: Any, result: Any, *args: Any, who_has: Any = None,
                    client: str | None = None, **kwargs: Any) -> None:
        tasks = self.scheduler.tasks
        for key in self._followed(list(who_has or ())):
            ts = tasks.get(key)
            if ts is None:
                continue
            self.rec.record("scatter.registered", key,
                            extra=(tuple(ws.address for ws in ts.who_has or ()), _who(ts.who_wants)))
            if client:
                self.rec.record("desire.applied", key, extra=_desired(client, ts.who_wants))

    def _send_all(self, client_msgs: Any, worker_msgs: Any) -> None:
        """The ``free-keys`` a stimulus sends to workers: a worker's freeing of a key then
        walks back (``why``) to the release that caused it."""
        focus = self.rec.focus
        for address, msgs in worker_msgs.items():
            for msg in msgs:
                if msg.get("op") in WORKER_OPS:
                    keys = message_keys(focus, msg.get("keys") or ())
                    if keys is not None:
                        self.rec.record("msg.sent", None, msg["op"], address, keys)

    def _report(self, msg: dict, ts: Any = None, client: str | None = None) -> None:
        op = msg.get("op")
        if op not in REPORT_OPS:
            return
        keys = tuple(key_text(k) for k in msg["keys"]) if "keys" in msg else (key_text(msg.get("key")),)
        keys = self._followed(keys)
        if not keys:
            return
        if ts is None and len(keys) == 1:
            ts = self.scheduler.tasks.get(msg.get("key"))
        # The recipients, as Scheduler.report chooses them.
        if ts is None:
            recipients = [client] if client is not None else list(self.scheduler.client_comms)
        else:
            recipients = [cs.client_key for cs in ts.who_wants or () if cs.client_key != client]
            if client is not None:
                recipients.append(client)
        for recipient in recipients:
            self.rec.record("msg.sent", None, op, recipient, keys,
                            extra=(msg.get("reason"),) if op == m.CANCELLED_KEYS else ())

    # -- the ordered-scatter barrier ------------------------------------------------------
    #
    # client --stream--> scheduler --stream--> every worker --stream--> scheduler --stream--> client
    #
    # Reaching the scheduler on the client's stream, the barrier is behind every release
    # the client queued before it; reaching a worker on the scheduler's stream, it is behind
    # every free-keys those releases caused.  Only when all of that is done does the client
    # hear back and start its scatter, so neither a late release nor a late free can
    # destroy what the scatter puts.

    def _barrier(self, token: int = 0, client: str = "", **kwargs: Any) -> None:
        workers = set(self.scheduler.stream_comms)
        self._barriers[(client, token)] = workers
        for address in workers:
            self.scheduler.stream_comms[address].send(
                {"op": BARRIER, "token": token, "client": client})
        self._barrier_done(client, token)

    def _worker_barrier_ack(self, token: int = 0, client: str = "", worker: str = "",
                            **kwargs: Any) -> None:
        waiting = self._barriers.get((client, token))
        if waiting is not None:
            waiting.discard(worker)
            self._barrier_done(client, token)

    def _barrier_done(self, client: str, token: int) -> None:
        if self._barriers.get((client, token)):
            return
        self._barriers.pop((client, token), None)
        comm = self.scheduler.client_comms.get(client)
        if comm is not None:
            comm.send({"op": BARRIER_ACK, "token": token})

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        try:
            self._worker_removed(worker, kwargs.get("stimulus_id", ""), None)
            for (client, token), waiting in list(self._barriers.items()):
                if worker in waiting:
                    waiting.discard(worker)
                    self._barrier_done(client, token)
        except Exception as exc:  # noqa: BLE001
            self._raised("remove_worker", exc)


def _who(who_wants: Any) -> tuple[str, ...]:
    return tuple(sorted(cs.client_key for cs in who_wants or ()))


def _desired(client: str, who_wants: Any, created: bool = False) -> tuple:
    """A ``desire.applied``'s extra: one tuple for every key of a graph (``shared``);
    ``created``: the desire made the task (a ghost)."""
    return shared((client, 0, _who(who_wants), created))


class WorkerRecorder(WorkerPlugin, _Periodic):
    """Data put and freed on each worker."""

    PLUGIN_HOOKS = ("transition",)

    def __init__(self, capacity: int = 100_000, interval: float = 0.05,
                 focus: Focus | None = None):
        self.capacity = capacity
        self.interval = interval
        self.focus = focus

    def setup(self, worker: Any) -> None:
        self.worker = worker
        self.rec = Recorder(worker.address, self.capacity, self.focus)
        self.hooks = Hooks(self.rec.hook_failed)
        try:
            self._install(worker)
        except Exception as exc:  # noqa: BLE001 - dask would not start the worker with it
            self._start_failed("setup", exc)

    def _install(self, worker: Any) -> None:
        # What the worker already holds: the checks know its copies from the start, so a
        # scatter of a key it still has (dask puts no new copy: no transition) is not taken
        # for data that vanished.
        for key in list(worker.data):
            self.rec.record_key("worker.put", key, (0, ()))
        self.hooks.item(worker.stream_handlers, BARRIER, before=self._barrier)
        for op in WORKER_OPS:
            if op in worker.stream_handlers:
                self.hooks.item(worker.stream_handlers, op,
                                before=functools.partial(self._received, op),
                                skip=turned_down_message(self.rec))
        self._start_flushing(self.interval)
        for joined in list(WORKER_SETUP):
            joined(worker)

    def teardown(self, worker: Any) -> None:
        try:
            self.uninstall()
        except Exception as exc:  # noqa: BLE001 - unregister_worker_plugin would raise it
            # Counted in the recorder only: the tracer took its last flush before unregistering.
            self.rec.hook_failed("WorkerRecorder.teardown", exc)

    def uninstall(self) -> int:
        self._stop_flushing()
        self.hooks.undo()
        return self.flush()

    def _received(self, op: str, *args: Any, keys: Any = (), **kwargs: Any) -> None:
        keys = message_keys(self.rec.focus, keys or ())
        if keys is not None:
            self.rec.record("msg.received", None, op, "scheduler", keys)

    def _barrier(self, token: int = 0, client: str = "", **kwargs: Any) -> None:
        """Every free-keys sent before the barrier has been applied here: say so."""
        self.worker.batched_send({"op": WORKER_BARRIER_ACK, "token": token, "client": client})

    def flush(self) -> int:
        msg = self.rec.drain()
        if msg is not None:
            worker = self.worker
            if worker.thread_id == threading.get_ident():
                # What ``Worker.log_event`` sends, without its check that the message is
                # msgpack-able: a walk in Python over every item of the batch (a dozen calls
                # per event), for a batch made of strings, numbers and tuples of them.
                worker.batched_send({"op": "log-event", "topic": TOPIC, "msg": msg})
            else:
                worker.log_event(TOPIC, msg)
        return self.rec.batches

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        try:
            rec = self.rec
            if rec.answers.get(key) is False:  # as the scheduler's: turned down, out at once
                return
            if finish == "memory":
                rec.record_key("worker.put", key, (0, ()))
            elif start == "memory":
                rec.record_key("worker.free", key, (0,))
        except Exception as exc:  # noqa: BLE001 - dask would log it, task after task
            self._raised("transition", exc)


# -- called with client.run_on_scheduler / client.run ------------------------------------


def flush_scheduler(dask_scheduler: Any) -> int:
    plugin = dask_scheduler.plugins.get(SCHEDULER_PLUGIN)
    return plugin.flush() if plugin is not None else 0


def uninstall_scheduler(dask_scheduler: Any) -> int:
    plugin = dask_scheduler.plugins.get(SCHEDULER_PLUGIN)
    return plugin.uninstall() if plugin is not None else 0


def flush_worker(dask_worker: Any) -> int:
    plugin = dask_worker.plugins.get(WORKER_PLUGIN)
    return plugin.flush() if plugin is not None else 0


def joining(old: Focus | None, new: Focus | None, keys: Any) -> list[str]:
    """The keys among ``keys`` that ``new`` follows and ``old`` did not."""
    if old is None:
        return []  # every key was followed: none joins
    names = (key_text(key) for key in keys)
    return [k for k in names if not old.wants(k) and (new is None or new.wants(k))]


def focus_scheduler(dask_scheduler: Any, focus: Focus | None, worker_plugin: WorkerRecorder
                    ) -> list[str]:
    """Follow ``focus`` on the scheduler, and have a worker that joins later follow it too:
    the worker plugin dask keeps for future workers is replaced by ``worker_plugin`` (the
    same recorder, with the new focus), without touching the workers running now.

    Returns the keys the scheduler knows that join the focus: their history so far was
    never recorded, and the checks must not judge half of it.
    """
    from distributed.protocol.pickle import dumps

    joined: list[str] = []
    plugin = dask_scheduler.plugins.get(SCHEDULER_PLUGIN)
    if plugin is not None:
        joined = joining(plugin.focus, focus, list(dask_scheduler.tasks))
        plugin.follow(focus)
    if WORKER_PLUGIN in dask_scheduler.worker_plugins:
        dask_scheduler.worker_plugins[WORKER_PLUGIN] = dumps(worker_plugin)
    return joined


def focus_worker(dask_worker: Any, focus: Focus | None) -> list[str]:
    """Follow ``focus`` on this worker.  The copies it holds of keys that join the focus are
    announced (``worker.put``), as at setup, so the checks know every copy of a joining key;
    returns those keys."""
    plugin = dask_worker.plugins.get(WORKER_PLUGIN)
    if plugin is None:
        return []
    joined = joining(plugin.focus, focus, list(dask_worker.data))
    plugin.focus = focus
    plugin.rec.set_focus(focus)
    for key in joined:
        plugin.rec.record_key("worker.put", key, (0, ()))
    return joined


def subscribed(dask_scheduler: Any, client: str) -> bool:
    """Whether ``client`` is subscribed to our topic on this scheduler (True where dask keeps
    its subscriptions elsewhere than 2026.8's broker: there is nothing to wait for then)."""
    topics = getattr(getattr(dask_scheduler, "_broker", None), "_topics", None)
    if topics is None:
        return True
    topic = topics.get(TOPIC)
    return topic is not None and client in topic.subscribers


def installed(dask_scheduler: Any) -> bool:
    return SCHEDULER_PLUGIN in dask_scheduler.plugins


def task_state(dask_scheduler: Any, key: str) -> str:
    ts = dask_scheduler.tasks.get(key)
    return ts.state if ts is not None else "forgotten"


def clock() -> tuple[str, int]:
    """This host's name and clock: processes on one host share the clock."""
    return socket.gethostname(), time.time_ns()
