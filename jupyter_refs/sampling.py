"""The explorer's random runs: each draw's numbers and chooser, and the memo of the orders run.

A sampled run is the draw ``i`` of a search's random phase.  Its choices come from numbers
of its own (:class:`Draw`) — so any process can make any draw, and a share of the phase
(``explore.py``'s ``_Share``) gives exactly what one process gives — and from what it is
shown at each decision: the channels of the deliverable heads, nothing else.  Because of
that, an order can be followed down a :class:`Memo` of the orders run before without a
cluster: the same numbers on the same channels make the same picks.

Nothing here runs a cluster or knows a message: a decision is a tuple of channel names, and
a pick the index of the head to deliver.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass

_WORDS = struct.Struct("<16I").unpack
_FRACTION = 2.0 ** -32
_BLAKE2B = hashlib.blake2b


def _words(key: bytes) -> tuple[int, ...]:
    """Sixteen 32-bit random words: BLAKE2b of ``key``."""
    return _WORDS(_BLAKE2B(key, digest_size=64).digest())


@functools.cache
def _no_lows(fair: int) -> list[None]:
    """A draw's change points by decision when it has none (PCT's depth 1): read only, so
    one list serves every such draw of a phase."""
    return [None] * fair


class Draw:
    """Draw ``i`` of a random phase: its numbers and its chooser, PCT's or uniform.

    **Numbers.**  BLAKE2b of ``"{seed}:{i}"`` (then ``…:{block}``), sixteen 32-bit words a
    hash — not a seeded ``random.Random`` per draw: seeding the Mersenne Twister costs 5 µs
    (it fills 624 words), and a share follows every draw of the phase at least as far as
    its first picks (see :data:`SPLIT_PICKS`).  A hash costs 0.8 µs and still gives each
    draw numbers of its own, whichever process makes it.

    **PCT** (Burckhardt et al., "A randomized scheduler with probabilistic guarantees of
    finding bugs", ASPLOS 2010; Coyote's and Shuttle's ``PCT``), over channels: each channel
    gets a random priority when its first message is deliverable, and the deliverable head
    of the highest-priority channel goes; at ``depth - 1`` decisions drawn among the first
    ``length`` (the in-order run's count), the channel about to go drops below every other,
    to the 1st … (d-1)th lowest priority.  Past ``2 * length + 20`` decisions the picks are
    uniform (a fixed priority could keep a loop going that a fair order leaves, as Coyote's
    PCT turns fair after its unfair steps).  The depth it covers: an order bug of depth
    ``d`` — one that ``d`` ordering constraints between messages make happen — is found by
    one run with probability at least ``1 / (n * k ** (d - 1))``, n the channels used and k
    the decisions of a run, whatever the scenario's size; uniform picks give no such bound
    (their chance of a given order of k decisions falls with every decision).
    **Uniform** picks are PCT's fair picks from the first decision.

    One decision rule, :meth:`follow`, serves both a walk down a :class:`Memo` and a live
    run (:meth:`pick`): most draws are orders drawn before, followed in the memo only, so
    the rule is written out in the loop (a call per decision cost a third of a walk).
    """

    __slots__ = ("_key", "_words", "_next", "_block", "made", "_fair", "_top", "_lows",
                 "_priority")

    def __init__(self, seed: int, i: int, pct: tuple[int, int] | None):
        key = self._key = b"%d:%d" % (seed, i)
        words = self._words = _WORDS(_BLAKE2B(key, digest_size=64).digest())
        self._block = 0
        #: Decisions made so far.
        self.made = 0
        self._priority: dict[str, float] = {}
        if pct is None:
            self._next, self._fair, self._top, self._lows = 0, 0, 0.0, []
            return
        depth, length = pct
        depth = 1 + i % depth  # 1, 2 … depth change points in turn, draw after draw
        fair = self._fair = 2 * length + 20
        self._top = float(depth)
        if depth == 1:  # no change point: one list of Nones for every such draw
            self._next, self._lows = 0, _no_lows(fair)
            return
        #: By decision (below ``fair``): the priority its channel drops to, if it is a change
        #: point (a list: read at every decision, an index is cheaper than a dict's get).
        lows: list[float | None] = [None] * fair
        self._lows = lows
        span, points, k = max(length, depth - 1), [], 0
        while len(points) < depth - 1:  # the change points, each drawn again if met
            if k == 16:
                words, k = self._more(), 0
            point = (words[k] * span) >> 32
            k += 1
            if point not in points:
                points.append(point)
                lows[point] = float(len(points))
        self._words, self._next = words, k

    def _more(self) -> tuple[int, ...]:
        self._block += 1
        return _words(b"%s:%d" % (self._key, self._block))

    def follow(self, node: list | tuple, picks: list[int], limit: int) -> list | tuple | None:
        """Choose down a memo from ``node`` (see :class:`Memo`), each pick appended to
        ``picks``, until ``limit`` decisions are made or a node whose channels are not
        known (a leaf, or a run stopped there): that node, or None once a pick has no
        child there.  A channel gets its priority at the node where the path first meets
        it (the node's ``new``: the memo is a tree, so each node's path is one)."""
        priority, lows, top, fair = self._priority, self._lows, self._top, self._fair
        words, k, n = self._words, self._next, self.made
        try:
            while n < limit:
                channels = node[0]
                if channels is None:
                    return node
                if n >= fair:
                    if k == 16:
                        words, k = self._more(), 0
                    chosen = (words[k] * len(channels)) >> 32
                    k += 1
                else:
                    for channel in node[3]:  # first deliverable now: its priority
                        if k == 16:
                            words, k = self._more(), 0
                        priority[channel] = top + words[k] * _FRACTION
                        k += 1
                    if len(channels) == 2:  # most decisions: max's pick, without its call
                        first, second = channels
                        chosen = 0 if priority[first] >= priority[second] else 1
                    elif len(channels) == 3:  # the rest nearly all: the first highest
                        first, second, third = channels
                        a, b, c = priority[first], priority[second], priority[third]
                        chosen = (0 if a >= c else 2) if a >= b else (1 if b >= c else 2)
                    else:
                        chosen = channels.index(max(channels, key=priority.__getitem__))
                    low = lows[n]
                    if low is not None:
                        priority[channels[chosen]] = low
                        chosen = channels.index(max(channels, key=priority.__getitem__))
                n += 1
                picks.append(chosen)
                node = node[1][chosen]
                if node is None:
                    return None
            return node
        finally:
            self._words, self._next, self.made = words, k, n

    def pick(self, channels: tuple[str, ...]) -> int:
        """A live run's decision on the heads' ``channels``: the pick :meth:`follow` makes."""
        chosen: list[int] = []
        new = tuple([c for c in channels if c not in self._priority])
        self.follow((channels, (None,) * len(channels), None, new), chosen, self.made + 1)
        return chosen[0]


@dataclass(frozen=True, slots=True)
class Seen:
    """A sampled run whose order was run before: what counting it needs of its verdict."""

    #: Its failure group (None: it passed).
    group: tuple | None
    #: 1 if it passed while raising as the in-order run did (``Tally.same``), else 0.
    same: int
    #: Its place in its share's failing orders; -1: it passed, or it is not this share's.
    order: int = -1


#: Nodes a memo keeps at most (a node is a decision of some sampled run, about 200 bytes):
#: past it, orders not met yet are run and not remembered.
MEMO_NODES = 50_000

#: How many picks of an order say which share counts it (see :class:`Owners`): enough that
#: a scenario's orders fall into many prefixes to deal (#8576: 132 among its 2,036 PCT
#: orders), few enough that a share meets the other shares' prefixes in a few dozen short
#: runs.  More picks stop more runs there: #5379 (an in-order run of 26 decisions) split
#: by 10 left each share 1.68x one share's CPU time at best, by 6 1.78x (medians of two).
SPLIT_PICKS = 6


#: What a prefix met for the first time weighs in a share's load (:class:`Owners`), in draws.
NEW_PREFIX_DRAWS = 20


class Owners:
    """Which share counts each order: its *prefix*, its first ``split`` picks (all of them,
    for a shorter order), goes to the share with the least load when the prefix is first
    met (the lowest-numbered of those), and every later order with that prefix with it.
    A share's load is the draws dealt to it so far, and :data:`NEW_PREFIX_DRAWS` more for
    each prefix.

    Every share is given every draw, in order, and tells :meth:`took` each draw's prefix
    once it is known, so every share deals alike with no message between them.  The load
    stands in for what only the owner knows, the orders a prefix will bring to run: a new
    prefix brings some at once, its later draws fewer and fewer as PCT draws its orders
    again.  Dealt by a hash of the prefix instead, the same few heavy prefixes fell to one
    share whatever the seed: of the zoo's 14 races with many orders (4 seeds of 4,000 draws
    each, work counted as a run per new order and 1/60 of one per order drawn again), the
    busier of two shares had 1.44x the even share on #5379, 1.36x on #7583, 1.22x on
    #6016, and 1.14x on average; dealt by the load, 1.09x, 1.05x, 1.03x, and 1.05x on
    average (#8576: 1.02x hashed, 1.04x by the load; at 20,000 draws 1.03x and 1.02x).
    """

    __slots__ = ("split", "_of", "_load")

    def __init__(self, shares: int, split: int = SPLIT_PICKS):
        #: How many first picks make a prefix.
        self.split = split
        #: Each prefix met so far: its share.
        self._of: dict[tuple[int, ...], int] = {}
        self._load = [0] * shares

    def of(self, picks: Sequence[int]) -> int:
        """The share that counts an order beginning with ``picks`` (its prefix, or more):
        the share its prefix went to, or would go to now."""
        share = self._of.get(tuple(picks[:self.split]))
        return self._least() if share is None else share

    def took(self, picks: Sequence[int]) -> int:
        """A draw whose order begins with ``picks`` (its prefix, or more) dealt: its share."""
        prefix = tuple(picks[:self.split])
        share = self._of.get(prefix)
        if share is None:
            share = self._of[prefix] = self._least()
            self._load[share] += NEW_PREFIX_DRAWS
        self._load[share] += 1
        return share

    def _least(self) -> int:
        """The share a prefix met now goes to: the least loaded, the lowest-numbered of those."""
        load = self._load
        return load.index(min(load))


class Memo:
    """The orders a share has run, as a tree of their decisions, so that an order drawn
    again is counted without running it again.

    A run is determined by its picks (what ``replay`` rests on), and a sampled run's
    chooser draws each pick from its numbers and the channels it is shown, nothing else.
    So each node keeps the channels at that decision and, per pick made there, the next
    node; a leaf keeps the run's verdict (:class:`Seen`); a run stopped early (another
    share's order) leaves a node whose channels are not known yet.  A scenario whose calls
    do not answer the same way under the same order would break replay already; a run of
    it that disagrees with the tree turns the memo off.

    A node is ``[channels at the decision (None: not known, or a leaf), the node after each
    pick there (None: none yet), the leaf's Seen (None: not a leaf), the channels its path
    meets first there]``.
    """

    __slots__ = ("root", "nodes", "on", "_channels", "_seen")

    def __init__(self) -> None:
        self.root: list = [None, None, None, ()]
        self.nodes = 0
        self.on = True
        #: The channel tuples and the verdicts met, each kept once: most nodes share a few.
        self._channels: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._seen: dict[Seen, Seen] = {}

    def add(self, decisions: Sequence[tuple[tuple[str, ...], int]], seen: Seen | None) -> None:
        """A run's decisions, each ``(channels, pick)``, and its verdict at their end (None:
        the run was stopped there, and what follows is not known)."""
        if not self.on or self.nodes >= MEMO_NODES:
            return
        node, met = self.root, set()
        for channels, pick in decisions:
            channels = self._channels.setdefault(channels, channels)
            if node[0] is None:
                if node[2] is not None:
                    self.on = False  # a leaf here before: the scenario is not deterministic
                    return
                node[0], node[1] = channels, [None] * len(channels)
                node[3] = tuple([c for c in channels if c not in met])
            elif node[0] is not channels:
                self.on = False
                return
            met.update(channels)
            child = node[1][pick]
            if child is None:
                child = node[1][pick] = [None, None, None, ()]
                self.nodes += 1
            node = child
        if seen is None:
            return
        if node[0] is not None or (node[2] is not None and node[2] != seen):
            self.on = False  # a run went on past here before, or ended otherwise
            return
        node[2] = self._seen.setdefault(seen, seen)

    def channels(self, picks: Sequence[int]) -> list[tuple[str, ...]]:
        """The channels at each decision of ``picks``, followed from the root (as far as
        the memo knows them)."""
        node, met = self.root, []
        for pick in picks:
            if node is None or node[0] is None:
                break
            met.append(node[0])
            node = node[1][pick]
        return met
