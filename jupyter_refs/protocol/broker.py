"""The scheduler's structured events: dask's ``Broker`` (``distributed/broker.py``).

A topic keeps its events, ``(time, msg)``, in a bounded deque (dask's
``distributed.scheduler.events-log-length``, 100 000) and a set of subscribed clients;
publishing appends and sends ``event`` to each subscriber on its stream.  A worker's
dict message gets ``"worker"`` (its address) added, as ``Scheduler.log_worker_event`` does.

Every client is subscribed to ``print`` and ``warn`` from the start — dask's ``Client``
subscribes to them when it connects (``_default_event_handlers``), which is how
``distributed.print`` / ``warn`` in a task reach the user — until it unsubscribes.  The
model has these subscriptions without their messages: a client here connects by a direct
call (``SchedulerState.add_client``), as a worker joins, and the broker counts the
scheduler's clients among a default topic's subscribers until they unsubscribe.

dask's scheduler also logs events of its own (``all``, ``scheduler``, ``stealing``, one
topic per worker and per client: lifecycle actions); the model does not keep those, so
asking for them — or for every topic at once — says so (``not_modelled``) instead of
answering with less than dask would.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

#: dask's ``distributed.scheduler.events-log-length``.
EVENTS_LOG_LENGTH = 100_000
#: The topics a dask client subscribes to when it connects.
DEFAULT_TOPICS = ("print", "warn")
#: Topics dask's scheduler itself writes to (besides one per worker and per client).
SCHEDULERS_OWN = frozenset({"all", "scheduler", "stealing", "worker-fail-hard"})


@dataclass(slots=True)
class Topic:
    events: deque = field(default_factory=lambda: deque(maxlen=EVENTS_LOG_LENGTH))
    subscribers: set[str] = field(default_factory=set)
    #: A default topic's clients that unsubscribed from it.
    left: set[str] = field(default_factory=set)
    count: int = 0


class Broker:
    """Topics by name, made when first used (dask's ``defaultdict(Topic)``)."""

    def __init__(self, clients: set[str]) -> None:
        self.topics: dict[str, Topic] = {}
        #: The scheduler's clients (shared, not copied): subscribed to the default topics.
        self.clients = clients

    def _topic(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            topic = self.topics[name] = Topic()
        return topic

    def subscribe(self, name: str, client: str) -> None:
        topic = self._topic(name)
        topic.subscribers.add(client)
        topic.left.discard(client)

    def unsubscribe(self, name: str, client: str) -> None:
        topic = self._topic(name)
        topic.subscribers.discard(client)
        if name in DEFAULT_TOPICS:
            topic.left.add(client)

    def subscribers(self, name: str) -> list[str]:
        topic = self._topic(name)
        subscribers = set(topic.subscribers)
        if name in DEFAULT_TOPICS:
            subscribers |= self.clients - topic.left
        return sorted(subscribers)

    def publish(self, topics: Any, msg: Any, time: float,
                worker: str | None = None) -> list[tuple[str, str, tuple]]:
        """Log ``msg`` under each topic; returns ``(client, topic, event)`` for each
        subscriber to tell."""
        if isinstance(topics, str):
            topics = [topics]
        sends = []
        for name in topics:
            if worker is not None and isinstance(msg, dict) and worker != name:
                msg = {**msg, "worker": worker}
            event = (time, msg)
            topic = self._topic(name)
            topic.events.append(event)
            topic.count += 1
            sends += [(client, name, event) for client in self.subscribers(name)]
        return sends

    def events(self, name: str) -> tuple[tuple[float, Any], ...]:
        topic = self.topics.get(name)
        return tuple(topic.events) if topic is not None else ()


    def not_modelled(self, topic: str | None, workers: Any) -> str | None:
        """Why the model cannot answer for ``topic`` as dask would (None: it can)."""
        if topic is None:
            return "get_events() of every topic (dask's scheduler logs its own events too)"
        if topic in SCHEDULERS_OWN or topic in workers or topic in self.clients:
            return f"the scheduler's own events (topic {topic!r})"
        return None
