"""Drive the protocol's state machines by hand: message in, messages and events out.

No ``Cluster``, no network, no policy.  A :class:`Net` holds a scheduler, workers and
clients, and a *pool* of messages they sent.  Nothing moves on its own: the test says which
message is delivered next (``net.deliver("free-keys")``), so the order a test asserts is
written in the test.  The one rule kept from the real network is FIFO on a batched stream:
a message cannot overtake an older one on its own stream (an RPC has a channel of its own,
and overtakes anything).

Events are kept as tuples, ``(actor, kind, key, *fields)``, exactly as the state machines
record them; :func:`story` asserts an order of them the way distributed's ``assert_story``
does (each expected tuple is a prefix of an event, later than the one before).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jupyter_refs.events import KINDS
from jupyter_refs.protocol import messages as m
from jupyter_refs.protocol.client import ClientState, FutureState
from jupyter_refs.protocol.messages import SCHEDULER, Message
from jupyter_refs.protocol.scheduler import SchedulerState
from jupyter_refs.protocol.serialize import dumps
from jupyter_refs.protocol.variants import ProtocolVariant, get_variant
from jupyter_refs.protocol.worker import WorkerState

Event = tuple  # (actor, kind, key, *fields)


class Recorder:
    """The ``record`` sink: keeps every event as a tuple, and checks it against its declaration
    in ``jupyter_refs/events.py`` (a declared kind, with as many fields as declared)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, actor: str, kind: str, key: str | None, *fields: Any) -> None:
        declared = KINDS.get(kind)
        assert declared is not None, f"{kind!r} is not declared in events.py"
        assert len(fields) == len(declared.fields), (
            f"{kind} recorded with {fields}; declared fields: {declared.fields}")
        self.events.append((actor, kind, key, *fields))

    def of(self, kind: str, key: str | None = None) -> list[dict[str, Any]]:
        """The events of ``kind`` (about ``key``), each as ``{"actor", "key", field: value}``."""
        return [{"actor": e[0], "key": e[2], **KINDS[kind].named(e[3:])}
                for e in self.events if e[1] == kind and (key is None or e[2] == key)]

    def kinds(self, since: int = 0) -> list[str]:
        return [e[1] for e in self.events[since:]]

    def mark(self) -> int:
        """Where the events from now on start: ``rec.events[rec.mark():]``."""
        return len(self.events)


def story(events: list[Event], *expected: tuple) -> None:
    """Each expected tuple is the start of an event later than the one before (not the whole
    list: a harmless new event breaks nothing)."""
    at = 0
    for want in expected:
        for i in range(at, len(events)):
            if events[i][:len(want)] == want:
                at = i + 1
                break
        else:
            shown = "\n".join(f"{i:3} {e}" for i, e in enumerate(events))
            raise AssertionError(f"{want} not found after position {at} in:\n{shown}")


# -- messages --------------------------------------------------------------------------------
# Each builder makes the payload its receiver's handler reads (as the sender in jupyter_refs
# builds it).  msg_ids are given when a message is sent or handled through a ``Net``: the
# scheduler names its stimuli by them (``update-graph-1``).

def spec(func: Any = len, *args: Any, deps: Iterable[str] = ()) -> dict[str, Any]:
    """A task's run spec as ``Client.submit`` builds it (update-graph's ``tasks[key]``)."""
    return {"func": dumps(func), "args": dumps((args, {})), "deps": tuple(deps),
            "allocated": False, "carries": (), "workers": None, "retries": None, "priority": 0}


def stream(sender: str, receiver: str, op: str, keys: Iterable[str], **payload: Any) -> Message:
    """A message on ``sender``'s batched stream to ``receiver``."""
    return Message(sender, receiver, op, m.stream_channel(sender, receiver), True, tuple(keys),
                   payload)


def update_graph(client: str, tasks: dict[str, dict], wanted: Iterable[str] | None = None,
                 gens: dict[str, int] | None = None) -> Message:
    wanted = list(tasks if wanted is None else wanted)
    return stream(client, SCHEDULER, m.UPDATE_GRAPH, wanted, client=client, tasks=tasks,
                  gens=gens if gens is not None else dict.fromkeys(wanted, 1))


def releases(client: str, *keys: str, gen: int = 1) -> Message:
    return stream(client, SCHEDULER, m.CLIENT_RELEASES_KEYS, keys, client=client,
                  gens=dict.fromkeys(keys, gen))


def desires(client: str, *keys: str, gen: int = 1, task: str | None = None) -> Message:
    return stream(client, SCHEDULER, m.CLIENT_DESIRES_KEYS, keys, client=client,
                  gens=dict.fromkeys(keys, gen), task=task)


def cancel_keys(client: str, *keys: str, force: bool = False) -> Message:
    return stream(client, SCHEDULER, m.CANCEL_KEYS, keys, client=client, force=force,
                  reason=None, msg=None)


def task_finished(worker: str, key: str, incarnation: int) -> Message:
    return stream(worker, SCHEDULER, m.TASK_FINISHED, (key,), worker=worker,
                  incarnation=incarnation, type=None)


def compute_task(worker: str, key: str, incarnation: int, func: Any = len, *args: Any) -> Message:
    s = spec(func, *args)
    return stream(SCHEDULER, worker, m.COMPUTE_TASK, (key,), key=key, func=s["func"],
                  args=s["args"], who_has={}, incarnation=incarnation, stimulus_id="test",
                  priority=(0, 1, 0), resources=None)


def free_keys(worker: str, incarnations: dict[str, int]) -> Message:
    return stream(SCHEDULER, worker, m.FREE_KEYS, incarnations, incarnations=incarnations,
                  stimulus_id="test")


def update_data(worker: str, values: dict[str, Any], incarnations: dict[str, int]) -> Message:
    """The scheduler's put of a scatter: an RPC of its own."""
    return Message(SCHEDULER, worker, m.UPDATE_DATA, f"rpc:test-put-{min(incarnations.values())}",
                   False, tuple(values), {"data": {k: dumps(v) for k, v in values.items()},
                                          "incarnations": incarnations})


def report(op: str, client: str, key: str, gen: int | None = None, **payload: Any) -> Message:
    """A scheduler -> client report; ``gen`` is the hold it is about (omitted: none, as dask)."""
    if gen is not None and op == m.CANCELLED_KEYS:
        payload["gens"] = {key: gen}
    elif gen is not None:
        payload["gen"] = gen
    return stream(SCHEDULER, client, op, (key,), **payload)


# -- the user's side of a client ---------------------------------------------------------------
# ``ClientState`` splits a user call in two (the reference, then the message): ``Client`` in
# jupyter_refs/client.py glues them.  These are that glue, minus everything else it does.

def user_scatter(client: ClientState, key: str, value: Any) -> list[Message]:
    """``client.scatter(value)`` with ``key``: a reference, then the scatter RPC."""
    fs, new, _ = client.acquire(key, "scatter")
    _, msgs = client.scatter({key: dumps(value)}, {key: fs} if new else {})
    return msgs


def user_submit(client: ClientState, key: str, func: Any = len, *args: Any,
                deps: Iterable[str] = ()) -> list[Message]:
    """``client.submit(func, *args, key=key)``: a reference, then update-graph (``deps``: the
    keys of the futures among ``args``, each passed as ``Dep(key)``)."""
    client.acquire(key, "submit")
    return client.update_graph({key: spec(func, *args, deps=deps)}, [key], deps)


# -- the driver --------------------------------------------------------------------------------

class Net:
    """One scheduler, ``workers`` workers (each with its own client) and ``clients`` clients,
    and the messages in flight between them — moved only when the test says so."""

    def __init__(self, variant: str | ProtocolVariant = "dask", workers: Iterable[str] = ("w",),
                 clients: Iterable[str] = ("c",)) -> None:
        self.variant = get_variant(variant)
        self.rec = rec = Recorder()
        self.scheduler = SchedulerState(self.variant, list(workers), rec)
        self.workers = {w: WorkerState(w, self.variant, rec) for w in workers}
        self.clients = {c: ClientState(c, self.variant, rec) for c in clients}
        self.actors: dict[str, Any] = {SCHEDULER: self.scheduler, **self.workers, **self.clients}
        self.actors.update((w.client.name, w.client) for w in self.workers.values())
        self.pool: list[Message] = []
        #: Task runs begun and not finished, by (worker, key).
        self.running: dict[tuple[str, str], Any] = {}
        self._ids = 0

    # -- what is in flight

    def send(self, messages: Iterable[Message]) -> list[Message]:
        """Put ``messages`` in flight, in order; each gets the next msg_id."""
        messages = list(messages)
        for msg in messages:
            self._ids += 1
            msg.msg_id = self._ids
            self.pool.append(msg)
        return messages

    def ops(self) -> list[str]:
        """What is in flight, oldest first: ``op>receiver`` each."""
        return [f"{msg.op}>{msg.receiver}" for msg in self.pool]

    def find(self, op: str, to: str | None = None, key: str | None = None) -> Message:
        """The oldest message in flight of ``op`` (to ``to``, about ``key``)."""
        for msg in self.pool:
            if msg.op == op and to in (None, msg.receiver) and key in (None, *msg.keys):
                return msg
        raise AssertionError(f"no {op} to {to or 'anyone'} about {key or 'any key'} in flight; "
                             f"in flight: {self.ops()}")

    # -- moving them

    def handle(self, msg: Message) -> list[Message]:
        """Hand ``msg`` to its receiver now (it need not be in flight); what it sends goes in
        flight and is returned."""
        if msg in self.pool:
            self.pool.remove(msg)
        elif msg.msg_id < 0:
            self.send([msg])
            self.pool.remove(msg)
        if msg.op == m.EXECUTE:
            return self.run(msg.receiver, msg.keys[0])
        return self.send(self.actors[msg.receiver].handle(msg))

    def deliver(self, op: str, to: str | None = None, key: str | None = None) -> list[Message]:
        """Deliver the oldest ``op`` in flight; refused if an older message on its batched
        stream is still in flight (a stream is FIFO)."""
        msg = self.find(op, to, key)
        if msg.batched:
            ahead = next(x for x in self.pool if x.channel == msg.channel)
            assert ahead is msg, f"{msg} waits behind {ahead} on the stream {msg.channel}"
        return self.handle(msg)

    def play(self, *ops: str) -> None:
        """Deliver ``ops`` in this order (``op`` or ``op>receiver``)."""
        for step in ops:
            op, _, to = step.partition(">")
            self.deliver(op, to or None)

    def settle(self, limit: int = 200) -> None:
        """Deliver everything, oldest first, until nothing is in flight."""
        for _ in range(limit):
            if not self.pool:
                return
            self.handle(self.pool[0])
        raise AssertionError(f"still in flight after {limit} deliveries: {self.ops()}")

    # -- task runs: the driver's part (``execute`` is not a message WorkerState handles)

    def start(self, worker: str, key: str) -> list[Message]:
        """A thread picks ``key`` up: :meth:`WorkerState.begin`; the run stays in progress."""
        run, out = self.workers[worker].begin(key)
        if run is not None:
            self.running[worker, key] = run
        return self.send(out)

    def finish(self, worker: str, key: str) -> list[Message]:
        """The run of ``key`` returns: its function is called, :meth:`WorkerState.finish`."""
        run = self.running.pop((worker, key))
        try:
            ok, value = True, run.func(*run.args, **run.kwargs)
        except Exception as exc:  # noqa: BLE001 - the task failed: the worker reports it
            ok, value = False, exc
        return self.send(self.workers[worker].finish(key, ok, value))

    def run(self, worker: str, key: str) -> list[Message]:
        """``execute`` delivered: the run starts and ends at once (a stepped cluster's way)."""
        out = self.start(worker, key)
        if (worker, key) in self.running:
            out += self.finish(worker, key)
        return out

    # -- shortcuts for the end state

    def future(self, client: str, key: str) -> FutureState | None:
        return self.clients[client].futures.get(key)

    def state(self, key: str) -> str:
        """The scheduler's state of ``key`` (``forgotten`` if it has no task)."""
        ts = self.scheduler.tasks.get(key)
        return "forgotten" if ts is None else ts.state

    def dangling(self) -> list[tuple[str, str]]:
        """``(client, key)`` for each future a client believes alive (pending or finished)
        whose key the scheduler does not keep for that client: a future that is lost."""
        out = []
        for name, client in self.clients.items():
            for key, fs in client.futures.items():
                ts = self.scheduler.tasks.get(key)
                if fs.state in ("pending", "finished") and (ts is None or name not in ts.who_wants):
                    out.append((name, key))
        return sorted(out)
