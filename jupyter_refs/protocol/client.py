"""The client's side of the protocol: refcounts and future states.

Like dask's ``Client``, the state is kept per *key*, not per ``Future``
object: every live ``Future`` for a key adds one to that key's refcount, and
the key's :class:`FutureState` exists exactly while the refcount is above
zero.  When it drops to zero the client forgets the key and queues
``client-releases-keys`` on its batched stream — the message whose lateness
is race #8576.

Sans-IO: methods take a user action or a message and return the messages to
send.  Events go to the recorder passed in; nothing here blocks or sleeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import messages as m
from .messages import Message
from .variants import Arrival, ProtocolVariant

PENDING, FINISHED, LOST, CANCELLED, ERROR = "pending", "finished", "lost", "cancelled", "error"
DONE = frozenset((FINISHED, CANCELLED, ERROR))
#: A future deserialized inside a task under ``fixed``: it names a key, holds nothing.
BORROWED = "borrowed"
CONNECTION_LOST = m.CONNECTION_LOST
#: The reason a future's state gives once its last reference was released (dask: none).
RELEASE_REASON = "unknown"
#: Keys no longer held whose last generation a client remembers (``ClientState._gens``).
#: A session makes keys without end (every ``submit`` a new one); past this many, the
#: oldest is forgotten, and every key met from then on starts above the generations
#: forgotten, so a key's generations still only grow.
GENS_KEPT = 10_000


@dataclass(slots=True)
class FutureState:
    """What the client believes about one key it holds."""

    state: str
    gen: int
    reason: str | None = None
    error: bytes | None = None
    #: Scatter calls not yet answered; a blocking call on this key must wait for them.
    scatter_call: str | None = None
    #: The result's type (pickled), as the scheduler reported it: ``Future.type``.
    type: bytes | None = None
    #: The worker's formatted traceback of an erred task.
    traceback: str | None = None
    #: When the future became done, in this client's order (``as_completed`` yields by it).
    done_seq: int = 0


@dataclass(slots=True)
class GatherCall:
    keys: tuple[str, ...]
    done: bool = False
    data: dict[str, bytes] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    errors: dict[str, str] = field(default_factory=dict)


Recorder = Callable[..., None]

_NO_TYPES: dict[str, bytes] = {}  # a scatter that names no types (shared, never written)


class ClientState:
    """Refcount and future state per key, for one client."""

    def __init__(self, name: str, variant: ProtocolVariant, record: Recorder,
                 borrows: bool = False):
        self.name = name
        self.variant = variant
        self.record = record
        #: Futures deserialized here hold nothing (a worker's client under ``fixed``).
        self.borrows = borrows
        self._future_ids = 0
        self.refcount: dict[str, int] = {}
        self.futures: dict[str, FutureState] = {}
        #: key -> the generation of its latest hold: every key held, and the newest
        #: ``GENS_KEPT`` released ones, oldest first; ``_gen_floor`` is the highest generation
        #: forgotten, where a key not here starts (see :meth:`_forget_oldest_gen`).
        self._gens: dict[str, int] = {}
        self._gen_floor = 0
        self._calls = 0
        self.gathers: dict[str, GatherCall] = {}
        #: Scatter calls sent and not yet answered.
        self.scatters: set[str] = set()
        self._stream = m.stream_channel(name, m.SCHEDULER)
        self._done = 0
        #: Futures that became cancelled or erred so far: a wait that stops at the first
        #: failure looks for one only when this moved (not a state: history, for waiters).
        self.failures = 0
        #: Called with ``(key, state)`` when a key becomes done (the user's done callbacks).
        self.on_done: Callable[[str, FutureState], None] | None = None
        #: Answers to queries (who_has, has_what, variables, queues): call -> reply payload.
        self.replies: dict[str, dict[str, Any]] = {}
        #: Called with ``(topic, (time, msg))`` for each event of a topic subscribed to (the
        #: driver runs the user's handler); without it, events are let go.
        self.on_event: Callable[[str, tuple], None] | None = None

    # -- helpers ---------------------------------------------------------------

    def _new_call(self) -> str:
        self._calls += 1
        return f"rpc:{self.name}#{self._calls}"

    def set_state(self, key: str, fs: FutureState, to: str, cause: int | None,
                   reason: str | None = None) -> None:
        if fs.state == to:
            return
        self.record(self.name, "future.state", key, fs.state, to, cause, reason)
        fs.state = to
        fs.reason = reason
        if to in DONE:
            if to != FINISHED:
                self.failures += 1
            self._done += 1
            fs.done_seq = self._done
            if self.on_done is not None:
                self.on_done(key, fs)

    # -- user actions ------------------------------------------------------------

    def acquire(self, key: str, origin: str) -> tuple[FutureState, bool, int]:
        """A new ``Future`` for ``key``: refcount +1.

        Returns the key's state, whether this starts a new hold, and the new
        future's id (ids only tell ``Future`` objects apart in the trace).
        """
        self._future_ids = future_id = self._future_ids + 1
        before = self.refcount.get(key, 0)
        self.refcount[key] = after = before + 1
        record, name = self.record, self.name
        record(name, "future.created", key, future_id, origin, after)
        record(name, "refcount.inc", key, before, after)
        fs = self.futures.get(key)
        if fs is not None:
            return fs, False, future_id
        # A new hold of the key (or the first since the connection was lost): a new generation.
        gens = self._gens
        gen = gens.pop(key, self._gen_floor) + 1
        gens[key] = gen  # the newest
        fs = self.futures[key] = FutureState(PENDING, gen)
        return fs, True, future_id

    def adopt(self, key: str, task: str | None) -> tuple[FutureState, list[Message], int]:
        """A ``Future`` for ``key`` was deserialized here: in ``task``'s arguments, or a result.

        A worker's client that borrows (today's dask and ``fixed``: a future in a
        task's arguments arrives unbound) holds nothing and says nothing.
        Otherwise the future is a reference like any other, and a new hold tells
        the scheduler with ``client-desires-keys`` — dask-2024.7's "inform", which
        may create a task for a key the scheduler has forgotten.  (A future in a
        gathered result is adopted this way when the task had it bound: in-process dask
        hands the client the very object the task made, bound and held.  One unbound in
        the task stays unbound, as dask's, unless ``returned_announced`` adopts it.)
        """
        if self.borrows:
            self._future_ids += 1
            self.record(self.name, "future.created", key, self._future_ids, "borrowed", 0)
            return FutureState(BORROWED, 0), [], self._future_ids
        fs, new, future_id = self.acquire(key, "deserialize")
        if not new:
            return fs, [], future_id
        return fs, [Message(self.name, m.SCHEDULER, m.CLIENT_DESIRES_KEYS, self._stream, True,
                            (key,), {"client": self.name, "gens": {key: fs.gen}, "task": task})
                    ], future_id

    def release(self, key: str) -> list[Message]:
        """A ``Future`` for ``key`` was dropped: refcount -1, release the key at zero."""
        before = self.refcount.get(key, 0)
        if before <= 0:
            return []
        after = before - 1
        self.record(self.name, "refcount.dec", key, before, after)
        if after:
            self.refcount[key] = after
            return []
        del self.refcount[key]
        # After a lost connection the key may have no state left; it is released all the same.
        fs = self.futures.pop(key, None)
        gen = fs.gen if fs is not None else self._gens.get(key, 0)
        if len(self._gens) - len(self.refcount) > GENS_KEPT:
            self._forget_oldest_gen()
        if fs is not None and fs.state != CANCELLED:
            # As dask's _release_key: the key's state is cancelled, so a Future object
            # still around (released, then asked for its result) says so.  Not a traced
            # transition: the refcount reaching zero, just recorded, is the event.
            fs.state, fs.reason = CANCELLED, RELEASE_REASON
            self.failures += 1
            if self.on_done is not None:
                self.on_done(key, fs)
        return [Message(self.name, m.SCHEDULER, m.CLIENT_RELEASES_KEYS, self._stream, True,
                        (key,), {"client": self.name, "gens": {key: gen}})]

    def _forget_oldest_gen(self) -> None:
        """Forget the generation of the key released longest ago (one per release: the
        table stays at ``GENS_KEPT`` keys beside those held).

        The generation must still only grow for that key: a late message of an old hold
        is told from the new hold by it (the fixed protocol).  So the floor rises to it,
        and a key met from now on starts above every generation forgotten.  Held keys
        met on the way stay, moved to the newest end, so they are not looked at again soon.
        """
        gens, held = self._gens, self.refcount
        passed: list[str] = []
        for key in gens:  # the oldest first
            if key not in held:
                break
            passed.append(key)
        else:
            return
        gen = gens.pop(key)
        if gen > self._gen_floor:
            self._gen_floor = gen
        for key in passed:
            gens[key] = gens.pop(key)

    def scatter(self, data: dict[str, bytes], new: dict[str, FutureState],
                workers: list[str] | None = None, broadcast: bool = False,
                types: dict[str, bytes] | None = None) -> tuple[str, list[Message]]:
        """Send already-serialized ``data`` to the scheduler.  ``new`` are the holds it starts."""
        call = self._new_call()
        self.scatters.add(call)
        types_of = types or _NO_TYPES
        for key, fs in new.items():
            fs.scatter_call = call
            fs.type = types_of.get(key)
            self.record(self.name, "scatter.begin", key, fs.gen)
        futures, gens = self.futures, {}
        for k in data:  # a loop, not a comprehension (its own call): a scatter is a key or two
            fs = futures.get(k)
            if fs is not None:
                gens[k] = fs.gen
        msg = Message(self.name, m.SCHEDULER, m.SCATTER, call, False, tuple(data),
                      {"client": self.name, "data": data, "gens": gens, "workers": workers,
                       "broadcast": broadcast, "types": types or {}})
        return call, [msg]

    def update_graph(self, tasks: dict[str, Any], wanted: list[str],
                     deps: Iterable[str] = (), code: tuple[Any, ...] = ()) -> list[Message]:
        """Submit ``tasks`` (key -> run spec); the client holds ``wanted`` and uses ``deps``;
        ``code``: the user's frames around the call, for the scheduler's computations."""
        futures, gens = self.futures, {}
        for keys in (wanted, deps):  # loops, not a comprehension over a new tuple of both
            for k in keys:
                fs = futures.get(k)
                if fs is not None:
                    gens[k] = fs.gen
        payload = {"client": self.name, "tasks": tasks, "gens": gens}
        if code:
            payload["code"] = code
        return [Message(self.name, m.SCHEDULER, m.UPDATE_GRAPH, self._stream, True,
                        tuple(wanted), payload)]

    def cancel(self, keys: Iterable[str], force: bool, reason: str | None,
               msg: str | None) -> list[Message]:
        """``Client.cancel``: the futures are cancelled here at once, the scheduler told after.

        As dask: ``cancel-keys`` rides the batched stream, and the client forgets
        the keys' states without waiting (their refcounts stay with the objects).
        """
        keys = tuple(dict.fromkeys(keys))
        self.forget_cancelled(keys, reason, msg)
        return [Message(self.name, m.SCHEDULER, m.CANCEL_KEYS, self._stream, True, keys,
                        {"client": self.name, "force": force, "reason": reason, "msg": msg})]

    def cancel_call(self, keys: Iterable[str], force: bool, reason: str | None,
                    msg: str | None) -> tuple[str, list[Message]]:
        """``Client.cancel`` before PR 7583 (``cancel_rpc``): the ``cancel`` RPC, whose answer
        the caller awaits before it forgets the keys (:meth:`forget_cancelled`)."""
        return self.query(m.CANCEL, tuple(dict.fromkeys(keys)), force=force, reason=reason,
                          msg=msg)

    def forget_cancelled(self, keys: Iterable[str], reason: str | None, msg: str | None) -> None:
        """The client's side of a cancel: each key's state cancelled and forgotten."""
        for key in keys:
            fs = self.futures.pop(key, None)
            if fs is not None:
                self.set_state(key, fs, CANCELLED, None, reason or "unknown")
                fs.error = msg.encode() if msg else None

    def report_key(self, keys: Iterable[str]) -> list[Message]:
        """A gather found no data for ``keys``: they are pending again, and the scheduler
        is asked where they stand (dask's ``report-key`` after "Couldn't gather keys").

        As dask's ``FutureState.reset``, whatever the state: a future cancelled while its
        gather travelled is pending again too, and the scheduler's answer decides (dask#8215:
        a new future of a cancelled key survives when the key is in memory again)."""
        out = []
        for key in keys:
            fs = self.futures.get(key)
            if fs is not None and fs.state != PENDING:
                self.set_state(key, fs, PENDING, None, "its data was not where the scheduler said")
            out.append(Message(self.name, m.SCHEDULER, m.REPORT_KEY, self._stream, True, (key,),
                               {"client": self.name}))
        return out

    def query(self, op: str, keys: tuple[str, ...] = (), **payload: Any) -> tuple[str, list[Message]]:
        """An RPC to the scheduler whose answer the caller waits for in :attr:`replies`."""
        call = self._new_call()
        return call, [Message(self.name, m.SCHEDULER, op, call, False, keys,
                              {"client": self.name, **payload})]

    def send(self, op: str, keys: tuple[str, ...] = (), **payload: Any) -> list[Message]:
        """A message on this client's batched stream (confirmations, fire-and-forget)."""
        return [Message(self.name, m.SCHEDULER, op, self._stream, True, keys,
                        {"client": self.name, **payload})]

    def gather(self, keys: tuple[str, ...]) -> tuple[str, list[Message]]:
        call = self._new_call()
        self.gathers[call] = GatherCall(keys)
        return call, [Message(self.name, m.SCHEDULER, m.GATHER, call, False, keys,
                              {"client": self.name})]

    # -- messages from the scheduler ---------------------------------------------

    def handle(self, msg: Message) -> list[Message]:
        handler = self._handlers.get(msg.op)
        if handler is None:
            raise ValueError(f"{self.name} cannot handle {msg.op!r}")
        handler(self, msg)
        return []

    def _held(self, msg: Message, key: str) -> FutureState | None:
        """The state a report about ``key`` applies to, or None if it is about an older hold."""
        fs = self.futures.get(key)
        variant = self.variant
        if fs is None or not (variant.generations or variant.rules):
            return fs  # without generations every report applies to the hold there is
        gens = msg.payload.get("gens")
        gen = gens.get(key, 0) if gens is not None else msg.payload.get("gen", 0)
        rule = variant.rule(msg.op) if variant.rules else None
        if rule is not None:
            # A protocol's own rule (``ProtocolVariant.rules``) decides, in place of the
            # generations' comparison.
            stale = not rule(Arrival(msg.op, self.name, self.name, key, gen, fs.gen, fs.state))
        else:
            stale = variant.generations and gen < fs.gen
        if stale:
            self.record(self.name, "report.stale", key, msg.op, gen, fs.gen)
            return None
        return fs

    def _on_scatter_reply(self, msg: Message) -> None:
        # The call that started a hold finishes it, whatever was reported
        # meanwhile: dask creates a scatter's futures, finished, when its RPC returns.
        self.scatters.discard(msg.channel)
        for key in msg.keys:
            fs = self.futures.get(key)
            if fs is not None and fs.scatter_call == msg.channel:
                fs.scatter_call = None
                self.set_state(key, fs, FINISHED, msg.msg_id)

    def _on_key_in_memory(self, msg: Message) -> None:
        for key in msg.keys:
            fs = self._held(msg, key)
            if fs is not None and fs.scatter_call is None and fs.state in (PENDING, LOST):
                fs.type = msg.payload.get("type") or fs.type
                self.set_state(key, fs, FINISHED, msg.msg_id)

    def _on_lost_data(self, msg: Message) -> None:
        for key in msg.keys:
            fs = self._held(msg, key)
            if fs is not None and fs.state == FINISHED:
                self.set_state(key, fs, LOST, msg.msg_id, "the scheduler reported the data lost")

    def _on_cancelled_keys(self, msg: Message) -> None:
        reason = msg.payload.get("reason") or "unknown"
        text = msg.payload.get("msg")
        for key in msg.keys:
            fs = self._held(msg, key)
            if fs is not None and fs.state != CANCELLED:
                fs.error = text.encode() if text else None
                self.set_state(key, fs, CANCELLED, msg.msg_id, reason)

    def _on_reply(self, msg: Message) -> None:
        self.replies[msg.channel] = msg.payload

    def _on_task_erred(self, msg: Message) -> None:
        for key in msg.keys:
            fs = self._held(msg, key)
            if fs is not None:
                fs.error = msg.payload["exception"]
                fs.traceback = msg.payload.get("traceback")
                self.set_state(key, fs, ERROR, msg.msg_id, msg.payload.get("text"))

    def _on_gather_reply(self, msg: Message) -> None:
        call = self.gathers.get(msg.channel)
        if call is not None:
            call.data = msg.payload["data"]
            call.missing = tuple(msg.payload["missing"])
            call.errors = msg.payload["errors"]
            call.done = True

    def _on_stream_closed(self, msg: Message) -> None:
        """The scheduler dropped our connection: every future is cancelled, as dask's
        ``Client._reconnect`` does, and forgotten; the refcounts stay with their
        ``Future`` objects.  The client then reconnects and can be used again."""
        self.record(self.name, "connection.lost", None, msg.payload.get("reason"))
        for key, fs in sorted(self.futures.items()):
            fs.scatter_call = None
            self.set_state(key, fs, CANCELLED, msg.msg_id, CONNECTION_LOST)
        self.futures.clear()

    def _on_task_retried(self, msg: Message) -> None:
        for key in msg.keys:
            fs = self._held(msg, key)
            if fs is not None:
                self.retried(key, fs, msg.msg_id)

    def retried(self, key: str, fs: FutureState, cause: int | None) -> None:
        """The key runs again (dask's ``FutureState.retry``): pending, its error let go."""
        fs.error = fs.traceback = None
        self.set_state(key, fs, PENDING, cause)

    def _on_event(self, msg: Message) -> None:
        if self.on_event is not None:
            self.on_event(msg.payload["topic"], msg.payload["event"])

    _handlers = {
        m.EVENT: _on_event,
        m.TASK_RETRIED: _on_task_retried,
        m.STREAM_CLOSED: _on_stream_closed,
        m.SCATTER_REPLY: _on_scatter_reply,
        m.KEY_IN_MEMORY: _on_key_in_memory,
        m.LOST_DATA: _on_lost_data,
        m.CANCELLED_KEYS: _on_cancelled_keys,
        m.TASK_ERRED_REPORT: _on_task_erred,
        m.GATHER_REPLY: _on_gather_reply,
        m.QUERY_REPLY: _on_reply,
    }
