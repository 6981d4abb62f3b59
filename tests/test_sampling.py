"""The random runs' draws (``jupyter_refs/sampling.py``): a walk down the memo picks as a live
run picks, and each draw's numbers are its own."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from jupyter_refs.sampling import SPLIT_PICKS, Draw, Memo, Owners, Seen

CHANNELS = [f"c{j}" for j in range(5)]


def _decisions(rng: random.Random, n: int) -> list[tuple[str, ...]]:
    """``n`` decisions' channels: two to four heads each, from five channels."""
    return [tuple(rng.sample(CHANNELS, rng.randint(2, 4))) for _ in range(n)]


@pytest.mark.parametrize("pct", [(3, 12), (1, 4), None])
def test_a_walk_down_the_memo_picks_as_a_live_run_picks(pct):
    """The memo rests on this: followed down a tree of remembered channels, a draw makes the
    picks its live run made on the same channels — PCT's priorities, change points and fair
    picks past twice the run's length (60 decisions here) included."""
    rng = random.Random(4)
    for i in range(300):
        channels = _decisions(rng, rng.randint(1, 60))
        live = Draw(7, i, pct)
        picks = [live.pick(c) for c in channels]
        assert all(0 <= p < len(c) for p, c in zip(picks, channels, strict=True))
        memo = Memo()
        memo.add(list(zip(channels, picks, strict=True)), Seen(None, 0))
        walked: list[int] = []
        leaf = Draw(7, i, pct).follow(memo.root, walked, 10**9)
        assert walked == picks and leaf is not None and leaf[2] == Seen(None, 0)
        # Stopped at its first picks and followed on, the same picks again.
        first: list[int] = []
        draw = Draw(7, i, pct)
        node = draw.follow(memo.root, first, SPLIT_PICKS)
        assert first == picks[:SPLIT_PICKS]
        if node is not None:
            draw.follow(node, first, 10**9)
        assert first == picks


def test_pct_at_depth_one_delivers_the_highest_channel_first():
    """Depth 1 (no change point): one priority per channel for the whole run, so between the
    same two channels a draw always picks the same one — and over many draws each wins about
    half the time."""
    wins = 0
    for i in range(0, 600, 3):  # i % 3 == 0: depth 1
        draw = Draw(1, i, (3, 10))
        picks = {draw.pick(("a", "b")) for _ in range(10)}
        assert len(picks) == 1
        wins += picks.pop() == 0
    assert 60 < wins < 140


def test_each_draw_has_numbers_of_its_own_and_the_same_in_any_process():
    """The numbers are a hash of the seed and the draw: the same draw picks alike wherever it
    is made; another draw, or another seed, differs."""
    channels = [tuple(CHANNELS[:3])] * 30

    def picks(seed: int, i: int) -> list[int]:
        draw = Draw(seed, i, None)
        return [draw.pick(c) for c in channels]

    # Made again in another interpreter, under another hash seed: the same picks.
    elsewhere = subprocess.run(
        [sys.executable, "-c", "from jupyter_refs.sampling import Draw; d = Draw(0, 5, None); "
         f"print([d.pick(c) for c in {channels!r}])"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "7"})
    assert elsewhere.stdout.strip() == str(picks(0, 5))
    assert len({tuple(picks(0, i)) for i in range(20)} | {tuple(picks(1, 5))}) == 21


def test_an_order_belongs_to_the_share_its_first_picks_were_dealt_to():
    """Orders that share their first picks go to one share; shorter orders by all their
    picks; shares told the same draws in the same order deal alike; and the prefixes drawn
    as unevenly as PCT draws them, the shares' loads stay closer than a hash of the prefix
    leaves them."""
    rng = random.Random(2)
    orders = [[rng.randrange(3) for _ in range(SPLIT_PICKS + rng.randrange(3))]
              for _ in range(60)] + [[1, 0], [2]]
    drawn = rng.choices(orders, [rng.paretovariate(1.5) for _ in orders], k=3000)
    one, two = Owners(2), Owners(2)
    dealt = [one.took(order) for order in drawn]
    assert dealt == [two.took(order) for order in drawn]
    by_prefix: dict = {}
    for order, share in zip(drawn, dealt):
        assert by_prefix.setdefault(tuple(order[:SPLIT_PICKS]), share) == share
        assert one.of(order) == share
    assert one.of([1, 0, 2, 0, 0, 1, 5, 5]) == one.of([1, 0, 2, 0, 0, 1])
    assert Owners(2, 3).of([1, 0, 2, 7]) == 0  # a prefix not met yet: the least load's
