"""Messages exchanged by the actors.

Operation names are dask's own (``update-graph``, ``client-releases-keys``,
``free-keys`` …) so that what a student reads on a timeline reads the same in
dask's source and logs.

A message travels either on a *batched stream* (one FIFO per sender→receiver
pair, flushed on an interval, like dask's ``BatchedSend``) or on an *RPC call*
(its own channel, ordered with nothing else).  That distinction is the whole
reason the races exist, so it is a field of the message, set by the actor that
sends it; the network turns it into delivery order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEDULER = "scheduler"
#: dask's pseudo-client for ``fire_and_forget``: it holds keys and has no stream
#: (``distributed/client.py``; see ``jupyter_refs.worker_context``).
FIRE_AND_FORGET = "fire-and-forget"
#: The reason a future is cancelled when the scheduler dropped its client's connection.
CONNECTION_LOST = "scheduler-connection-lost"

# client -> scheduler, batched stream
UPDATE_GRAPH = "update-graph"
CLIENT_RELEASES_KEYS = "client-releases-keys"
CLIENT_DESIRES_KEYS = "client-desires-keys"
CANCEL_KEYS = "cancel-keys"
REPORT_KEY = "report-key"
VARIABLE_CONFIRM = "variable-future-received-confirm"
QUEUE_FUTURE_RELEASE = "queue-future-release"
#: A marker on the stream that an RPC of the same client waits for (dask's publish extension,
#: since PR 8577: "the batched stream has caught up with this call").
PUBLISH_FLUSH = "publish_flush_batched_send"
#: fixed only: the reader holds what its get was handed (the scheduler lets go of the get's hold).
PUBLISH_GET_CONFIRM = "publish-get-confirm"
# client -> scheduler, RPC
#: Before 2023.3.1 (PR 7583, ``cancel_rpc``): ``Client.cancel`` awaited this RPC, not
#: ``cancel-keys`` on the stream; it is answered with ``reply``.
CANCEL = "cancel"
SCATTER = "scatter"
SCATTER_REPLY = "scatter-reply"
GATHER = "gather"
GATHER_REPLY = "gather-reply"
# client -> scheduler, RPC: questions and the extensions (dask's Variable and Queue)
WHO_HAS = "who_has"
HAS_WHAT = "has_what"
PROCESSING_QUERY = "processing"
VARIABLE_SET = "variable_set"
VARIABLE_GET = "variable_get"
VARIABLE_DELETE = "variable_delete"
QUEUE_CREATE = "queue_create"
QUEUE_PUT = "queue_put"
QUEUE_GET = "queue_get"
QUEUE_QSIZE = "queue_qsize"
QUEUE_RELEASE = "queue_release"
# client -> scheduler, RPC: published datasets (dask's ``PublishExtension``)
PUBLISH_PUT = "publish_put"
PUBLISH_GET = "publish_get"
PUBLISH_DELETE = "publish_delete"
PUBLISH_LIST = "publish_list"
PUBLISH_WAIT_FLUSH = "publish_wait_flush"  # 2024.4.2 to 2026.3.0: wait for the marker
EVENT_WAIT = "event_wait"
EVENT_SET = "event_set"
EVENT_CLEAR = "event_clear"
EVENT_IS_SET = "event_is_set"
SEMAPHORE_REGISTER = "semaphore_register"
SEMAPHORE_ACQUIRE = "semaphore_acquire"
SEMAPHORE_RELEASE = "semaphore_release"
SEMAPHORE_VALUE = "semaphore_value"
SEMAPHORE_CLOSE = "semaphore_close"
SET_METADATA = "set_metadata"
GET_METADATA = "get_metadata"
GET_RUNSPEC = "get_runspec"
GET_ERROR_CAUSE = "get_error_cause"
# structured events (dask's ``Broker``, ``distributed/broker.py``): a client logs by RPC, a
# worker on its stream; subscriptions ride the client's stream; the scheduler sends each
# event to the topic's subscribers on their streams
LOG_EVENT = "log-event"
GET_EVENTS = "events"
SUBSCRIBE_TOPIC = "subscribe-topic"
UNSUBSCRIBE_TOPIC = "unsubscribe-topic"
EVENT = "event"
# client -> scheduler, RPC: run erred tasks again (``Future.retry``); the scheduler tells the
# clients holding each on their streams that it is pending again
RETRY = "retry"
TASK_RETRIED = "task-retried"
# replicas: a worker that fetched a dependency, or acquired a replica (``Client.replicate``, a
# retirement), keeps it and says so, with the keys its holder no longer had (batched, worker
# -> scheduler); the scheduler drops replicas it does not want (batched, scheduler -> worker)
ADD_KEYS = "add-keys"
REMOVE_REPLICAS = "remove-replicas"
# client -> scheduler, RPC: copies of keys on more workers (``Client.replicate``), which the
# scheduler asks of them, as of a retiring worker's peers (batched, scheduler -> worker: fetch
# each key from a holder, whose copy's incarnation it names)
REPLICATE = "replicate"
ACQUIRE_REPLICAS = "acquire-replicas"
# client -> scheduler, RPC: the task stream (``get_task_stream``), and its cursor
GET_TASK_STREAM = "get_task_stream"
GET_TASK_STREAM_INDEX = "get_task_stream_index"
# client -> scheduler, RPC: dask's MultiLock (an acquire may wait: parked)
MULTI_LOCK_ACQUIRE = "multi_lock_acquire"
MULTI_LOCK_RELEASE = "multi_lock_release"
QUERY_REPLY = "reply"
# client -> scheduler, RPC: retire workers (dask's ``Client.retire_workers``)
RETIRE_WORKERS = "retire_workers"
# scheduler -> worker, batched: a retirement (dask's ``retire_workers`` and the Active Memory
# Manager's ``RetireWorker`` policy): the worker takes no new task, another worker fetches the
# data only it holds, and the scheduler removes it and tells it to close.
WORKER_STATUS_CHANGE = "worker-status-change"
CLOSE_WORKER = "close"
# worker -> scheduler, batched: the last message of a worker that closes on its own
# (``LocalCluster.scale`` down closes workers)
CLOSE_STREAM = "close-stream"
# worker -> scheduler, RPC: "I am alive" (the scheduler answers "missing" to a worker it removed),
# and a worker its nanny restarted registering again (before PR 8522, 2024.2.1)
HEARTBEAT_WORKER = "heartbeat_worker"
REGISTER_WORKER = "register-worker"
# scheduler -> worker
UPDATE_DATA = "update-data"  # RPC: the worker put of a scatter
UPDATE_DATA_REPLY = "update-data-reply"
GET_DATA = "get-data"  # RPC: gather
GET_DATA_REPLY = "get-data-reply"
COMPUTE_TASK = "compute-task"  # batched
FREE_KEYS = "free-keys"  # batched
STEAL_REQUEST = "steal-request"  # batched: give this queued task up (work stealing)
# worker -> itself: a task of the worker's ready queue takes a thread and runs (dask's
# ``Execute`` instruction).  It travels like a message on its own channel so that the
# policy decides when a task runs, next to the messages in flight.
EXECUTE = "execute"
# worker -> scheduler, batched
TASK_FINISHED = "task-finished"
TASK_ERRED = "task-erred"
RELEASE_WORKER_DATA = "release-worker-data"
STEAL_RESPONSE = "steal-response"  # the state the steal-request found the task in
STEAL_RELEASE = "release"  # before 2021.10.0: the victim gave the stolen task up (``steal_release``)
# scheduler -> client reports, batched
KEY_IN_MEMORY = "key-in-memory"
LOST_DATA = "lost-data"
CANCELLED_KEYS = "cancelled-keys"
TASK_ERRED_REPORT = "task-erred"
# scheduler -> itself: a call waiting in an extension (a Variable's or a Queue's get) reaches
# its timeout, and the scheduler answers it with the error (dask's ``wait_for(..., timeout)``
# in the handler).  The driver sends it, since the driver keeps the clocks.
CALL_TIMEOUT = "call-timeout"
# scheduler -> itself: time to balance the workers' queues (dask's work-stealing periodic
# callback).  A timer rather than a message: sent once a worker is left with a free thread
# while another has tasks queued behind its threads, on its own channel, and delivered as
# the policy's clock says (see ``stealing.py``).
BALANCE = "balance"
BALANCE_CHANNEL = "balance:scheduler"
# scheduler -> itself: time for the active memory manager's pass (dask's AMM, every 2 s),
# sent while a key has more replicas than it needs (see ``amm.py``)
AMM = "amm"
AMM_CHANNEL = "amm:scheduler"
# client -> scheduler, RPC: the AMM's switch and one pass (``Client.amm``)
AMM_HANDLER = "amm_handler"
# scheduler -> itself, before 2023.3.1 (``cancel_rpc``): a cancel waiting for its key looks
# again (dask's ``_cancel_key`` sleeps 0.1 s between looks, for 1 s; before 2022.5.1 a
# ``call_later`` 0.2 s, five times).  A timer like the balance: each wait on a channel of its
# own (``cancel-poll:scheduler#3``), delivered when the policy's clock says.
CANCEL_POLL = "cancel-poll"
#: The timers: messages the scheduler sends itself that stand for time passing (``Immediate``
#: delivers one only when nothing else can move).
TIMERS = frozenset({BALANCE, CANCEL_POLL, AMM})
# scheduler -> client, last on the stream: the scheduler dropped the connection
STREAM_CLOSED = "stream-closed"


def stream_channel(sender: str, receiver: str) -> str:
    """Name of the batched FIFO stream from ``sender`` to ``receiver``."""
    return f"{sender}->{receiver}"


@dataclass(slots=True, eq=False, repr=False)
class Message:
    """One message in flight.

    ``msg_id`` and ``sent_ns`` are filled in by the network when it accepts
    the message; the protocol never reads them except to quote a cause.
    ``keys`` is what the message is about, kept apart from the payload so the
    tracer and the checks can index it without knowing every operation.
    """

    sender: str
    receiver: str
    op: str
    channel: str
    batched: bool
    keys: tuple[str, ...] = ()
    payload: dict[str, Any] = field(default_factory=dict)
    msg_id: int = -1
    sent_ns: int = 0

    def __str__(self) -> str:
        """``#3 client-releases-keys[k] client:1->scheduler`` on a batched stream (the stream's
        own name); a message on any other channel — an RPC, a task's run — names its channel
        too, so an RPC never reads as the stream: ``#2 scatter[k] client:1->scheduler on
        rpc:client:1#2``."""
        keys = ",".join(self.keys[:3]) + ("…" if len(self.keys) > 3 else "")
        line = f"#{self.msg_id} {self.op}[{keys}] {self.sender}->{self.receiver}"
        return line if self.batched else f"{line} on {self.channel}"

    def __repr__(self) -> str:
        # str() already names a channel that is not the stream's own: name it once (review 4)
        return f"<Message {self} on {self.channel}>" if self.batched else f"<Message {self}>"
