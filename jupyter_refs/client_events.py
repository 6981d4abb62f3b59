"""dask's structured events on the client: ``log_event``, ``get_events``, ``subscribe_topic``,
``unsubscribe_topic``, and the handlers that make ``distributed.print`` / ``warn`` in a task
print and warn here.

A mixin of :class:`~jupyter_refs.client.Client`, as dask 2026.8.0's ``Client`` does it:
``log_event`` is an RPC (done when it returns), ``get_events`` asks the scheduler, a
subscription rides the client's stream, and each event of a subscribed topic comes on the
scheduler's stream to the client, whose handler runs on the process's callback thread, where
done callbacks run (dask's runs on its event loop, also not the user's thread).  The scheduler's side is
``protocol/broker.py``.
"""

from __future__ import annotations

import pickle
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .coordination import answered
from .protocol import messages as m

if TYPE_CHECKING:
    from .cluster import Cluster
    from .protocol.client import ClientState


def dumpable(v: Any) -> bool:
    """What msgpack can carry (dask's ``_is_dumpable``): an event's message must be."""
    typ = type(v)
    return (v is None or typ in (str, bool, bytes, int, float)
            or isinstance(v, dict) and all(map(dumpable, v.values()))
            and all(type(k) is str for k in v)
            or isinstance(v, list | tuple) and all(map(dumpable, v)))


def check_dumpable(msg: Any) -> None:
    if not dumpable(msg):
        raise TypeError(f"Message must be msgpack serializable. Got {type(msg)=} instead.")


def handle_print(event: tuple) -> None:
    """dask's ``_handle_print``: a task's ``distributed.print``, printed here."""
    _, msg = event
    if not isinstance(msg, dict):
        print(msg)
        return
    args = msg.get("args")
    if not isinstance(args, tuple):
        raise TypeError(f"_handle_print: client received non-tuple print args: {args!r}")
    file = {None: None, 1: sys.stdout, 2: sys.stderr}.get(msg.get("file"), False)
    if file is False:
        raise TypeError(f"_handle_print: client received unsupported file kwarg: "
                        f"{msg.get('file')!r}")
    print(*args, sep=msg.get("sep"), end=msg.get("end"), file=file, flush=msg.get("flush"))


def handle_warn(event: tuple) -> None:
    """dask's ``_handle_warn``: a task's ``distributed.warn``, warned here."""
    _, msg = event
    if not isinstance(msg, dict):
        warnings.warn(msg, stacklevel=1)
        return
    if "message" not in msg:
        raise TypeError("_handle_warn: client received a warn event missing the required "
                        '"message" argument.')
    category = pickle.loads(msg["category"]) if "category" in msg else None
    warnings.warn(pickle.loads(msg["message"]), category=category, stacklevel=1)


#: dask's ``Client._default_event_handlers``.
DEFAULT_HANDLERS: dict[str, Callable[[tuple], Any]] = {"print": handle_print,
                                                       "warn": handle_warn}


class TopicCalls:
    """The mixin (see the module's doc)."""

    cluster: Cluster  # Client's, as are _state, _ask, _check_open, _run_callback
    _state: ClientState

    def _event_handlers(self) -> dict[str, Callable[[tuple], Any]]:
        handlers = self.__dict__.get("_handlers_by_topic")
        if handlers is None:
            handlers = self.__dict__["_handlers_by_topic"] = dict(DEFAULT_HANDLERS)
        return handlers

    def _on_event(self, topic: str, event: tuple) -> None:
        """An event came (under the cluster's lock): its handler runs on the callback thread."""
        handler = self._event_handlers().get(topic)
        if handler is None:  # dask: a topic with no handler any more is unsubscribed
            with self.cluster.call(None) as user_call:
                user_call.send(self._state.send(m.UNSUBSCRIBE_TOPIC, topic=topic))
            return
        self._run_callback(event, handler)

    def log_event(self, topic: Any, msg: Any) -> None:
        """Log ``msg`` under ``topic`` (or each of a list of topics) on the scheduler."""
        check_dumpable(msg)
        import time

        answered(self._ask(m.LOG_EVENT, topic=topic, msg=msg, time=time.time()))

    def get_events(self, topic: str | None = None) -> Any:
        """The events logged under ``topic``: a tuple of ``(time, msg)``, oldest first."""
        return answered(self._ask(m.GET_EVENTS, topic=topic))["value"]

    def subscribe_topic(self, topic: str, handler: Callable[[tuple], Any]) -> None:
        """Call ``handler((time, msg))`` for every event logged under ``topic`` from now on."""
        self._check_open(m.SUBSCRIBE_TOPIC)
        self._event_handlers()[topic] = handler
        with self.cluster.call(None) as user_call:
            user_call.send(self._state.send(m.SUBSCRIBE_TOPIC, topic=topic))

    def unsubscribe_topic(self, topic: str) -> None:
        """Stop handling ``topic``'s events (dask keeps the handler, and says nothing more)."""
        if topic not in self._event_handlers():
            raise ValueError(f"No event handler known for topic {topic}.")
        with self.cluster.call(None) as user_call:
            user_call.send(self._state.send(m.UNSUBSCRIBE_TOPIC, topic=topic))
