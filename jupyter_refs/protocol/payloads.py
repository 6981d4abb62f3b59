"""What each message carries, declared once per operation.

``Message.payload`` is a plain dict — the sans-IO actors build and read it on every
delivery, and a dict is the cheapest thing to build — but what it holds is not left to each
handler's string keys: every operation's payload is a ``TypedDict`` here, keyed by who sends
it and its name from ``messages.py``.  Handlers annotate what they read with these types;
``check(msg)`` holds a message against its declaration, and the protocol tests run every
zoo race and the conformance programs through it, so a field added, renamed or forgotten
on one side fails a test instead of a run.

Two of dask's names mean two messages: ``task-erred`` (a worker's result, and the report to
a client) and ``get-data`` (the client's gather and the scheduler's fetch from a worker);
the sender tells them apart.
"""

# No ``from __future__ import annotations``: TypedDict reads NotRequired[...] only from
# evaluated annotations on Python 3.11.
from typing import Any, NotRequired, TypedDict

from . import messages as m

# -- client -> scheduler ---------------------------------------------------------------------


class FromClient(TypedDict):
    """A client's request that carries nothing but who asks (``gather``, ``who_has`` …)."""

    client: str


class UpdateGraph(FromClient):
    tasks: dict[str, Any]
    gens: dict[str, int]  # the hold each key's desire starts (fixed); {} under dask
    code: NotRequired[tuple[Any, ...]]  # the user's frames around the call (computations.py)


class ClientReleasesKeys(FromClient):
    gens: dict[str, int]  # the hold each release ends (fixed)


class ClientDesiresKeys(FromClient):
    gens: dict[str, int]
    task: NotRequired[str | None]  # the task whose run deserialized the future, if any


class CancelKeys(FromClient):
    force: bool
    reason: str | None
    msg: str | None


class Scatter(FromClient):
    data: dict[str, Any]
    gens: dict[str, int]
    workers: list[str] | None
    broadcast: bool
    types: dict[str, Any]


class Named(FromClient):
    """A request about one Variable or Queue, by its name."""

    name: str


class VariableSet(Named):
    timeout: float | None
    key: NotRequired[str]  # a future's key, or
    data: NotRequired[bytes]  # a plain value, pickled


class WithTimeout(Named):
    timeout: float | None


class Received(Named):
    """A reader holds a future a Variable or a Queue handed it (the desire rides on this)."""

    gen: NotRequired[int]  # the reader's hold of the key (fixed reads it; dask has none)


class VariableConfirm(Received):
    token: str


class QueueCreate(Named):
    maxsize: int


class QueuePut(WithTimeout):
    key: NotRequired[str]
    data: NotRequired[bytes]


class QueueGet(WithTimeout):
    batch: bool
    n: int | None


class SemaphoreRegister(Named):
    max_leases: int


class Lease(Named):
    lease_id: str


class SemaphoreAcquire(Lease):
    timeout: float | None


class SetMetadata(FromClient):
    path: list[Any]
    value: Any


class GetMetadata(FromClient):
    path: list[Any]
    default: NotRequired[Any]  # absent: a missing path raises KeyError, as dask's does


class GetRunspec(FromClient):
    key: str


class PublishPut(FromClient):
    names: list[str]
    holds: list[Any]
    data: list[Any]
    override: bool
    uid: NotRequired[str]  # the marker it waits for behind the stream, from 2024.4.2 (PR 8577)


class PublishNames(FromClient):
    names: list[str]


class PublishDelete(PublishNames):
    uid: NotRequired[str]  # the marker it waits for, from 2026.6.0 (PR 9217)


class PublishMarker(FromClient):
    """The marker a publish waits for behind the batched stream (2024.4.2 to 2026.3.0)."""

    uid: str


class PublishConfirm(FromClient):
    token: str


# -- scheduler -> worker, and back -----------------------------------------------------------


class Stimulus(TypedDict):
    stimulus_id: str


class ComputeTask(Stimulus):
    key: str
    func: bytes
    args: bytes
    who_has: dict[str, list[str]]
    incarnation: int
    priority: tuple  # dask's (-user priority, graph generation, order in the graph): lower first
    resources: dict[str, float] | None  # what the task needs of the worker's resources


class FreeKeys(Stimulus):
    incarnations: dict[str, int]  # which copy each free deletes (fixed); 0: whatever copy


class StealRequest(Stimulus):
    key: str


class StealResponse(StealRequest):
    state: str


class StealRelease(TypedDict):
    key: str
    worker: str


class UpdateData(TypedDict):
    data: dict[str, Any]
    incarnations: dict[str, int]


class UpdateDataReply(TypedDict):
    nbytes: dict[str, int]
    incarnations: dict[str, int]


class DataReply(TypedDict):
    """``get-data-reply`` from a worker, ``gather-reply`` to a client."""

    data: dict[str, Any]
    missing: list[str]
    errors: dict[str, Any]
    incarnations: NotRequired[dict[str, int]]  # a worker's: the copy of each key it sent
    # While a task stream is kept (the driver's clock, epoch seconds): when the fetch was
    # asked for (echoed from the request) and when this reply reached the fetcher.
    sent_at: NotRequired[float]
    received_at: NotRequired[float]


class Fetch(TypedDict, total=False):
    """A ``get-data`` to a worker: nothing, or — timed by the driver — when it was sent (a
    worker's, echoed in the reply) and when it arrived (the served worker's transfer log)."""

    sent_at: float
    received_at: float


class LogEvent(FromClient):
    topic: Any  # a topic name, or a list of them
    msg: Any
    time: float  # when it was logged (the driver's clock; dask stamps it on the scheduler)


class GetEvents(FromClient):
    topic: str | None


class Topic(FromClient):
    topic: str


class WorkerLogEvent(TypedDict):
    worker: str
    topic: Any
    msg: Any
    time: float


class Event(TypedDict):
    topic: str
    event: tuple  # (time, msg), as dask's subscribers get it


class Replicate(FromClient):
    n: int | None
    workers: list[str] | None
    branching_factor: int


class MultiLockAcquire(FromClient):
    locks: list[str]
    id: str
    timeout: float | None
    num_locks: int


class MultiLockRelease(FromClient):
    id: str


class AmmHandler(FromClient):
    method: str  # start, stop, run_once, running


class RemoveReplicas(Stimulus):
    incarnations: dict[str, int]  # which copy of each key to drop


class FromWorker(TypedDict):
    worker: str
    incarnation: int


class Timed(TypedDict, total=False):
    """What a worker's report adds while the scheduler keeps a task stream (dask's always)."""

    startstops: list[dict[str, Any]]
    thread: int
    nbytes: int
    typename: str
    exception_text: str


class TaskFinished(FromWorker, Timed):
    type: bytes


class TaskErred(FromWorker, Timed):
    exception: bytes
    text: str


class TaskStreamQuery(FromClient):
    start: float | None
    stop: float | None
    count: int | None
    start_index: int | None


class Empty(TypedDict):
    """Nothing but the operation and its keys (``execute``, ``balance``, a scatter's reply)."""


# -- scheduler -> client ---------------------------------------------------------------------


class Report(TypedDict):
    gen: NotRequired[int]  # the hold a report is about (fixed)
    gens: NotRequired[dict[str, int]]


class KeyInMemory(Report):
    type: bytes


class CancelledKeys(Report):
    reason: str | None
    msg: str | None


class TaskErredReport(Report):
    exception: bytes
    text: str
    traceback: Any


class StreamClosed(TypedDict):
    reason: str


class Reply(TypedDict, total=False):
    """An RPC's answer: which fields depends on the request."""

    ok: bool
    error: str
    raised: bool  # the handler raised: ``error`` is the exception, the caller raises it
    value: Any
    type: str
    state: str
    token: str
    records: list[Any]
    datasets: list[Any]
    names: list[str]
    who_has: dict[str, list[str]]
    has_what: dict[str, list[str]]
    qsize: int
    exception: bytes
    text: str
    processing: dict[str, list[str]]
    key: str | None
    func: bytes
    args: bytes
    dependencies: list[str]
    status: str  # a heartbeat's answer: "OK", or "missing"
    workers: list[str]  # retire_workers: the workers retired


class CallTimeout(TypedDict):
    call: str


class RetireWorkers(FromClient):
    workers: list[str]
    close_workers: bool


class WorkerStatusChange(TypedDict):
    status: str
    stimulus_id: str


class AcquireReplicas(TypedDict):
    who_has: dict[str, dict[str, int]]  # key -> {holder: incarnation of its copy}
    stimulus_id: str


class CloseWorker(TypedDict):
    reason: str


class AddKeys(TypedDict):
    worker: str
    incarnations: dict[str, int]  # the copies fetched
    missing: list[str]  # keys the holder no longer had


class Heartbeat(TypedDict):
    """A worker's heartbeat, or its stream's last message: who it is."""

    worker: str


class RegisterWorker(TypedDict):
    life: int  # how often its nanny restarted it
    nthreads: int


class CancelPoll(TypedDict):
    job: int  # the key's cancel that waits (``SchedulerState._cancel_jobs``)
    after: float  # seconds it stands for (0.1, before 2022.5.1 0.2): the policy's clock


CLIENT, SCHEDULER, WORKER = "client", "scheduler", "worker"

#: (sender's kind, operation) -> its payload.
PAYLOADS: dict[tuple[str, str], type] = {
    (CLIENT, m.UPDATE_GRAPH): UpdateGraph,
    (CLIENT, m.CLIENT_RELEASES_KEYS): ClientReleasesKeys,
    (CLIENT, m.CLIENT_DESIRES_KEYS): ClientDesiresKeys,
    (CLIENT, m.CANCEL_KEYS): CancelKeys,
    (CLIENT, m.CANCEL): CancelKeys,
    (CLIENT, m.REPORT_KEY): FromClient,
    (CLIENT, m.SCATTER): Scatter,
    (CLIENT, m.GATHER): FromClient,
    (CLIENT, m.WHO_HAS): FromClient,
    (CLIENT, m.HAS_WHAT): FromClient,
    (CLIENT, m.VARIABLE_SET): VariableSet,
    (CLIENT, m.VARIABLE_GET): WithTimeout,
    (CLIENT, m.VARIABLE_DELETE): Named,
    (CLIENT, m.VARIABLE_CONFIRM): VariableConfirm,
    (CLIENT, m.QUEUE_CREATE): QueueCreate,
    (CLIENT, m.QUEUE_PUT): QueuePut,
    (CLIENT, m.QUEUE_GET): QueueGet,
    (CLIENT, m.QUEUE_QSIZE): Named,
    (CLIENT, m.QUEUE_RELEASE): Named,
    (CLIENT, m.QUEUE_FUTURE_RELEASE): Received,
    (CLIENT, m.EVENT_WAIT): WithTimeout,
    (CLIENT, m.EVENT_SET): Named,
    (CLIENT, m.EVENT_CLEAR): Named,
    (CLIENT, m.EVENT_IS_SET): Named,
    (CLIENT, m.SEMAPHORE_REGISTER): SemaphoreRegister,
    (CLIENT, m.SEMAPHORE_ACQUIRE): SemaphoreAcquire,
    (CLIENT, m.SEMAPHORE_RELEASE): Lease,
    (CLIENT, m.SEMAPHORE_VALUE): Named,
    (CLIENT, m.SEMAPHORE_CLOSE): Named,
    (CLIENT, m.SET_METADATA): SetMetadata,
    (CLIENT, m.GET_METADATA): GetMetadata,
    (CLIENT, m.GET_RUNSPEC): GetRunspec,
    (CLIENT, m.GET_ERROR_CAUSE): FromClient,
    (CLIENT, m.PROCESSING_QUERY): FromClient,
    (CLIENT, m.PUBLISH_PUT): PublishPut,
    (CLIENT, m.PUBLISH_GET): PublishNames,
    (CLIENT, m.PUBLISH_DELETE): PublishDelete,
    (CLIENT, m.PUBLISH_LIST): FromClient,
    (CLIENT, m.PUBLISH_FLUSH): PublishMarker,
    (CLIENT, m.PUBLISH_WAIT_FLUSH): PublishMarker,
    (CLIENT, m.PUBLISH_GET_CONFIRM): PublishConfirm,
    (CLIENT, m.RETIRE_WORKERS): RetireWorkers,
    (CLIENT, m.RETRY): FromClient,
    (SCHEDULER, m.TASK_RETRIED): Report,
    (CLIENT, m.LOG_EVENT): LogEvent,
    (CLIENT, m.GET_EVENTS): GetEvents,
    (CLIENT, m.SUBSCRIBE_TOPIC): Topic,
    (CLIENT, m.UNSUBSCRIBE_TOPIC): Topic,
    (WORKER, m.LOG_EVENT): WorkerLogEvent,
    (WORKER, m.ADD_KEYS): AddKeys,
    (SCHEDULER, m.REMOVE_REPLICAS): RemoveReplicas,
    (CLIENT, m.REPLICATE): Replicate,
    (CLIENT, m.MULTI_LOCK_ACQUIRE): MultiLockAcquire,
    (CLIENT, m.MULTI_LOCK_RELEASE): MultiLockRelease,
    (CLIENT, m.GET_TASK_STREAM): TaskStreamQuery,
    (CLIENT, m.GET_TASK_STREAM_INDEX): FromClient,
    (SCHEDULER, m.ACQUIRE_REPLICAS): AcquireReplicas,
    (SCHEDULER, m.EVENT): Event,
    (SCHEDULER, m.COMPUTE_TASK): ComputeTask,
    (SCHEDULER, m.FREE_KEYS): FreeKeys,
    (SCHEDULER, m.STEAL_REQUEST): StealRequest,
    (SCHEDULER, m.UPDATE_DATA): UpdateData,
    (SCHEDULER, m.GET_DATA): Fetch,
    (SCHEDULER, m.KEY_IN_MEMORY): KeyInMemory,
    (SCHEDULER, m.LOST_DATA): Report,
    (SCHEDULER, m.CANCELLED_KEYS): CancelledKeys,
    (SCHEDULER, m.TASK_ERRED_REPORT): TaskErredReport,
    (SCHEDULER, m.STREAM_CLOSED): StreamClosed,
    (SCHEDULER, m.SCATTER_REPLY): Empty,
    (SCHEDULER, m.GATHER_REPLY): DataReply,
    (SCHEDULER, m.QUERY_REPLY): Reply,
    (SCHEDULER, m.CALL_TIMEOUT): CallTimeout,
    (SCHEDULER, m.BALANCE): Empty,
    (SCHEDULER, m.WORKER_STATUS_CHANGE): WorkerStatusChange,
    (SCHEDULER, m.CLOSE_WORKER): CloseWorker,
    (SCHEDULER, m.CANCEL_POLL): CancelPoll,
    (SCHEDULER, m.AMM): Empty,
    (CLIENT, m.AMM_HANDLER): AmmHandler,
    (WORKER, m.EXECUTE): Empty,
    (WORKER, m.GET_DATA): Fetch,
    (WORKER, m.GET_DATA_REPLY): DataReply,
    (WORKER, m.UPDATE_DATA_REPLY): UpdateDataReply,
    (WORKER, m.TASK_FINISHED): TaskFinished,
    (WORKER, m.TASK_ERRED): TaskErred,
    (WORKER, m.RELEASE_WORKER_DATA): FromWorker,
    (WORKER, m.STEAL_RESPONSE): StealResponse,
    (WORKER, m.CLOSE_STREAM): Heartbeat,
    (WORKER, m.HEARTBEAT_WORKER): Heartbeat,
    (WORKER, m.REGISTER_WORKER): RegisterWorker,
    (WORKER, m.STEAL_RELEASE): StealRelease,
}


class PayloadError(AssertionError):
    """A message whose payload is not what its operation declares (a protocol bug)."""


def kind_of(actor: str) -> str:
    """An actor's kind from its name: ``client:1`` and a worker's ``client:worker:0`` are
    clients, ``worker:0`` a worker."""
    return actor.split(":", 1)[0]


def check(msg: m.Message) -> None:
    """Hold ``msg`` against its declaration: every required field there, nothing undeclared."""
    declared = PAYLOADS.get((kind_of(msg.sender), msg.op))
    if declared is None:
        raise PayloadError(f"{msg.op!r} from a {kind_of(msg.sender)} has no declared payload")
    fields = set(msg.payload)
    missing = declared.__required_keys__ - fields
    extra = fields - declared.__required_keys__ - declared.__optional_keys__
    if missing or extra:
        raise PayloadError(f"{msg} carries {sorted(fields)}: {declared.__name__} "
                           f"{'lacks ' + str(sorted(missing)) if missing else ''}"
                           f"{' and ' if missing and extra else ''}"
                           f"{'does not declare ' + str(sorted(extra)) if extra else ''}")
