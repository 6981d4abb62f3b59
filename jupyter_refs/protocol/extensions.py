"""The scheduler's extensions: questions (who_has, has_what), Variables, Queues and datasets.

dask's ``VariableExtension`` and ``QueueExtension`` (``distributed/variable.py``,
``distributed/queues.py``) hold futures for *pseudo-clients* — ``variable-<name>``,
``queue-<name>`` — through the same ``who_wants`` sets as real clients, and are
reached by RPCs that run beside the clients' batched streams: unordered RPCs
next to ordered streams, the ground #8576 grew on.  They are modelled message
for message:

* ``variable_set`` desires the key for ``variable-<name>`` once the scheduler
  knows it (dask polls; here the call is parked until the key exists) — before
  PR 8827 (``dask-2024.7``: ``desire_creates``) it desired at once, so a set of a
  key already forgotten made a ghost, as ``client_desires_keys`` does — and
  releases the previous value's key — but only after every client that got it
  confirmed (``variable-future-received-confirm``, on the client's batched
  stream), so that no release overtakes a reader's desire.
* ``variable_get`` answers with the key, its state and a token the reader must
  confirm; a get on a name never set is parked until a set.
* ``queue_put`` desires the key for ``queue-<name>`` once the scheduler knows it
  (parked until then, as ``variable_set``); ``queue_get`` pops it, and
  the reader's ``queue-future-release`` desires it for the reader, then
  releases the queue's hold.

* ``publish_put`` stores a dataset (its pickle and the keys of its futures) and
  desires the keys for ``published-<name>``; ``publish_get`` hands the pickle back
  (the reader binds its futures and announces them with ``client-desires-keys``
  on its stream); ``publish_delete`` releases the dataset's keys.  An RPC that
  carries a ``uid`` waits until the same client's stream has brought the marker
  ``publish_flush_batched_send`` with it: whatever the client queued on its stream
  before the call (the graph of the published futures, a reader's desire) has
  been applied.  The put has waited so since PR 8577 (2024.4.2; until PR 9217 a
  ``publish_wait_flush`` RPC waited, and the put followed its reply), the delete
  only since PR 9217 (2026.6.0): before, a delete sent just after a get could
  overtake the get's desire and forget the keys the reader now holds.

Sans-IO like the scheduler: each handler takes the request and the outgoing
list, and returns the reply payload (or None when the call is parked).
"""

from __future__ import annotations

import weakref
from collections import defaultdict, deque
from itertools import count
from typing import Any

from . import messages as m
from .broker import Broker
from .messages import Message
from .multi_lock import MultiLocks
from .parts import SchedulerState
from .replicate import Replications

EXTENSION_OPS = (m.WHO_HAS, m.HAS_WHAT, m.VARIABLE_SET, m.VARIABLE_GET, m.VARIABLE_DELETE,
                 m.QUEUE_CREATE, m.QUEUE_PUT, m.QUEUE_GET, m.QUEUE_QSIZE, m.QUEUE_RELEASE,
                 m.VARIABLE_CONFIRM, m.QUEUE_FUTURE_RELEASE, m.CALL_TIMEOUT,
                 m.PUBLISH_PUT, m.PUBLISH_GET, m.PUBLISH_DELETE, m.PUBLISH_LIST,
                 m.PUBLISH_WAIT_FLUSH, m.PUBLISH_FLUSH, m.PUBLISH_GET_CONFIRM,
                 m.PROCESSING_QUERY, m.EVENT_WAIT, m.EVENT_SET, m.EVENT_CLEAR, m.EVENT_IS_SET,
                 m.SEMAPHORE_REGISTER, m.SEMAPHORE_ACQUIRE, m.SEMAPHORE_RELEASE,
                 m.SEMAPHORE_VALUE, m.SEMAPHORE_CLOSE, m.SET_METADATA, m.GET_METADATA,
                 m.GET_RUNSPEC, m.GET_ERROR_CAUSE, m.LOG_EVENT, m.GET_EVENTS,
                 m.SUBSCRIBE_TOPIC, m.UNSUBSCRIBE_TOPIC, m.RETRY, m.REPLICATE,
                 m.GET_TASK_STREAM, m.GET_TASK_STREAM_INDEX, m.MULTI_LOCK_ACQUIRE,
                 m.MULTI_LOCK_RELEASE)


class Extensions:
    def __init__(self, scheduler: SchedulerState):
        # Weakly: the scheduler owns its extensions, and without a cycle between them a
        # scheduler is freed as soon as it is dropped (the explorer makes thousands).
        self.scheduler = weakref.proxy(scheduler)
        self.variables: dict[str, dict[str, Any]] = {}
        #: (key, variable) -> tokens handed out and not yet confirmed.
        self.waiting: dict[tuple[str, str], set[str]] = defaultdict(set)
        #: Releases of a variable's old key, waiting for its readers' confirmations.
        self.pending_release: set[tuple[str, str]] = set()
        #: Before 1.17.0: (key, variable, client) confirmed before its get counted it.
        self.pre_released: set[tuple[str, str, str]] = set()
        self.queues: dict[str, deque[dict[str, Any]]] = {}
        self.maxsize: dict[str, int] = {}
        #: (queue, key) -> how many records of the queue hold the key.
        self.queue_refs: dict[tuple[str, str], int] = defaultdict(int)
        #: Events that are set (dask's ``EventExtension``: a flag per name, cleared by default).
        self.events: set[str] = set()
        #: Semaphores (and Locks, dask's one-lease Semaphores): max leases, and leases held.
        self.max_leases: dict[str, int] = {}
        self.leases: dict[str, set[str]] = defaultdict(set)
        #: The scheduler's metadata (``Client.set_metadata``): nested dicts.
        self.metadata: dict[Any, Any] = {}
        #: Calls that wait for something (a key to exist, a value to be set or put).
        self.parked: list[Message] = []
        self._tokens = count(1)
        #: name -> {"data": pickle, "keys": the keys of its futures} (dask's ``datasets``).
        self.datasets: dict[str, dict[str, Any]] = {}
        #: Markers (``uid``) the clients' streams have brought, not yet waited for.
        self.flushed: set[str] = set()
        #: fixed: a get's token -> the keys held for it until the reader confirms.
        self.get_holds: dict[str, list[str]] = {}
        #: Calls whose timeout came before them: answered at once when they come.
        self.expired: set[str] = set()
        #: Structured events (``log_event``, ``get_events``, ``subscribe_topic``).
        self.broker = Broker(scheduler.clients)
        #: dask's MultiLocks (an acquire waits parked until it holds what it asked for).
        self.multi_locks = MultiLocks()
        #: ``Client.replicate`` calls in progress (parked until their copies are in).
        self.replications = Replications(self.scheduler)

    def handle(self, msg: Message, out: list[Message], stimulus: str) -> dict[str, Any] | None:
        if msg.channel in self.expired:  # its timeout overtook it (another channel)
            self.expired.discard(msg.channel)
            reply = self._handlers[msg.op](self, msg, out, stimulus)
            if reply is None:
                self._gave_up(msg)
            return reply if reply is not None else {"error": "timeout"}
        reply = self._handlers[msg.op](self, msg, out, stimulus)
        if reply is None and not msg.batched:
            self.parked.append(msg)
        return reply

    def retry(self, out: list[Message], stimulus: str) -> None:
        """Try the parked calls again (after each stimulus: something may have changed)."""
        parked, self.parked = self.parked, []
        for msg in parked:
            reply = self._handlers[msg.op](self, msg, out, stimulus)
            if reply is None:
                self.parked.append(msg)
            else:
                self.scheduler.reply(out, msg, **reply)

    def _call_timeout(self, msg, out, stimulus):
        """A parked call's timeout: answer it with the error, so nothing later lands in it
        (a put after a timed-out get stays in the queue, as in dask)."""
        call = msg.payload["call"]
        for parked in self.parked:
            if parked.channel == call:
                self.parked.remove(parked)
                self._gave_up(parked)
                self.scheduler.reply(out, parked, error="timeout")
                break
        else:
            # Not parked: answered already, or not arrived yet — the timeout travels on the
            # scheduler's own stream, the call on an RPC of its own, and either may come first.
            self.expired.add(call)
        return {}

    def _gave_up(self, msg: Message) -> None:
        """A parked call timed out: what it left waiting is undone (a multi-lock request
        leaves its queues, as dask's ``acquire`` does at its timeout)."""
        if msg.op == m.MULTI_LOCK_ACQUIRE:
            self.multi_locks.release(msg.payload["id"])

    def _pseudo(self, holder: str) -> str:
        self.scheduler.pseudo.add(holder)
        return holder

    # -- questions -------------------------------------------------------------------

    def _who_has(self, msg, out, stimulus):
        tasks = self.scheduler.tasks
        keys = msg.keys or tuple(tasks)
        return {"who_has": {k: sorted(tasks[k].who_has) if k in tasks else [] for k in keys}}

    def _processing(self, msg, out, stimulus):
        return {"processing": {w: list(keys) for w, keys in self.scheduler.processing.items()}}

    def _has_what(self, msg, out, stimulus):
        has: dict[str, list[str]] = {w: [] for w in self.scheduler.workers}
        for key, ts in self.scheduler.tasks.items():
            for w in ts.who_has:
                has[w].append(key)
        return {"has_what": has}

    # -- Variable ----------------------------------------------------------------------

    def _variable_set(self, msg, out, stimulus):
        p = msg.payload
        name, key = p["name"], p.get("key")
        if key is not None:
            if key not in self.scheduler.tasks and not self.scheduler.variant.desire_creates:
                return None  # parked: dask polls until the key is known (since PR 8827)
            self.scheduler.desire(self._pseudo(f"variable-{name}"), [key], out, stimulus)
            record = {"type": "Future", "value": key}
        else:
            record = {"type": "value", "value": p["data"]}
        old = self.variables.get(name)
        # Before 1.17.0 (variable_readers_by_client) a set of the future the variable already
        # holds released it too: the variable then names a key it no longer holds.
        if old is not None and old["type"] == "Future" and (
                old["value"] != key or self.scheduler.variant.variable_readers_by_client):
            self._release_old(old["value"], name, out, stimulus)
        self.variables[name] = record
        return {"ok": True}

    def _release_old(self, key: str, name: str, out, stimulus) -> None:
        if self.waiting.get((key, name)):
            self.pending_release.add((key, name))  # after the readers' confirmations
            return
        self.waiting.pop((key, name), None)
        self.scheduler.release(f"variable-{name}", [key], out, stimulus)

    def _variable_get(self, msg, out, stimulus):
        record = self.variables.get(msg.payload["name"])
        if record is None:
            return None  # parked until a set
        if record["type"] != "Future":
            return dict(record)
        name, key = msg.payload["name"], record["value"]
        if self.scheduler.variant.variable_readers_by_client:
            # Before 1.17.0: the reader is its client, once however many gets it makes, unless
            # a confirmation came for it already (dask's ``pre_released``).
            client = msg.payload["client"]
            if (key, name, client) in self.pre_released:
                self.pre_released.discard((key, name, client))
            else:
                self.waiting[(key, name)].add(client)
            return {**self._describe(record), "token": client}
        token = f"token-{next(self._tokens)}"
        self.waiting[(key, name)].add(token)
        return {**self._describe(record), "token": token}

    def _variable_confirm(self, msg, out, stimulus):
        p = msg.payload
        key, name = msg.keys[0], p["name"]
        self.scheduler.desire(p["client"], [key], out, stimulus, {key: p.get("gen", 0)})
        tokens = self.waiting.get((key, name))
        if self.scheduler.variant.variable_readers_by_client and p["token"] not in (
                tokens or ()):
            self.pre_released.add((key, name, p["token"]))  # dask's: the client's next get
        if tokens is not None:
            tokens.discard(p["token"])
            if not tokens and (key, name) in self.pending_release:
                self.pending_release.discard((key, name))
                self._release_old(key, name, out, stimulus)
        return {}

    def _variable_delete(self, msg, out, stimulus):
        name = msg.payload["name"]
        old = self.variables.pop(name, None)
        if old is not None and old["type"] == "Future":
            self._release_old(old["value"], name, out, stimulus)
        return {"ok": True}

    # -- Queue ---------------------------------------------------------------------------

    def _queue_create(self, msg, out, stimulus):
        name = msg.payload["name"]
        if name not in self.queues:
            self.queues[name] = deque()
            self.maxsize[name] = msg.payload.get("maxsize") or 0
        return {"ok": True}

    def _queue_put(self, msg, out, stimulus):
        p = msg.payload
        name = p["name"]
        queue = self.queues[name]
        if self.maxsize[name] and len(queue) >= self.maxsize[name]:
            return None  # parked: the queue is full
        key = p.get("key")
        if key is not None and key not in self.scheduler.tasks:
            return None  # parked: dask polls until the key is known
        if key is not None:
            self.queue_refs[(name, key)] += 1
            self.scheduler.desire(self._pseudo(f"queue-{name}"), [key], out, stimulus)
            queue.append({"type": "Future", "value": key})
        else:
            queue.append({"type": "value", "value": p["data"]})
        return {"ok": True}

    def _queue_get(self, msg, out, stimulus):
        p = msg.payload
        queue = self.queues[p["name"]]
        if p.get("batch"):
            n = p.get("n") or len(queue)
            if len(queue) < n:
                return None
            records = [self._describe(queue.popleft()) for _ in range(n)]
            return {"records": records}
        if not queue:
            return None  # parked until a put
        return {"records": [self._describe(queue.popleft())]}

    def _describe(self, record: dict[str, Any]) -> dict[str, Any]:
        """A record as handed to a reader: a future's with its key's state (and error)."""
        if record["type"] != "Future":
            return dict(record)
        ts = self.scheduler.tasks.get(record["value"])
        if ts is None:
            return {**record, "state": "lost"}
        if ts.state == "erred":
            return {**record, "state": ts.state, "exception": ts.exception,
                    "text": ts.exception_text}
        return {**record, "state": ts.state}

    def _queue_future_release(self, msg, out, stimulus):
        p = msg.payload
        name, key = p["name"], msg.keys[0]
        self.scheduler.desire(p["client"], [key], out, stimulus, {key: p.get("gen", 0)})
        self.queue_refs[(name, key)] -= 1
        # Before PR 1133 (queue_uncounted) the queue let go of the key at every get, whatever
        # records of it were still queued.
        if not self.queue_refs[(name, key)] or self.scheduler.variant.queue_uncounted:
            del self.queue_refs[(name, key)]
            self.scheduler.release(f"queue-{name}", [key], out, stimulus)
        return {}

    def _queue_qsize(self, msg, out, stimulus):
        return {"qsize": len(self.queues[msg.payload["name"]])}

    def _queue_release(self, msg, out, stimulus):
        name = msg.payload["name"]
        keys = sorted({k for (n, k) in self.queue_refs if n == name})
        for key in keys:
            del self.queue_refs[(name, key)]
        self.queues.pop(name, None)
        self.scheduler.release(f"queue-{name}", keys, out, stimulus)
        return {"ok": True}

    # -- published datasets ------------------------------------------------------------------

    def _publish_flush(self, msg, out, stimulus):
        """The marker on a client's stream: everything queued before it has been applied."""
        self.flushed.add(msg.payload["uid"])
        return {}

    def _caught_up(self, msg, use: bool = True) -> bool:
        """Whether the call's client stream has brought the call's marker (a call without a
        ``uid`` waits for nothing); ``use``: the marker is used up, as since PR 9217."""
        uid = msg.payload.get("uid")
        if uid is None:
            return True
        if uid not in self.flushed:
            return False
        if use:
            self.flushed.discard(uid)
        return True

    def _publish_wait_flush(self, msg, out, stimulus):
        # Until PR 9217: one marker for every name of the call, each waited for by an RPC of
        # its own, and never used up (dask kept the events).
        return {} if self._caught_up(msg, use=False) else None

    def _publish_put(self, msg, out, stimulus):
        if not self._caught_up(msg):
            return None  # parked: dask awaits the marker's event
        p = msg.payload
        for name, keys, data in zip(p["names"], p["holds"], p["data"], strict=True):
            holder = self._pseudo(f"published-{name}")
            old = self.datasets.get(name)
            if old is not None:
                if not p.get("override"):
                    return {"error": "KeyError", "text": f"Dataset {name} already exists"}
                if not self.scheduler.variant.override_keeps_keys:
                    del self.datasets[name]
                    self.scheduler.release(holder, list(old["keys"]), out, stimulus)
            self.scheduler.desire(holder, list(keys), out, stimulus)
            self.datasets[name] = {"data": data, "keys": tuple(keys)}
        return {}

    def _publish_get(self, msg, out, stimulus):
        found = [self.datasets.get(name) for name in msg.payload["names"]]
        keys = sorted({k for record in found if record is not None for k in record["keys"]})
        if not self.scheduler.variant.get_desires or not keys:
            return {"datasets": found}
        # fixed: the keys are held for this answer until the reader confirms, on its stream
        # after its own desire, that it holds them (as a Variable's get is): no other
        # client's unpublish can forget them while the reader's desire travels.
        token = f"dataset-get-{next(self._tokens)}"
        self.scheduler.desire(self._pseudo(token), keys, out, stimulus)
        self.get_holds[token] = keys
        return {"datasets": found, "token": token}

    def _publish_get_confirm(self, msg, out, stimulus):
        keys = self.get_holds.pop(msg.payload["token"], None)
        if keys is not None:
            self.scheduler.release(msg.payload["token"], keys, out, stimulus)
        return {}

    def _publish_delete(self, msg, out, stimulus):
        if not self._caught_up(msg):
            return None  # parked until the client's stream has caught up (since PR 9217)
        for name in msg.payload["names"]:
            old = self.datasets.pop(name, None)
            if old is not None:
                self.scheduler.release(f"published-{name}", list(old["keys"]), out, stimulus)
        return {}

    def _publish_list(self, msg, out, stimulus):
        return {"names": sorted(self.datasets, key=str)}

    # -- Event (dask's ``distributed/event.py``) ------------------------------------------

    def _event_wait(self, msg, out, stimulus):
        return {"ok": True} if msg.payload["name"] in self.events else None  # parked till set

    def _event_set(self, msg, out, stimulus):
        self.events.add(msg.payload["name"])  # the parked waits are answered by ``retry``
        return {"ok": True}

    def _event_clear(self, msg, out, stimulus):
        self.events.discard(msg.payload["name"])
        return {"ok": True}

    def _event_is_set(self, msg, out, stimulus):
        return {"value": msg.payload["name"] in self.events}

    # -- Semaphore and Lock (dask's ``distributed/semaphore.py``; leases do not time out) ---

    def _semaphore_register(self, msg, out, stimulus):
        name, n = msg.payload["name"], msg.payload["max_leases"]
        if self.max_leases.setdefault(name, n) != n:
            return {"error": f"Inconsistent max leases: {n}, expected: {self.max_leases[name]}",
                    "type": "ValueError"}
        return {"ok": True}

    def _semaphore_acquire(self, msg, out, stimulus):
        name, lease = msg.payload["name"], msg.payload["lease_id"]
        if name not in self.max_leases:
            return {"error": f"Semaphore or Lock `{name}` not known.", "type": "RuntimeError"}
        leases = self.leases[name]
        if lease in leases or len(leases) < self.max_leases[name]:
            leases.add(lease)
            return {"ok": True}
        return None  # parked until a release

    def _semaphore_release(self, msg, out, stimulus):
        self.leases[msg.payload["name"]].discard(msg.payload["lease_id"])
        return {"ok": True}

    def _semaphore_value(self, msg, out, stimulus):
        return {"value": len(self.leases.get(msg.payload["name"], ()))}

    def _semaphore_close(self, msg, out, stimulus):
        name = msg.payload["name"]
        self.max_leases.pop(name, None)
        self.leases.pop(name, None)
        return {"ok": True}

    # -- metadata (dask's ``Scheduler.set_metadata`` / ``get_metadata``) -------------------

    def _set_metadata(self, msg, out, stimulus):
        *path, last = msg.payload["path"]
        metadata = self.metadata
        for key in path:  # as dask's: a value in the way is replaced by a dict
            if key not in metadata or not isinstance(metadata[key], dict | list):
                metadata[key] = {}
            metadata = metadata[key]
        try:
            metadata[last] = msg.payload["value"]
        except (TypeError, IndexError) as exc:  # a list on the path, as dask's fails there
            return {"error": str(exc), "type": "TypeError"}
        return {"ok": True}

    def _get_metadata(self, msg, out, stimulus):
        metadata = self.metadata
        try:
            for key in msg.payload["path"]:
                metadata = metadata[key]
        except (KeyError, TypeError):
            if "default" in msg.payload:
                return {"value": msg.payload["default"]}
            return {"error": msg.payload["path"][-1], "type": "KeyError"}
        return {"value": metadata}

    # -- replaying a task (dask's ``distributed/recreate_tasks.py``) ------------------------

    def _get_runspec(self, msg, out, stimulus):
        """A task's function and arguments, and its dependencies (the client gathers their
        values; dask's makes futures of them, which computes them again if they are gone)."""
        ts = self.scheduler.tasks.get(msg.payload["key"])
        if ts is None or ts.run_spec is None:
            return {"error": msg.payload["key"], "type": "KeyError"}
        deps = sorted(ts.dependencies)
        gone = [d for d in deps if d not in self.scheduler.tasks
                or self.scheduler.tasks[d].state != "memory"]
        if gone:  # dask would compute them again; the model does not
            return {"error": f"replaying {ts.key}, whose dependencies {', '.join(gone)} are "
                             "no longer in memory", "type": "NotModelledError"}
        return {"func": ts.run_spec["func"], "args": ts.run_spec["args"], "dependencies": deps}

    def _get_error_cause(self, msg, out, stimulus):
        """The task to blame for the first erred key: the erred one none of whose
        dependencies erred (dask's ``exception_blame``)."""
        tasks = self.scheduler.tasks
        for key in msg.keys:
            ts = tasks.get(key)
            if ts is None or ts.state != "erred":
                continue
            while True:
                erred = [tasks[d] for d in sorted(ts.dependencies)
                         if d in tasks and tasks[d].state == "erred"]
                if not erred:
                    return {"key": ts.key}
                ts = erred[0]
        return {"key": None}

    # -- retrying erred tasks (dask's ``Scheduler.stimulus_retry``) ----------------------------

    def _retry(self, msg, out, stimulus):
        """Each key, and the erred tasks it depends on, down to the roots of the error: those
        go back to waiting.  The reply names every key seen, as dask's."""
        tasks = self.scheduler.tasks
        stack, seen, roots = list(msg.keys), [], []
        while stack:
            key = stack.pop()
            if key in seen:
                continue
            seen.append(key)
            ts = tasks.get(key)
            if ts is None:
                return {"error": key, "type": "KeyError"}
            erred = [d for d in sorted(ts.dependencies) if tasks[d].state == "erred"]
            if erred:
                stack.extend(erred)
            else:
                roots.append(key)
        self.scheduler.recommend(dict.fromkeys(roots, "waiting"), stimulus, out)
        return {"value": seen}

    # -- structured events (dask's ``Broker``; see ``broker.py``) ---------------------------

    def _log_event(self, msg, out, stimulus):
        p = msg.payload
        worker = p.get("worker")
        for client, topic, event in self.broker.publish(p["topic"], p["msg"], p["time"], worker):
            self.scheduler.send(out, client, m.EVENT, (), topic=topic, event=event)
        return {"ok": True}

    def _get_events(self, msg, out, stimulus):
        topic = msg.payload["topic"]
        why = self.broker.not_modelled(topic, self.scheduler.workers)
        if why is not None:
            return {"error": why, "type": "NotModelledError"}
        return {"value": self.broker.events(topic)}

    def _subscribe_topic(self, msg, out, stimulus):
        self.broker.subscribe(msg.payload["topic"], msg.payload["client"])
        return {"ok": True}

    def _unsubscribe_topic(self, msg, out, stimulus):
        self.broker.unsubscribe(msg.payload["topic"], msg.payload["client"])
        return {"ok": True}

    def _replicate(self, msg, out, stimulus):
        return self.replications.handle(msg, out, stimulus)

    # -- the task stream (dask's TaskStreamPlugin, installed when first asked for) ----------

    def _stream(self):
        from .task_stream import TaskStream

        s = self.scheduler
        if s.task_stream is None:
            s.task_stream = TaskStream()
        return s.task_stream

    def _get_task_stream(self, msg, out, stimulus):
        p = msg.payload
        return {"value": self._stream().collect(p["start"], p["stop"], p["count"],
                                                p["start_index"])}

    def _get_task_stream_index(self, msg, out, stimulus):
        return {"value": self._stream().index}

    # -- MultiLock (dask's ``MultiLockExtension``; see ``multi_lock.py``) --------------------

    def _multi_lock_acquire(self, msg, out, stimulus):
        p = msg.payload
        if self.multi_locks.request(p["locks"], p["id"], p["num_locks"]):
            return {"value": True}
        return None  # parked until a release completes it (or its timeout)

    def _multi_lock_release(self, msg, out, stimulus):
        self.multi_locks.release(msg.payload["id"])
        return {"value": None}

    _handlers = {
        m.MULTI_LOCK_ACQUIRE: _multi_lock_acquire,
        m.MULTI_LOCK_RELEASE: _multi_lock_release,
        m.GET_TASK_STREAM: _get_task_stream,
        m.GET_TASK_STREAM_INDEX: _get_task_stream_index,
        m.REPLICATE: _replicate,
        m.RETRY: _retry,
        m.LOG_EVENT: _log_event,
        m.GET_EVENTS: _get_events,
        m.SUBSCRIBE_TOPIC: _subscribe_topic,
        m.UNSUBSCRIBE_TOPIC: _unsubscribe_topic,
        m.GET_RUNSPEC: _get_runspec,
        m.GET_ERROR_CAUSE: _get_error_cause,
        m.PROCESSING_QUERY: _processing,
        m.EVENT_WAIT: _event_wait,
        m.EVENT_SET: _event_set,
        m.EVENT_CLEAR: _event_clear,
        m.EVENT_IS_SET: _event_is_set,
        m.SEMAPHORE_REGISTER: _semaphore_register,
        m.SEMAPHORE_ACQUIRE: _semaphore_acquire,
        m.SEMAPHORE_RELEASE: _semaphore_release,
        m.SEMAPHORE_VALUE: _semaphore_value,
        m.SEMAPHORE_CLOSE: _semaphore_close,
        m.SET_METADATA: _set_metadata,
        m.GET_METADATA: _get_metadata,
        m.WHO_HAS: _who_has,
        m.HAS_WHAT: _has_what,
        m.VARIABLE_SET: _variable_set,
        m.VARIABLE_GET: _variable_get,
        m.VARIABLE_DELETE: _variable_delete,
        m.VARIABLE_CONFIRM: _variable_confirm,
        m.QUEUE_CREATE: _queue_create,
        m.QUEUE_PUT: _queue_put,
        m.QUEUE_GET: _queue_get,
        m.QUEUE_QSIZE: _queue_qsize,
        m.QUEUE_RELEASE: _queue_release,
        m.QUEUE_FUTURE_RELEASE: _queue_future_release,
        m.CALL_TIMEOUT: _call_timeout,
        m.PUBLISH_FLUSH: _publish_flush,
        m.PUBLISH_WAIT_FLUSH: _publish_wait_flush,
        m.PUBLISH_PUT: _publish_put,
        m.PUBLISH_GET: _publish_get,
        m.PUBLISH_DELETE: _publish_delete,
        m.PUBLISH_LIST: _publish_list,
        m.PUBLISH_GET_CONFIRM: _publish_get_confirm,
    }
