"""The explorer's random runs: their numbers, their choosers, and the memo of the orders run.

A sampled run is the draw ``i`` of a search's random phase.  Its choices come from
:class:`Numbers` of its own — so any process can make any draw, and a share of the phase
(``explore.py``'s ``_Share``) gives exactly what one process gives — and from what it is
shown at each decision: the channels of the deliverable heads, nothing else.  Because of
that, an order can be followed down a :class:`Memo` of the orders run before without a
cluster: the same numbers on the same channels make the same picks.

Nothing here runs a cluster or knows a message: the choosers take a tuple of channel names
and return the index of the head to deliver.
"""

from __future__ import annotations

import hashlib
import itertools
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: A chooser: the channels of the deliverable heads, oldest first -> the index to deliver.
Pick = Callable[[tuple[str, ...]], int]

_WORDS = struct.Struct("<8Q").unpack
_FLOAT = 2.0 ** -53


class Numbers:
    """Draw ``i``'s random numbers: BLAKE2b of ``"{seed}:{i}"`` (then ``…:{block}``), eight
    64-bit words a hash.

    Not a seeded ``random.Random`` per draw, as before: seeding the Mersenne Twister costs
    5 µs (it fills 624 words), a third of following an order down the memo — and a share
    follows every draw of the phase at least as far as its first picks (see
    :data:`SPLIT_PICKS`).  A hash costs 0.8 µs and still gives each draw numbers of its own.
    """

    __slots__ = ("_key", "_words", "_next", "_block")

    def __init__(self, seed: int, i: int):
        self._key = f"{seed}:{i}"
        self._words = _WORDS(hashlib.blake2b(self._key.encode(), digest_size=64).digest())
        self._next = 0
        self._block = 0

    def word(self) -> int:
        """The next 64 random bits."""
        k = self._next
        if k == 8:
            self._block += 1
            self._words = _WORDS(hashlib.blake2b(f"{self._key}:{self._block}".encode(),
                                                 digest_size=64).digest())
            k = 0
        self._next = k + 1
        return self._words[k]

    def random(self) -> float:
        """A float in [0, 1), of 53 random bits (as ``random.random``)."""
        return (self.word() >> 11) * _FLOAT

    def below(self, n: int) -> int:
        """An int in ``range(n)`` (Lemire's multiply-shift: a bias below n / 2**64)."""
        return (self.word() * n) >> 64

    def sample(self, n: int, k: int) -> list[int]:
        """``k`` distinct ints of ``range(n)``, in the order drawn (each drawn again while
        it is one drawn already: ``k`` is a PCT depth, a few, and ``n`` a run's length)."""
        if k > n:
            raise ValueError(f"cannot draw {k} distinct ints below {n}")
        drawn: list[int] = []
        while len(drawn) < k:
            v = self.below(n)
            if v not in drawn:
                drawn.append(v)
        return drawn


def uniform(numbers: Numbers) -> Pick:
    """A uniform pick among the heads at every decision."""
    below = numbers.below

    def pick(channels: tuple[str, ...]) -> int:
        return below(len(channels))

    return pick


def pct(numbers: Numbers, depth: int, length: int) -> Pick:
    """A PCT chooser (Burckhardt et al., "A randomized scheduler with probabilistic guarantees
    of finding bugs", ASPLOS 2010; Coyote's and Shuttle's ``PCT``), over channels: each channel
    gets a random priority when its first message is deliverable, and the deliverable head of
    the highest-priority channel goes; at ``depth - 1`` decisions drawn among the first
    ``length`` (the in-order run's count), the channel about to go drops below every other,
    to the 1st … (d-1)th lowest priority.  Past ``2 * length + 20`` decisions the picks are
    uniform (a fixed priority could keep a loop going that a fair order leaves).

    The depth it covers: an order bug of depth ``d`` — one that ``d`` ordering constraints
    between messages make happen — is found by one run with probability at least
    ``1 / (n * k ** (d - 1))``, n the channels used and k the decisions of a run, whatever
    the scenario's size; uniform picks give no such bound (their chance of a given order of
    k decisions falls with every decision).
    """
    points = numbers.sample(max(length, depth - 1), depth - 1) if depth > 1 else []
    lows = {point: float(j + 1) for j, point in enumerate(points)}
    priority = _Priorities(float(depth), numbers.random)
    highest = priority.__getitem__  # a channel met first gets its priority as max reads it
    below = numbers.below
    fair = 2 * length + 20
    made = itertools.count()

    def pick(channels: tuple[str, ...]) -> int:
        i = next(made)
        if i >= fair:
            # Past the in-order run's length twice over: fair (uniform) picks, as Coyote's PCT
            # turns fair after its unfair steps — fixed priorities could keep a loop going
            # that any fair order leaves.
            return below(len(channels))
        chosen = channels.index(max(channels, key=highest))
        if i in lows:
            priority[channels[chosen]] = lows[i]
            chosen = channels.index(max(channels, key=highest))
        return chosen

    return pick


class _Priorities(dict):
    """PCT's priorities by channel: a channel gets ``top`` plus a random fraction when first
    read — in the order ``max`` reads the heads, oldest first, as PCT gives a channel its
    priority when its first message is deliverable."""

    __slots__ = ("top", "random")

    def __init__(self, top: float, random: Callable[[], float]):
        super().__init__()
        self.top, self.random = top, random

    def __missing__(self, channel: str) -> float:
        p = self[channel] = self.top + self.random()
        return p


def picker(numbers: Numbers, i: int, pct_depth: tuple[int, int] | None) -> Pick:
    """Draw ``i``'s chooser: PCT with 1, 2 … ``depth`` priority change points in turn
    (``pct_depth`` is ``(depth, length)``), or uniform picks (None)."""
    if pct_depth is None:
        return uniform(numbers)
    depth, length = pct_depth
    return pct(numbers, 1 + i % depth, length)


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

#: How many picks of an order say which share counts it (see :func:`owner`): enough that
#: the orders fall evenly between shares (#8576 under legacy: 1,019 / 1,030 of 2,049 PCT
#: orders at 6, 760 / 1,289 at 3), few enough that a share meets the other shares' prefixes
#: in a few dozen short runs (132 prefixes of 6 picks there).
SPLIT_PICKS = 6


def owner(picks: Sequence[int], shares: int) -> int:
    """The share that counts an order: by its first :data:`SPLIT_PICKS` picks (all of them,
    for a shorter order) — ``hash`` of a tuple of ints, the same in every process whatever
    its hash seed."""
    return hash(tuple(picks[:SPLIT_PICKS])) % shares


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

    A node is ``[channels at the decision (None: not known, or a leaf), {pick: node}, the
    leaf's Seen (None: not a leaf)]``.
    """

    __slots__ = ("root", "nodes", "on", "_channels", "_seen")

    def __init__(self) -> None:
        self.root: list = [None, {}, None]
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
        node = self.root
        for channels, pick in decisions:
            channels = self._channels.setdefault(channels, channels)
            if node[0] is None:
                if node[2] is not None:
                    self.on = False  # a leaf here before: the scenario is not deterministic
                    return
                node[0] = channels
            elif node[0] is not channels:
                self.on = False
                return
            child = node[1].get(pick)
            if child is None:
                child = node[1][pick] = [None, {}, None]
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
        node, seen = self.root, []
        for pick in picks:
            if node is None or node[0] is None:
                break
            seen.append(node[0])
            node = node[1].get(pick)
        return seen
