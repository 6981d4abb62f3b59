"""Every event kind the trace can hold, declared once.

An event is recorded as a plain tuple (the hot path cannot afford an object per
event); its kind-specific values, ``extra``, are positional, and follow the
row's common columns in the same tuple (:data:`FIELDS_AT`).  What those
positions mean is written here and nowhere else: the recorders' argument order,
the readers' positions in a row (:meth:`EventKind.at`), the field names of the JSONL
export and of :attr:`Event.fields <jupyter_refs.trace.Event.fields>`, the terse
text of the log view, and which values the dask path renames from dask's ids to
actor names all derive from one :class:`EventKind`.  A test reads every
``record`` call in the package and checks it against its declaration.

Like h11's ``_events.py``: one small declaration per kind, with the reason it
exists.  This module needs only the standard library, since the dask plugins
import it inside the scheduler and worker processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .focus import describe as focus_words

#: Where an event's own fields start in a trace row: after its nine common columns
#: (``trace.Row``).  In the row itself, not a tuple of their own: a row of strings and
#: numbers is one the collector stops tracking at its first look (a nested tuple is
#: untracked one level per look, so rows holding one reached the oldest generation).
FIELDS_AT = 9

#: Who records an event of the kind (the lane it belongs to).
SOURCES = ("client", "scheduler", "worker", "network", "checks", "adapter", "trace")


@dataclass(frozen=True, slots=True)
class EventKind:
    """One kind of event: its name, its ``extra`` fields in order, and what it means."""

    name: str
    fields: tuple[str, ...]
    source: str
    doc: str
    #: Terse words for the log view: a ``str.format`` template over the fields, a function of
    #: them, or ``None`` for the generic ``kind name=value …``.
    text: str | Callable[[dict[str, Any]], str] | None = None
    #: Fields holding one actor's name, and fields holding a tuple of them: the dask path
    #: receives dask's raw ids there (client ids, worker addresses) and names them.
    actor_fields: tuple[str, ...] = ()
    actors_fields: tuple[str, ...] = ()

    def at(self, field: str) -> int:
        """The position of ``field`` in a trace row: what a reader on the hot path indexes."""
        try:
            return FIELDS_AT + self.fields.index(field)
        except ValueError:
            raise KeyError(f"{self.name} events have no field {field!r} "
                           f"(fields: {', '.join(self.fields) or 'none'})") from None

    def named(self, extra: tuple) -> dict[str, Any]:
        return dict(zip(self.fields, extra))

    def describe(self, extra: tuple) -> str:
        """The event in the log view's words."""
        text = self.text
        if text is None:
            if not extra:
                return self.name
            return self.name + " " + " ".join(f"{n}={_fmt(v)}" for n, v in zip(self.fields, extra))
        values = self.named(extra)
        return text(values) if callable(text) else text.format_map(values)


def _fmt(value: object) -> str:
    if isinstance(value, tuple):
        return "{" + ",".join(map(str, value)) + "}"
    return str(value)


KINDS: dict[str, EventKind] = {}


def _kind(name: str, *fields: str, source: str, doc: str,
          text: str | Callable[[dict[str, Any]], str] | None = None,
          actor: tuple[str, ...] = (), actors: tuple[str, ...] = ()) -> EventKind:
    assert source in SOURCES, source
    assert name not in KINDS, f"{name} declared twice"
    assert set(actor) | set(actors) <= set(fields), name
    kind = KINDS[name] = EventKind(name, fields, source, doc, text, actor, actors)
    return kind


def _created(f: dict[str, Any]) -> str:
    if f["origin"] == "borrowed":
        return f"future #{f['future_id']} deserialized, borrowed: it holds no reference"
    return f"future #{f['future_id']} created by {f['origin']}"


def _worker_removed(f: dict[str, Any]) -> str:
    lost = "" if f["recompute"] is None else (
        f": {f['recompute']} results to recompute, {f['lost']} scattered keys lost")
    return f"{f['worker']} gone ({f['reason']}){lost}  [{f['stimulus_id']}]"


# -- client ---------------------------------------------------------------------------------

FUTURE_CREATED = _kind(
    "future.created", "future_id", "origin", "refcount_after", source="client", text=_created,
    doc="A Future object was made for a key (by submit, scatter, unpickling …); a refcount of 1 "
        "after it is a new hold on the key.")
REFCOUNT_INC = _kind(
    "refcount.inc", "before", "after", source="client", text="refcount {before} → {after}",
    doc="The client's reference count of a key went up: one more Future object for it.")
REFCOUNT_DEC = _kind(
    "refcount.dec", "before", "after", source="client", text="refcount {before} → {after}",
    doc="The count went down; at 0 the client sends client-releases-keys.")
FUTURE_STATE = _kind(
    "future.state", "from", "to", "cause_msg_id", "reason", source="client",
    text=lambda f: f"future {f['from']} → {f['to']}" + (f" ({f['reason']})" if f["reason"] else ""),
    doc="What the client believes about its future changed (pending, finished, error, "
        "cancelled, lost), because of the message ``cause_msg_id``.")
SCATTER_BEGIN = _kind(
    "scatter.begin", "gen", source="client",
    doc="A scatter starts; ``gen`` is the client's generation of the key (fixed protocol).")
REPORT_STALE = _kind(
    "report.stale", "op", "gen", "current_gen", source="client",
    doc="A report about an older generation of the key arrived and was ignored.")
ID_ALLOC = _kind(
    "id.alloc", "value", "atomic", source="client",
    doc="A future id was drawn from the counter (racy read-then-write, or atomic).")
CONNECTION_LOST = _kind(
    "connection.lost", "reason", source="client",
    doc="The scheduler dropped this client's connection: every future of it is cancelled.")

# -- network (recorded for the sender / the receiver) ---------------------------------------

MSG_SENT = _kind(
    "msg.sent", "keys", source="network",
    doc="A message left its sender on its channel (a batched stream or an RPC).")
MSG_RECEIVED = _kind(
    "msg.received", "keys", source="network",
    doc="A message reached its receiver, which handles it at once.")
NETWORK_DRAINED = _kind(
    "network.drained", source="network",
    doc="Nothing is in flight and no task runs: the point where leaks are checked.")

# -- scheduler ------------------------------------------------------------------------------

SCATTER_REGISTERED = _kind(
    "scatter.registered", "who_has", "who_wants_after", source="scheduler",
    actors=("who_has", "who_wants_after"),
    doc="The scheduler recorded scattered data: the key is in memory on ``who_has``.")
DESIRE_APPLIED = _kind(
    "desire.applied", "client", "gen", "who_wants_after", "created_task", source="scheduler",
    actor=("client",), actors=("who_wants_after",),
    doc="A client's desire for the key reached the scheduler's who_wants; ``created_task`` "
        "marks a task made for an unknown key (the ghost of dask PR 8827).")
RELEASE_APPLIED = _kind(
    "release.applied", "client", "gen", "who_wants_after", source="scheduler",
    actor=("client",), actors=("who_wants_after",),
    doc="A client's release took it out of the key's who_wants.")
RELEASE_STALE = _kind(
    "release.stale", "client", "gen", "current_gen", source="scheduler", actor=("client",),
    doc="A release of an older generation was ignored (fixed protocol, or a protocol's rule).")
SCATTER_STALE = _kind(
    "scatter.stale", "client", "gen", "current_gen", source="scheduler", actor=("client",),
    doc="A scatter of an older generation was ignored (fixed protocol).")
TRANSITION = _kind(
    "transition", "start", "finish", "stimulus_id", source="scheduler",
    text="transition {start} → {finish}  [{stimulus_id}]",
    doc="A scheduler task state change, with the stimulus that caused it (dask's names).")
WORKER_ADDED = _kind(
    "worker.added", "worker", "nthreads", source="scheduler", actor=("worker",),
    doc="A worker joined the running cluster (``LocalCluster.scale`` up, or registering again "
        "after its nanny restarted it): it takes new tasks.")
WHO_HAS_REMOVED = _kind(
    "who_has.removed", "worker", "who_has_after", source="scheduler",
    actor=("worker",), actors=("who_has_after",),
    doc="The scheduler stopped believing that ``worker`` holds the key.")
GRAPH_LOST_DATA = _kind(
    "graph.lost_data", "dependency", source="scheduler",
    doc="A task was cancelled because a dependency it needs is gone (dask's 'lost data').")
GRAPH_ANNOTATIONS_DROPPED = _kind(
    "graph.annotations_dropped", "dropped", source="scheduler",
    doc="An update-graph found its task already made, with no run spec, by a desire that came "
        "first (a publish_put before PR 8577): dask gave it the run spec, not the annotations "
        "(``dropped``: the ones the graph had; none, and nothing was lost).")
DESIRE_UNKNOWN = _kind(
    "desire.unknown", "client", "task", source="scheduler", actor=("client",),
    doc="A desire for a key the scheduler does not know: today's dask only warns.")
CANCEL_DECIDED = _kind(
    "cancel.decided", "client", "cancelled", "who_wants", source="scheduler",
    actor=("client",), actors=("who_wants",),
    text=lambda v: (f"cancel by {v['client']}: "
                    + ("cancelled" if v["cancelled"] else "kept (others want it)")
                    + " who_wants={" + ",".join(v["who_wants"]) + "}"),
    doc="The scheduler's cancel, asked by ``client``, decided about the key: ``cancelled`` "
        "(nobody else wanted it, or force) or kept (others want it: dask then cancels nothing "
        "for anyone), with ``who_wants`` as it found it.  The reports and releases that "
        "follow in the same stimulus are this cancel's.")
CANCEL_GAVE_UP = _kind(
    "cancel.gave_up", "client", "polls", source="scheduler", actor=("client",),
    doc="Before PR 7583 (``cancel_rpc``): a cancel waited for its key to be known and wanted "
        "(``polls`` looks, 1 s) and gave up without a word; before PR 6016 its last retry did.")
SCHEDULER_ASSERTION = _kind(
    "scheduler.assertion", "message", "stimulus_id", source="scheduler",
    doc="A scheduler handler failed an assertion; dask drops the sender's connection.")
CLIENT_REMOVED = _kind(
    "client.removed", "client", "reason", source="scheduler", actor=("client",),
    doc="The scheduler removed a client and released everything it wanted.")
WORKER_REMOVED = _kind(
    "worker.removed", "worker", "reason", "stimulus_id", "recompute", "lost", source="scheduler",
    actor=("worker",), text=_worker_removed,
    doc="The scheduler removed a worker: ``reason`` is 'retired' (asked to leave: its data "
        "moved first), else how it was lost (its connection closed: killed or crashed; no "
        "heartbeat; …).  A lost worker's results are recomputed elsewhere (``recompute``) and "
        "its scattered data is gone (``lost``); the transitions that follow carry the removal's "
        "``stimulus_id``.  Tracing dask, the worker is a source that will send nothing more: "
        "the merge stops waiting for it, and the views mark it gone.")
WORKER_RETIRING = _kind(
    "worker.retiring", "worker", "stimulus_id", source="scheduler", actor=("worker",),
    doc="``retire_workers`` began to retire a worker: it takes no new task, and the data only "
        "it holds is copied to the others before it is removed (``worker.removed``, 'retired').")
WORKER_RETIRE_ABORTED = _kind(
    "worker.retire_aborted", "worker", "stimulus_id", source="scheduler", actor=("worker",),
    doc="A retirement was abandoned: no running worker could take the data only it holds "
        "(dask: 'could not retire'); the worker runs on.")
WHO_HAS_ADDED = _kind(
    "who_has.added", "worker", "who_has_after", source="scheduler",
    actor=("worker",), actors=("who_has_after",),
    doc="The scheduler counted a replica a worker holds too (``add-keys``: a dependency it "
        "fetched, a copy Client.replicate asked for, a retiring worker's data).")
HEARTBEAT_MISSING = _kind(
    "heartbeat.missing", "worker", source="scheduler", actor=("worker",),
    doc="A heartbeat from a worker the scheduler has removed: answered 'missing' (dask logs "
        "'Received heartbeat from unregistered worker').")
WORKER_CLOSED = _kind(
    "worker.closed", "reason", source="worker",
    doc="The worker closed (told to by the scheduler, or answered 'missing' to a heartbeat), "
        "its nanny with it: it reads nothing more.")
WORKER_RESTARTED = _kind(
    "worker.restarted", "life", source="worker",
    doc="The worker closed without its nanny, which started a new worker process under the "
        "same name (before PR 8522, 2024.2.1): empty, it registers with the scheduler again.")
WORKER_DROPPED = _kind(
    "worker.dropped", "op", "msg_id", source="worker",
    doc="A message the worker does not read: it has closed, or it is for an earlier life of "
        "the worker (the connection its nanny's restart ended).")
TASK_RETRY = _kind(
    "task.retry", "retries_left", "stimulus_id", source="scheduler",
    doc="A failed task with retries left goes back to waiting.")

# -- worker ---------------------------------------------------------------------------------

SCATTER_WORKER_PUT = _kind(
    "scatter.worker_put", "incarnation", source="worker",
    doc="Scattered data reached a worker (update-data); ``incarnation`` numbers the copy.")
WORKER_PUT = _kind(
    "worker.put", "incarnation", "replaced", source="worker",
    doc="A worker stored a value for the key (scatter or task result).")
WORKER_FREE = _kind(
    "worker.free", "incarnation", source="worker",
    doc="A worker deleted its copy (free-keys).")
WORKER_FREE_STALE = _kind(
    "worker.free_stale", "incarnation", "held_incarnation", source="worker",
    doc="A free-keys aimed at another copy was ignored (fixed protocol's incarnations), or "
        "a protocol's rule dropped it (``ProtocolVariant.rules``).")
WORKER_TRANSITION = _kind(
    "worker.transition", "start", "finish", "stimulus_id", source="worker",
    doc="A worker-side task state change (dask's worker state machine).")
WORKER_MISSING_DEPENDENCY = _kind(
    "worker.missing_dependency", "dependency", source="worker",
    doc="A task could not run: a dependency's data is not on the worker.")
TASK_STALE_RUN = _kind(
    "task.stale_run", "worker", "run_id", "current_run_id", source="scheduler", actor=("worker",),
    doc="A task result from an older run (cancelled, then resubmitted) arrived and was dropped.")
TASK_STALE_ACCEPTED = _kind(
    "task.stale_accepted", "worker", "run_id", "current_run_id", source="scheduler",
    actor=("worker",),
    text="stale result accepted: run {run_id} from {worker}, as run {current_run_id}",
    doc="A task-finished (or task-erred) from an older run of a task that is processing again "
        "was taken as the current run's: dask before PR 7463 (task-finished, 2023.1.1) and PR "
        "7933 (task-erred, 2023.7.0) had no run id to tell them apart.")
STEAL_REQUEST = _kind(
    "steal.request", "victim", "thief", "stimulus_id", source="scheduler",
    actor=("victim", "thief"),
    text="steal? {victim} -> {thief}",
    doc="Work stealing asked the victim to give up a task queued there, for an idle thief.")
STEAL_OUTCOME = _kind(
    "steal.outcome", "outcome", "state", "victim", "thief", "stimulus_id", source="scheduler",
    actor=("victim", "thief"),
    text="steal: {outcome} ({state} on {victim})",
    doc="The victim's answer to a steal-request, in dask's words: ``confirm`` (the task moved "
        "to the thief), ``already-computing``, ``already-aborted``, ``stale-response`` or "
        "``reschedule``.")
WORKER_SECEDE = _kind(
    "worker.secede", source="worker",
    doc="A running task left its thread slot (secede), so another task may take it.")
WORKER_REJOIN = _kind(
    "worker.rejoin", source="worker",
    doc="A seceded task took a thread slot again (rejoin).")
FUTURE_PUT = _kind(
    "future.put", source="scheduler",
    doc="A task whose key came from the client's id counter reached memory: the value is now "
        "set, and a second task given the same id would set it twice.")
FUTURE_PUT_REJECTED = _kind(
    "future.put_rejected", "reason", source="scheduler",
    doc="The scheduler refused a second task for a counter-allocated key already set: two "
        "futures were given one id (the racy-ids story).")

# -- checks and the adapter -----------------------------------------------------------------

VIOLATION = _kind(
    "violation", "name", "first_seq", "client", "explanation", source="checks",
    actor=("client",),
    text="!! VIOLATION {name} (first broken at event {first_seq})",
    doc="An invariant broke; ``first_seq`` is the earliest event of the story.")
HOOK_FAILED = _kind(
    "hook.failed", "hook", "error", source="adapter",
    doc="One of the dask adapter's hooks raised; it was removed so dask goes on.")

# -- the trace itself -----------------------------------------------------------------------

FOCUS_CHANGED = _kind(
    "focus.changed", "keys", "sample", "joined", source="trace",
    text=lambda f: "focus: " + focus_words(f["keys"], f["sample"]),
    doc="From here on the trace follows only these keys (globs or key prefixes, or a "
        "predicate's label), one key in ``sample`` of them; no keys and sample 1: every key. "
        "Every source filters before buffering.  ``joined``: the keys that joined the focus "
        "while alive (known to the scheduler, held by a client, on a worker); the beliefs "
        "forget keys that left, and judge a joined key only from its next life.")


def describe(kind: str, extra: tuple) -> str:
    """A non-message event in its declaration's words; a kind from a newer trace shows what
    it holds.  Positional, because the live timeline describes every event it draws."""
    declared = KINDS.get(kind)
    if declared is None:
        return kind + (" " + " ".join(map(str, extra)) if extra else "")
    return declared.describe(extra)


#: Field names by kind: the shape readers of old code and saved traces use.
FIELDS: dict[str, tuple[str, ...]] = {name: k.fields for name, k in KINDS.items()}


def namer(kind: str) -> Callable[[Callable[[Any], str], tuple], tuple] | None:
    """For a kind with actor fields, a function renaming them in ``extra`` with ``name``.

    The dask plugins record dask's ids; the tracer names them (``client:1``,
    ``worker:0``) where the declaration says a field holds actors.
    """
    declared = KINDS.get(kind)
    if declared is None or not (declared.actor_fields or declared.actors_fields):
        return None
    # Positions, not a pass over every field: the merge renames two events of every task.
    single = [i for i, f in enumerate(declared.fields) if f in declared.actor_fields]
    many = [i for i, f in enumerate(declared.fields) if f in declared.actors_fields]

    def rename(name: Callable[[Any], str], extra: tuple) -> tuple:
        out = list(extra)
        n = len(out)
        for i in single:
            if i < n and out[i] is not None:
                out[i] = name(out[i])
        for i in many:
            if i < n and out[i] is not None:
                out[i] = tuple(map(name, out[i]))
        return tuple(out)

    return rename
