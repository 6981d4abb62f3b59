"""Channels with dask's ordering rules, and the policies that pick delivery order.

Two kinds of channel exist, as in dask:

* a **batched stream** per sender→receiver pair: FIFO, flushed on an interval
  (dask's ``BatchedSend``: 10 ms client→scheduler, 5 ms scheduler→worker,
  2 ms scheduler→client and worker→scheduler);
* an **RPC call**: its own channel, so ordered with nothing else.

A task *run* travels the same way: the worker's ``execute`` to itself, on a
channel of its own (``run:worker:0#3``), so whichever policy picks the next
message also picks when each task runs — the explorer included, and a
schedule string names a run like any delivery.

:class:`Network` holds the messages in flight and enforces FIFO per channel:
only the head of a channel can be delivered.  *Which* head goes next is the
policy's choice:

* :class:`Immediate` — the oldest message first; no message ever overtakes
  another, so no race can happen;
* :class:`RandomLatency` — simulated latencies from a seeded RNG (batched
  streams wait for their flush, RPCs take a fraction of a millisecond), so the
  same seed replays the same order; also the timing model of the live network;
* :class:`Manual` — nothing moves until ``deliver(msg_id)`` / ``step()``;
* :class:`Chooser` — a callback picks among the deliverable heads (the hook
  the explorer uses).

Policies decide order only; clocks and threads belong to the cluster driver.
"""

from __future__ import annotations

import random
from bisect import insort
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from operator import attrgetter

from .errors import NotDeliverableError, ProtocolError, UnknownMessageError
from .protocol.messages import AMM, BALANCE, CANCEL_POLL, EXECUTE, TIMERS, Message

MS = 1_000_000  # nanoseconds

#: dask's BatchedSend intervals, by (sender kind, receiver kind).
BATCH_INTERVAL_NS = {
    ("client", "scheduler"): 10 * MS,
    ("scheduler", "worker"): 5 * MS,
    ("scheduler", "client"): 2 * MS,
    ("worker", "scheduler"): 2 * MS,
}
#: dask's ``distributed.scheduler.work-stealing-interval``: how often its scheduler balances.
WORK_STEALING_INTERVAL_NS = 1000 * MS
#: dask's ``distributed.scheduler.active-memory-manager.interval``.
AMM_INTERVAL_NS = 2000 * MS
#: The scheduler's periodic timers (``messages.TIMERS``: not messages that cross a wire) and
#: their intervals: a random policy fires one at some point of its interval, immediate once
#: nothing else can move.  A cancel's poll waits what its payload says.
TIMER_INTERVALS = {BALANCE: WORK_STEALING_INTERVAL_NS, AMM: AMM_INTERVAL_NS}


def _kind(actor: str) -> str:
    """An actor's kind guessed from its name: only for actors nobody registered."""
    return actor.split(":", 1)[0]


def batch_interval_ns(msg: Message, kinds: dict[str, str] | None = None) -> int:
    """The flush interval of ``msg``'s stream, by the kinds of its ends.

    ``kinds`` (actor name -> ``client`` / ``scheduler`` / ``worker``) is what the
    cluster registered: a client called ``alice`` flushes every 10 ms like any other.
    """
    sender, receiver = msg.sender, msg.receiver
    if kinds:
        return BATCH_INTERVAL_NS.get((kinds.get(sender) or _kind(sender),
                                      kinds.get(receiver) or _kind(receiver)), 2 * MS)
    return BATCH_INTERVAL_NS.get((_kind(sender), _kind(receiver)), 2 * MS)


class Network:
    """Messages in flight, FIFO per channel.  It never decides order: policies do.

    The deliverable heads — the first message of each non-empty channel — are kept as
    messages arrive and leave, oldest first: every delivery asks for them, and a channel's
    head only changes when it is sent to while empty or when its head is taken.
    """

    def __init__(self) -> None:
        self.in_flight: dict[int, Message] = {}
        #: Channel -> its messages in order: a deque for a batched stream, a list for an RPC
        #: (it carries a message or two in its life, and a list costs a third of a deque to
        #: make; both take ``del queue[0]``).
        self._channels: dict[str, deque[Message] | list[Message]] = {}
        #: The first message of each non-empty channel, oldest first, held channels included:
        #: read-only to everyone else (``heads()`` gives a copy, without the held ones).
        self.ordered_heads: list[Message] = []
        #: Channel names or globs whose messages wait for an explicit deliver / step.
        self.held: set[str] = set()
        self._held_cache: dict[str, bool] = {}
        self._last_id = 0

    def accept(self, messages: list[Message], now_ns: int) -> None:
        """Put ``messages`` in flight, in order: each gets the next id and joins its channel."""
        in_flight, channels, heads = self.in_flight, self._channels, self.ordered_heads
        msg_id = self._last_id
        for msg in messages:
            msg_id += 1
            msg.msg_id = msg_id
            msg.sent_ns = now_ns
            in_flight[msg_id] = msg
            channel = msg.channel
            queue = channels.get(channel)
            if queue is None:
                channels[channel] = deque((msg,)) if msg.batched else [msg]
                heads.append(msg)  # the newest id: the list stays in order
                continue
            if not queue:
                heads.append(msg)
            queue.append(msg)
        self._last_id = msg_id

    def heads(self, held_too: bool = False) -> list[Message]:
        """The deliverable messages, oldest first (a new list): the first of each non-empty
        channel that is not held."""
        if self.held and not held_too:
            is_held = self.is_held
            return [h for h in self.ordered_heads if not is_held(h.channel)]
        return self.ordered_heads.copy()

    def oldest(self, held_too: bool = False) -> Message | None:
        if self.held and not held_too:
            heads = self.heads()
            return heads[0] if heads else None
        # Ids grow with sending and each channel is FIFO, so the oldest message
        # in flight is always the head of its channel.
        heads = self.ordered_heads
        return heads[0] if heads else None

    def oldest_message(self) -> Message | None:
        """The oldest deliverable message that is not a task run (``execute``); a timer (the
        balance, a cancel's poll) only when nothing else is left (see :meth:`Immediate.next`)."""
        timer = None
        is_held = self.is_held if self.held else None
        for msg in self.ordered_heads:  # read in place: nothing changes while we look
            op = msg.op
            if op == EXECUTE or (is_held is not None and is_held(msg.channel)):
                continue
            if op in TIMERS:
                if timer is None:
                    timer = msg
                continue
            return msg
        return timer

    # -- holding channels ------------------------------------------------------------------

    def hold(self, pattern: str) -> None:
        """Keep messages on channels matching ``pattern`` (a name or a glob) from being delivered
        by the policy; ``deliver(msg_id)`` and ``step()`` still can."""
        self.held.add(pattern)
        self._held_cache.clear()

    def unhold(self) -> set[str]:
        released, self.held = self.held, set()
        self._held_cache.clear()
        return released

    def is_held(self, channel: str) -> bool:
        held = self._held_cache.get(channel)
        if held is None:
            held = self._held_cache[channel] = any(fnmatchcase(channel, p) for p in self.held)
        return held

    def holding(self, channel: str) -> list[str]:
        """The hold patterns that match ``channel`` (what the user would lift)."""
        return [p for p in self.held if fnmatchcase(channel, p)]

    @property
    def queues(self) -> dict[str, deque[Message] | list[Message]]:
        """Each channel's messages in flight, oldest first.  Read, never change (the
        explorer's state fingerprint)."""
        return self._channels

    def channels(self) -> list[str]:
        """Channels that have carried a message and still exist (streams; RPCs in use)."""
        return list(self._channels)

    def get(self, msg_id: int) -> Message:
        msg = self.in_flight.get(msg_id)
        if msg is None:
            raise UnknownMessageError(
                f"message {msg_id!r} is not in flight"
                + (f" (in flight: {', '.join(map(str, self.in_flight))})" if self.in_flight
                   else " (nothing is in flight)"))
        head = self._channels[msg.channel][0]
        if head is not msg:
            raise NotDeliverableError(
                f"message {msg_id} waits behind #{head.msg_id} on FIFO channel "
                f"{msg.channel}; deliver #{head.msg_id} first")
        return msg

    def take(self, msg: Message) -> None:
        """Take ``msg``, the head of its channel, out of flight; the next in line becomes a head."""
        channel = msg.channel
        queue = self._channels[channel]
        del queue[0]
        heads = self.ordered_heads
        heads.remove(msg)
        if queue:
            insort(heads, queue[0], key=_by_id)
        elif not msg.batched:
            del self._channels[channel]  # RPC channels are used once
        del self.in_flight[msg.msg_id]

    def __len__(self) -> int:
        return len(self.in_flight)


_by_id = attrgetter("msg_id")  # a sort key, in C


class Policy:
    """Chooses the next message to deliver.  ``None`` means: hold everything."""

    name = "policy"
    #: Whether a blocking call may wait for this policy to deliver on its own.
    autonomous = True
    #: Whether the driver delivers everything in flight when a user call returns.
    drains = False
    #: Actor name -> kind (``client``, ``scheduler``, ``worker``), filled by the cluster.
    kinds: dict[str, str] | None = None
    #: A policy that never moves the clock may give the driver its next message in one
    #: call: ``next_of(network)`` returns ``next_message(force)``, the message to deliver
    #: (with nothing deliverable: the oldest held one when ``force``, else None).  The
    #: explorer's chooser does: a run asks once per delivery.
    next_of: Callable[[Network], Callable[[bool], Message | None]] | None = None

    def on_send(self, msg: Message, now_ns: int) -> None:
        """Called as the network accepts ``msg``: stamp whatever timing it needs."""

    def next(self, network: Network, now_ns: int) -> tuple[Message, int] | None:
        """The next message and the time it arrives, or ``None`` to hold."""
        raise NotImplementedError

    def user_delay_ns(self) -> int:
        """Simulated time a user's own code takes between two calls."""
        return 0


class Immediate(Policy):
    name = "immediate"
    drains = True  # nothing is ever left in flight between two user calls

    def next(self, network: Network, now_ns: int) -> tuple[Message, int] | None:
        heads = network.heads() if network.held else network.ordered_heads  # read in place
        if not heads:
            return None
        msg = heads[0]
        if msg.op in TIMERS and len(heads) > 1:
            # A timer (dask's periodic stealing, its memory manager, a cancel's poll) is not a
            # message: it fires once nothing else can move, as dask's clock would pass.
            msg = next((h for h in heads if h.op not in TIMERS), msg)
        return msg, now_ns

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.next is not Immediate.next and "next_of" not in cls.__dict__:
            cls.next_of = None  # type: ignore[assignment] # its own next(), through the driver's

    def next_of(self, network: Network) -> Callable[[bool], Message | None]:  # type: ignore[override]
        """The driver's next message in one call (immediate never moves the clock): what
        :meth:`next` picks, or with nothing deliverable the oldest held message when
        ``force`` (``Cluster.step``).  Every delivery asks: one call, not the driver's and
        the policy's."""

        def next_message(force: bool) -> Message | None:
            heads = network.heads() if network.held else network.ordered_heads
            if not heads:
                return network.oldest(held_too=True) if force else None
            msg = heads[0]
            if msg.op in TIMERS and len(heads) > 1:  # as in next(): a timer fires last
                msg = next((h for h in heads if h.op not in TIMERS), msg)
            return msg

        return next_message

    def next_in_task(self, network: Network, now_ns: int) -> tuple[Message, int] | None:
        """The next delivery while a task waits inside its run (a lock, an RPC, a result).

        On dask the other tasks run on threads of their own, side by side with the waiter:
        what it waits for (an RPC's reply) comes whether they have started or not.  Stepped,
        a run is nested inside the delivery that starts it, so a task started here would
        have to end before the waiter goes on — and one that waits for what the waiter
        holds (the same ``Lock``) never could.  So the waiter's own messages go first, and
        a task starts only when nothing else moves (its result may be what is awaited).
        """
        heads = network.heads() if network.held else network.ordered_heads
        for msg in heads:
            if msg.op != EXECUTE and msg.op != BALANCE:
                return msg, now_ns
        return self.next(network, now_ns)


class Manual(Policy):
    name = "manual"
    autonomous = False

    def next(self, network: Network, now_ns: int) -> tuple[Message, int] | None:
        return None


class Chooser(Policy):
    """Delegates the choice among deliverable heads to ``choose`` (the explorer's hook)."""

    name = "chooser"

    def __init__(self, choose: Callable[[Sequence[Message]], Message]):
        self.choose = choose

    def next(self, network: Network, now_ns: int) -> tuple[Message, int] | None:
        heads = network.heads()  # oldest first
        if not heads:
            return None
        return self.choose(heads), now_ns


@dataclass(slots=True)
class _Stream:
    flush_at: int = -1  # when the batch being filled goes out
    transit: int = 0
    last_ready: int = 0


class RandomLatency(Policy):
    """Seeded latencies with dask's batching: reproducible races.

    A batched stream sends its first message at once, then at most one batch
    per interval (as ``BatchedSend`` does); every batch takes a random transit
    time, and FIFO is kept.  An RPC takes ``rpc_ns`` ± jitter.  User code
    between two client calls takes ``user_ns`` ± jitter of simulated time, so
    a loop of calls lets the batch deadline pass now and then, as on a real
    machine.
    """

    name = "random"

    def __init__(self, seed: int | None = 0, rpc_ns: tuple[int, int] = (100_000, 600_000),
                 transit_ns: tuple[int, int] = (50_000, 300_000),
                 user_ns: tuple[int, int] = (50_000, 1_500_000)):
        self.seed = seed
        self.rng = random.Random(seed)
        self.rpc_ns = rpc_ns
        self.transit_ns = transit_ns
        self.user_ns = user_ns
        self._streams: dict[str, _Stream] = {}
        self.ready: dict[int, int] = {}

    def on_send(self, msg: Message, now_ns: int) -> None:
        if msg.batched:
            st = self._streams.get(msg.channel)
            if st is None:
                st = self._streams[msg.channel] = _Stream()
            if now_ns > st.flush_at:  # the previous batch is gone: start a new one
                interval = batch_interval_ns(msg, self.kinds)
                st.flush_at = max(now_ns, st.flush_at + interval) if st.flush_at >= 0 else now_ns
                st.transit = self.rng.randint(*self.transit_ns)
            ready = max(st.flush_at + st.transit, st.last_ready)
            st.last_ready = ready
        elif msg.op == EXECUTE:
            ready = now_ns  # a free thread picks the task up at once: no wire to cross
        elif msg.op in TIMERS:
            # dask's periodic callback fires at some point of its interval.
            ready = now_ns + (int(msg.payload["after"] * 1e9) if msg.op == CANCEL_POLL  # a sleep
                              else self.rng.randint(0, TIMER_INTERVALS[msg.op]))
        else:
            ready = now_ns + self.rng.randint(*self.rpc_ns)
        self.ready[msg.msg_id] = ready

    def next(self, network: Network, now_ns: int) -> tuple[Message, int] | None:
        heads = network.heads()
        if not heads:
            return None
        ready = self.ready
        msg = min(heads, key=lambda h: (ready[h.msg_id], h.msg_id))
        return msg, max(now_ns, ready.pop(msg.msg_id))

    def due_ns(self, network: Network) -> int | None:
        """When the earliest deliverable message arrives (for the live driver's sleep)."""
        heads = network.heads()
        return min(self.ready[h.msg_id] for h in heads) if heads else None

    def user_delay_ns(self) -> int:
        return self.rng.randint(*self.user_ns)


POLICIES = ("immediate", "random", "manual", "live")


def make_policy(network: str | Policy, seed: int | None) -> Policy:
    if isinstance(network, Policy):
        return network
    if network == "immediate":
        return Immediate()
    if network == "manual":
        return Manual()
    if network in ("random", "live"):
        return RandomLatency(seed)
    raise ProtocolError(f"unknown network {network!r}; choose one of {', '.join(POLICIES)}")
