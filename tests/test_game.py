"""Be the scheduler (issue 42): a goal judged from the trace, played with the timeline's buttons.

The student is the network: they deliver the messages in flight one by one, and the game says
when the checks flag the goal's violation, or when the budget is spent (with a restart).  Here a
scripted student presses the widget's own buttons, with no front end.
"""

from __future__ import annotations

import pytest

from jupyter_refs import course
from jupyter_refs.views.game import Goal, judge

#: The shortest order that makes form A of #8576 (the re-scatter wins, the release comes last).
FORM_A = ["scatter", "update-data", "update-data-reply", "scatter-reply", "client-releases-keys"]


def rescatter(client):
    """Lesson 1's opening: x held and in memory, then dropped and scattered again."""
    x = client.scatter(123)
    client.cluster.run_until_idle()
    del x
    return client.scatter(123)


def press(button):
    """A click, as the front end sends it."""
    button._handle_msg({"content": {"data": {"method": "custom", "content": {"event": "click"}}},
                        "buffers": []})


def deliver(game, op):
    """Select the in-flight message of ``op`` and press 'deliver selected'."""
    timeline = game.timeline
    [msg_id] = [m.msg_id for m in game.cluster.in_flight if m.op == op][:1]
    timeline._in_flight.value = msg_id
    press(timeline._deliver_selected_button)


@pytest.fixture
def game():
    g = course.goal(rescatter, check="dangling_future", within=6)
    yield g
    g.close()


def test_the_shortest_order_wins(game):
    assert game.verdict.outcome == "playing" and game.verdict.deliveries == 0
    assert "0 of 6 deliveries used" in game._status.value
    for op in FORM_A:
        deliver(game, op)
    verdict = game.verdict
    assert (verdict.outcome, verdict.deliveries, verdict.reached_at) == ("won", 5, 5)
    assert "Goal reached in 5 deliveries (budget 6)" in game._status.value
    assert game.timeline._deliver_next_button.disabled  # the game is over


def test_the_in_order_run_spends_the_budget_and_restarts(game):
    for _ in range(6):
        press(game.timeline._deliver_next_button)  # oldest first: the release wins, no loss
    verdict = game.verdict
    assert verdict.outcome == "spent" and verdict.reached_at is None
    assert "Out of deliveries: 6 of 6 used" in game._status.value
    first = game.cluster
    press(game._restart)
    assert game.cluster is not first and first.closed and game.rounds == 2
    assert game.verdict.outcome == "playing" and len(game.cluster.in_flight) == 2
    assert not game.timeline._deliver_next_button.disabled


def test_a_refused_delivery_is_not_counted(game):
    deliver(game, "scatter")
    deliver(game, "update-data")
    # The scheduler's stream to the worker is FIFO: a later message cannot go first.
    assert game.verdict.deliveries == 2


def test_the_ghost_task_game():
    from jupyter_refs.zoo import Box, keep

    def travel(client):
        x = client.scatter(41)
        client.cluster.run_until_idle()
        g = client.submit(keep, Box([x]))
        del x
        return g

    game = course.goal(travel, check="ghost_task", within=6, protocol="dask-2024.7")
    try:
        for op in ("update-graph", "client-releases-keys", "compute-task", "execute",
                   "client-desires-keys"):
            deliver(game, op)
        assert game.verdict.outcome == "won" and game.verdict.reached_at == 5
    finally:
        game.close()


def test_the_fire_and_forget_game():
    """Lesson 6: the result overtakes fire_and_forget's desire (8 deliveries at the least: the
    desire of a key in memory tells the client again, as dask's report_on_key does)."""
    from jupyter_refs import fire_and_forget
    from jupyter_refs.zoo import inc

    def fire_once(client):
        f = client.submit(inc, 1, pure=False)
        fire_and_forget(f)
        del f

    game = course.goal(fire_once, check="leaked_key", within=8)
    try:
        for op in ("update-graph", "compute-task", "execute", "task-finished",
                   "client-desires-keys", "client-releases-keys", "key-in-memory",
                   "key-in-memory"):
            deliver(game, op)
        assert game.verdict.outcome == "won" and game.verdict.reached_at == 8
    finally:
        game.close()


def test_a_game_needs_a_manual_network():
    from jupyter_refs import Cluster
    from jupyter_refs.views.game import Game

    def start():
        cluster = Cluster(protocol="dask", network="immediate")
        return cluster, cluster.client()

    with pytest.raises(ValueError, match="needs a manual network"):
        Game(Goal("dangling_future", within=3), start)


def test_judge_reads_only_the_trace():
    from jupyter_refs.trace import Event

    def ev(seq, kind, data=()):
        return Event(seq, 0, "scheduler", "main", kind, None, None, None, None, None, data)

    goal = Goal("dangling_future", within=2)
    received = [ev(i, "msg.received") for i in range(3)]
    assert judge(goal, received[:1]).outcome == "playing"
    assert judge(goal, received[:2]).outcome == "spent"
    from jupyter_refs.events import FIELDS

    names = FIELDS["violation"]
    data = tuple({"name": "dangling_future", "explanation": "gone"}.get(f) for f in names)
    late = judge(goal, [*received, ev(3, "violation", data)])
    assert (late.outcome, late.reached_at) == ("spent", 3)
    won = judge(goal, [*received[:2], ev(2, "violation", data)])
    assert (won.outcome, won.reached_at, won.explanation) == ("won", 2, "gone")
    with pytest.raises(ValueError, match="positive number"):
        Goal("dangling_future", within=0)


def test_be_the_thread_scheduler_a_scripted_student_wins_inside_the_read_then_write():
    """Lesson 3's game: a switch between A's read and A's write wins id_collision; before the
    read or after the write does not; under dask no switch point wins (no counter)."""
    from jupyter_refs.switch_game import SwitchGame

    game = SwitchGame("racy-ids")
    lines = [text for _, text in game.lines]
    assert lines[0] == "value = self._next" and lines[-1] == "return value"
    wins = {n: game.play(n).collision for n in range(len(lines) + 1)}
    write = lines.index("self._next = value + 1") + 1
    assert wins == {n: 1 <= n < write for n in wins}, wins
    assert game.won and "handed out twice" in next(t for t in game.tries if t.collision).explanation
    won = game.play(1)
    assert won.keys[0] == won.keys[1] and won.allocated
    dask = SwitchGame("dask")
    assert not any(dask.play(n).collision for n in range(len(dask.lines) + 1))
    assert not dask.won and not dask.tries[0].allocated
    with pytest.raises(ValueError, match="pick a line"):
        game.play(len(lines) + 1)


def test_be_the_thread_scheduler_two_switches_a_collision_needs_both_reads_before_either_write():
    """Issue 42: with B switched out in turn, A's switch point alone does not decide the game.
    A switch inside A's window loses when B is switched out before its read; a switch before
    A's read wins when B is switched out between its read and its write.  Both reads before
    either write: the whole rule, checked over every pair.  Under atomic-ids (Julia's fix) the
    allocator runs and no pair wins."""
    from jupyter_refs.switch_game import SwitchGame

    game = SwitchGame("racy-ids")
    lines = [text for _, text in game.lines]
    read, write = lines.index("value = self._next") + 1, lines.index("self._next = value + 1") + 1
    n = len(lines)
    grid = {(a, b): game.play(a, b).collision for a in range(n + 1) for b in range(n + 1)}
    # A's read runs before B's write, and B's read before A's write:
    expected = {(a, b): (a >= read or b < write) and (b >= read and a < write) for a, b in grid}
    assert grid == expected, grid
    assert grid[(1, 1)] and not grid[(1, 0)] and grid[(0, 2)] and not grid[(0, 3)]
    assert 0 < sum(grid.values()) < len(grid)
    assert game.all_goals and "goals: 3 of 3" in game.goals()
    fresh = SwitchGame("racy-ids")
    fresh.play(1, 1)
    assert "goals: 1 of 3" in fresh.goals() and not fresh.all_goals
    atomic = SwitchGame("atomic-ids")
    assert [text for _, text in atomic.lines][0] == "value = next(self._count)"
    tries = [atomic.play(a, b) for a in range(len(atomic.lines) + 1)
             for b in (None, *range(len(atomic.lines) + 1))]
    assert all(t.allocated and not t.collision for t in tries)
    assert "A after 1, B after 0: -" in game.tried()
    with pytest.raises(ValueError, match="for B"):
        game.play(1, n + 1)
