"""The worker's side of the protocol: it stores data and runs tasks.

A worker obeys the scheduler: ``update-data`` (the put of a scatter) stores,
``free-keys`` deletes, ``compute-task`` runs a task and reports back.  Under
the legacy protocol a key has one slot: a put overwrites it and a
``free-keys`` deletes whatever is in it — which is how variant B of #8576
destroys the data of a scatter that landed a moment earlier.  With
incarnations, each put is a separate copy, a free deletes exactly the copy it
names, and ``data[key]`` is the newest copy.

Tasks run inline when ``compute-task`` is handled: the kernel-side cluster
has no thread pool, so a task's result is reported in the same step.

A future inside a task's arguments is deserialized here, for the worker's own
client (``client:<worker>``, as dask's ``get_client()`` on a worker): under
legacy it claims the key with ``client-desires-keys`` — race 2's message —
under fixed it is borrowed and says nothing.  What the future *object* is
(a user-facing ``Future``, or a plain ``FutureRef``) is the driver's business:
it passes ``bind``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from . import messages as m
from .client import ClientState, FutureState
from .messages import Message
from .serialize import FutureRef, adopting, dumps, load_function, loads, substitute
from .variants import ProtocolVariant

#: The key of the task running in this thread, if any (a task must not block on the cluster).
running_task: ContextVar[str | None] = ContextVar("jupyter_refs_running_task", default=None)

#: ``bind(client_state, key, state, future_id)``: the object a task receives for a travelling future.
Bind = Callable[[ClientState, str, FutureState, int], Any]


def _bind_ref(client: ClientState, key: str, fs: FutureState, future_id: int) -> Any:
    return FutureRef(key)


class WorkerState:
    def __init__(self, name: str, variant: ProtocolVariant, record: Callable[..., None],
                 bind: Bind = _bind_ref):
        self.name = name
        self.variant = variant
        self.record = record
        #: The worker's own client, which futures deserialized in tasks belong to.
        self.client = ClientState(f"client:{name}", variant, record,
                                  borrows=not variant.deserialized_claims)
        self._bind = bind
        #: The newest copy of each key: what tasks and gathers read.
        self.data: dict[str, Any] = {}
        #: Every copy held, by key and incarnation.
        self.copies: dict[str, dict[int, Any]] = {}
        self._stream = m.stream_channel(name, m.SCHEDULER)
        self._calls = 0
        #: Tasks waiting for dependencies held by other workers: call -> compute-task payload.
        self._fetching: dict[str, dict[str, Any]] = {}

    def handle(self, msg: Message) -> list[Message]:
        return self._handlers[msg.op](self, msg)

    def _to_scheduler(self, op: str, keys: tuple[str, ...], **payload: Any) -> Message:
        return Message(self.name, m.SCHEDULER, op, self._stream, True, keys, payload)

    def _store(self, key: str, value: Any, incarnation: int) -> None:
        copies = self.copies.get(key)
        replaced: tuple[int, ...] = ()
        if copies is None or not self.variant.incarnations:
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
            freed = list(copies)
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
        # Like dask's worker, every copy released from memory is reported back.
        return [self._to_scheduler(m.RELEASE_WORKER_DATA, (key,), worker=self.name, incarnation=inc)
                for key, incarnation in msg.payload["incarnations"].items()
                for inc in self._free(key, incarnation)]

    # -- compute -------------------------------------------------------------------

    def _on_compute_task(self, msg: Message) -> list[Message]:
        p = msg.payload
        remote = {dep: ws for dep, ws in p["who_has"].items() if dep not in self.data}
        if not remote:
            return self._execute(p)
        # Fetch what another worker holds, then run (one RPC per peer).
        out = []
        by_peer: dict[str, list[str]] = {}
        for dep, holders in remote.items():
            by_peer.setdefault(holders[0], []).append(dep)
        fetch = {"task": p, "waiting": set(by_peer), "data": {}, "missing": []}
        for peer, deps in by_peer.items():
            self._calls += 1
            call = f"rpc:{self.name}#{self._calls}"
            self._fetching[call] = fetch
            out.append(Message(self.name, peer, m.GET_DATA, call, False, tuple(deps), {}))
        return out

    def _on_get_data_reply(self, msg: Message) -> list[Message]:
        fetch = self._fetching.pop(msg.channel)
        fetch["waiting"].discard(msg.sender)
        fetch["data"].update((k, loads(v)) for k, v in msg.payload["data"].items())
        fetch["missing"].extend(msg.payload["missing"])
        if fetch["waiting"]:
            return []
        return self._execute(fetch["task"], fetch["data"], fetch["missing"])

    def _adopt(self, key: str) -> tuple[Any, list[Message]]:
        fs, messages, future_id = self.client.adopt(key, running_task.get())
        return self._bind(self.client, key, fs, future_id), messages

    def _execute(self, p: dict[str, Any], fetched: dict[str, Any] | None = None,
                 missing: list[str] | None = None) -> list[Message]:
        """Run the task; the messages are the travelling futures' desires, then the outcome."""
        key = p["key"]
        token = running_task.set(key)
        try:
            with adopting(self._adopt) as adoption:
                if missing:
                    raise LookupError(f"dependencies {missing} were gone from their workers")
                func = load_function(p["func"])
                args, kwargs = loads(p["args"])
                values = self.data if not fetched else {**self.data, **fetched}
                result = func(*substitute(args, values), **substitute(kwargs, values))
        except Exception as exc:  # noqa: BLE001 - the user's task failed: report it
            return [*adoption.messages, self._to_scheduler(
                m.TASK_ERRED, (key,), worker=self.name, exception=_dump_exception(exc),
                text=f"{type(exc).__name__}: {exc}", incarnation=p["incarnation"])]
        finally:
            running_task.reset(token)
        self._store(key, result, p["incarnation"])
        return [*adoption.messages, self._to_scheduler(m.TASK_FINISHED, (key,), worker=self.name,
                                                       incarnation=p["incarnation"],
                                                       type=_dump_type(result))]

    # -- gather ----------------------------------------------------------------------

    def _on_get_data(self, msg: Message) -> list[Message]:
        data, missing, errors = {}, [], {}
        for key in msg.keys:
            if key not in self.data:
                missing.append(key)
                continue
            try:
                data[key] = dumps(self.data[key])
            except TypeError as exc:
                errors[key] = str(exc)
        return [Message(self.name, msg.sender, m.GET_DATA_REPLY, msg.channel, False, msg.keys,
                        {"data": data, "missing": missing, "errors": errors})]

    _handlers = {
        m.UPDATE_DATA: _on_update_data,
        m.FREE_KEYS: _on_free_keys,
        m.COMPUTE_TASK: _on_compute_task,
        m.GET_DATA: _on_get_data,
        m.GET_DATA_REPLY: _on_get_data_reply,
    }


_TYPES: dict[type, bytes] = {}


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
    try:
        return dumps(exc)
    except TypeError:
        return dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
