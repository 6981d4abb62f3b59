"""Be the scheduler (issue 42): a goal judged from the trace, played with the timeline's buttons.

The student is the network: they deliver the messages in flight one by one, and the game says
when the checks flag the goal's violation, or when the budget is spent (with a restart).  Here a
scripted student presses the widget's own buttons, with no front end.
"""

from __future__ import annotations

import re

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

    # Lesson 2's budget (the third review): 5, so a detour through free-keys loses
    game = course.goal(travel, check="ghost_task", within=5, protocol="dask-2024.7")
    try:
        for op in GHOST:
            deliver(game, op)
        assert game.verdict.outcome == "won" and game.verdict.reached_at == 5
        # the win ends at the broken invariant; 02-3 asks the consequence (the dropped
        # connection), which the check's own explanation still says
        said = game.status
        assert said.rstrip().endswith("Nothing can compute this task."), said
        assert "drops the connection" not in said and "assertion" not in said
        [flagged] = [v for v in game.cluster.violations if v.name == "ghost_task"]
        assert "the scheduler drops the connection of the client that caused it" in flagged.explanation
        game.restart()  # a detour: the free-keys delivered on the way
        for op in (*GHOST[:3], "free-keys", *GHOST[3:]):
            if game.verdict.outcome == "playing":
                game.deliver(op)
        assert (game.verdict.outcome, game.verdict.reached_at, game.deliveries) == ("spent", None, 5)
    finally:
        game.close()


#: Lesson 2's shortest order: the owner's release first, then the task, then its desire.
GHOST = ("update-graph", "client-releases-keys", "compute-task", "execute", "client-desires-keys")


@pytest.mark.parametrize("order", [
    FORM_A,  # the release last: the scheduler forgets a key the client holds finished
    ["scatter", "update-data", "update-data-reply", "client-releases-keys", "scatter-reply"],
], ids=["forgotten-while-finished", "finished-after-forgotten"])
def test_the_win_does_not_answer_the_next_prediction(game, order):
    """Lesson 1's win message says the scheduler forgot the key and stops there: 01-1 asks
    what the next computation on x does (cancelled as lost data), 01-2 how x ends."""
    for op in order:
        deliver(game, op)
    said = game.status
    assert game.verdict.outcome == "won" and "forgot" in said, said
    assert "lost data" not in said and "next computation" not in said and "cancelled" not in said
    assert said.rstrip().endswith((".", "still says finished.")), said
    flagged = [v.explanation for v in game.cluster.violations if v.name == "dangling_future"]
    if order != FORM_A:  # the check itself still says what comes next
        assert any("cancelled as lost data" in e for e in flagged), flagged


def test_cause_only_cuts_at_the_first_consequence():
    from jupyter_refs.checks import CONSEQUENCES, cause_only

    for tail in CONSEQUENCES:
        assert cause_only("It broke." + tail + " More.") == "It broke."
    assert cause_only("It broke.") == "It broke."


def fire_once(client):
    """Lesson 6's game: submit a task, fire and forget it, drop the future."""
    from jupyter_refs import fire_and_forget
    from jupyter_refs.zoo import inc

    f = client.submit(inc, 1, pure=False)
    fire_and_forget(f)
    del f


#: The shortest order that makes the leak certain: the task ends, then the desire lands.
LATE_DESIRE = ["update-graph", "compute-task", "execute", "task-finished", "client-desires-keys"]


def test_the_fire_and_forget_game():
    """Lesson 6: the result overtakes fire_and_forget's desire.  leaked_key is judged only once
    nothing is left in flight (every order then used all 8 deliveries), so the game is reached
    at the delivery that makes it certain: 5 at the least, and a detour spends the budget."""
    game = course.goal(fire_once, check="leaked_key", within=5, reached=course.late_fire_and_forget)
    try:
        for op in LATE_DESIRE:
            deliver(game, op)
        verdict = game.verdict
        assert (verdict.outcome, verdict.reached_at) == ("won", 5), verdict
        assert "after its task had ended (memory)" in verdict.explanation
        assert "the checks flag" not in game.status  # not flagged yet: certain, and said so
        game.restart()  # a detour: the first key-in-memory report before the desire
        for op in LATE_DESIRE[:4] + ["key-in-memory", "client-desires-keys"]:
            if game.verdict.outcome == "playing":
                deliver(game, op)
        assert (game.verdict.outcome, game.verdict.reached_at) == ("spent", None)
        game.restart()  # the desire first: the scheduler lets go when the task ends
        for op in ["update-graph", "client-desires-keys", "compute-task", "execute", "task-finished"]:
            deliver(game, op)
        assert game.verdict.outcome == "spent"
    finally:
        game.close()


def test_the_late_desire_is_never_certain_under_fixed():
    """The same winning order under ``fixed``: the desire of an ended task is let go at once,
    so the goal's moment never comes (it is read from the events, not assumed)."""
    game = course.goal(fire_once, check="leaked_key", within=5, reached=course.late_fire_and_forget,
                       protocol="fixed")
    try:
        for op in LATE_DESIRE:
            deliver(game, op)
        assert (game.verdict.outcome, game.verdict.reached_at) == ("spent", None)
    finally:
        game.close()


def test_the_late_desire_game_judges_like_the_check():
    """Where the game stops, the check agrees once the rest is delivered: leaked_key."""
    from jupyter_refs import Cluster

    cluster = Cluster(protocol="dask", network="manual")
    fire_once(cluster.client())
    since = cluster.trace.next_seq
    for op in LATE_DESIRE:
        [msg] = [m for m in cluster.in_flight if m.op == op][:1]
        cluster.deliver(msg.msg_id)
    cluster.trace.flush()
    assert course.late_fire_and_forget(list(cluster.trace.events(since=since)))
    while cluster.in_flight:
        cluster.step(1)
    assert [v.name for v in cluster.violations] == ["leaked_key"]
    cluster.close()


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
    # review 6: status and restart(), as the other games have them
    assert fresh.status.startswith("1 tries, 1 with id_collision\ngoals: 1 of 3")
    assert repr(fresh.status).startswith("1 tries")  # shown as text
    fresh.restart()
    assert fresh.tries == [] and fresh.status.startswith("0 tries, 0 with id_collision\ngoals: 0 of 3")
    # review 4: a cell ending in game.tried() shows the table, not a string with \n escapes
    assert repr(game.tried()) == str(game.tried()) and "\\n" not in repr(game.tried())
    with pytest.raises(ValueError, match="for B"):
        game.play(1, n + 1)


def test_the_game_plays_in_text_without_the_widget(game, capsys):
    """Change 4 of the course review: game.in_flight, game.deliver(N) or deliver(op), the
    status and the count, so the game plays (and is scripted) with no widget."""
    listing = repr(game.in_flight)
    assert listing.splitlines()[0] == "in flight (game.deliver(N) delivers the N-th):"
    first, second = listing.splitlines()[1:]
    assert first.strip().startswith("1  #") and "client-releases-keys[" in first
    assert first.endswith("client:1->scheduler  · stream")
    # the scatter is an RPC: its line names the RPC's channel, not the stream's
    assert re.search(r"2  #\d+ scatter\[int-\w+\] client:1->scheduler on rpc:client:1#\d+  · RPC$",
                     second), second
    assert "Goal: make the checks flag dangling_future" in repr(game) and listing in repr(game)
    game.deliver(2)  # the scatter, by its number
    out = capsys.readouterr().out
    assert re.search(r"^delivered #\d+ scatter\[", out, re.M)
    assert "1 of 6 deliveries used, 5 left" in out and game.deliveries == 1
    assert [m.op for m in game.in_flight] == ["client-releases-keys", "update-data"]
    game.deliver(7)  # out of range: said, nothing delivered
    game.deliver("gather")
    out = capsys.readouterr().out
    assert "pick a message from 1 to 2" in out and "no gather in flight" in out
    assert game.deliveries == 1
    for op in FORM_A[1:]:
        game.deliver(op)
    out = capsys.readouterr().out
    assert game.verdict.outcome == "won" and game.deliveries == 5
    assert "Goal reached in 5 deliveries (budget 6)" in out and game.status in out
    assert "Goal reached in 5 deliveries" in game._status.value  # the widget says the same
    game.deliver(1)  # the game is over: nothing more is delivered
    assert "The game is over." in capsys.readouterr().out and game.deliveries == 5
    capsys.readouterr()
    game.restart()
    assert game.deliveries == 0 and "0 of 6 deliveries used" in game.status
    # review 5: in text, a restart says so and shows the fresh game; the status echoes as text
    out = capsys.readouterr().out
    assert out.startswith("started again (round 2).\nGoal: make the checks flag dangling_future")
    assert "0 of 6 deliveries used" in out and "in flight (game.deliver(N) delivers the N-th):" in out
    assert repr(game.status) == str(game.status) and not repr(game.status).startswith("'")


def test_a_refused_delivery_in_text_is_not_counted(capsys):
    def two_releases(client):
        x, y = client.scatter(1), client.scatter(2)
        client.cluster.run_until_idle()
        del x, y  # two releases, in order, on the client's stream

    game = course.goal(two_releases, check="leaked_key", within=3)
    try:
        assert [m.op for m in game.in_flight] == ["client-releases-keys"] * 2
        game.deliver(2)  # the stream is FIFO: the second release cannot go first
        out = capsys.readouterr().out
        assert "refused (not counted)" in out and game.deliveries == 0
        assert len(game.in_flight) == 2
        game.deliver(1)
        assert game.deliveries == 1 and "delivered #" in capsys.readouterr().out
    finally:
        game.close()


def test_be_the_thread_scheduler_against_a_lock_of_ones_own():
    """Lesson 3's exercise: the student's allocator, a counter behind a threading.Lock, played
    in the game in place of racy-ids'.  No pair wins; a thread that reaches the lock while the
    other holds it waits (the game gives the holder the CPU back), and keys print inc-N."""
    import threading

    from jupyter_refs.switch_game import SwitchGame

    class LockedIds:
        def __init__(self, record):
            self.record = record
            self._next = 1
            self._lock = threading.Lock()

        def __call__(self, actor):
            with self._lock:
                value = self._next
                self.record(actor, "id.alloc", None, value, False)
                self._next = value + 1
            return value

    game = SwitchGame(allocator=LockedIds)
    lines = [text for _, text in game.lines]
    assert lines[0] == "with self._lock:" and "LockedIds.__call__ (yours, on racy-ids)" in repr(game)
    # switched out after its read, or after its record: A still holds the lock
    inside = (lines.index("value = self._next") + 1, lines.index("self._next = value + 1"))
    tries = [game.play(a, b) for a in (0, *inside) for b in (None, 1)]
    assert not any(t.collision for t in tries) and all(t.allocated for t in tries)
    assert {tuple(sorted(t.keys)) for t in tries} == {("inc-1", "inc-2")}
    waits = {(t.after_line, t.b_after): t.waited for t in tries}
    # A switched out inside its lock: B reaches the lock and waits for A
    assert waits[(inside[0], None)] == "B" and waits[(inside[1], None)] == "B"
    # A switched out before its lock, B switched out holding it: A waits for B
    assert waits[(0, 1)] == "A" and waits[(0, None)] is None
    assert "(B waited for A's lock" in game.play(inside[0]).sentence()
    # the same allocator without its lock is Julia's race again: the game finds it
    class Unlocked(LockedIds):
        def __call__(self, actor):
            value = self._next
            self.record(actor, "id.alloc", None, value, False)
            self._next = value + 1
            return value

    assert SwitchGame(allocator=Unlocked).play(1).collision
    with pytest.raises(ValueError, match="never calls an allocator"):
        SwitchGame("dask", allocator=LockedIds)


def test_the_thread_game_keys_are_inc():
    from jupyter_refs.switch_game import SwitchGame

    result = SwitchGame("racy-ids").play(len(SwitchGame("racy-ids").lines))
    assert sorted(result.keys) == ["inc-1", "inc-2"] and not result.collision


def test_a_task_run_in_flight_is_labelled_as_one():
    """Review 4: lesson 6's game listed ``execute`` as "· stream", though lesson 0 calls it a
    worker's own thread, not a message."""
    from jupyter_refs.protocol.messages import Message
    from jupyter_refs.views.game import InFlightList

    run = Message("worker:0", "worker:0", "execute", "execute:worker:0", False, ("k",), msg_id=4)
    stream = Message("client:1", "scheduler", "update-graph", "client:1->scheduler", True, ("k",),
                     msg_id=5)
    rows = repr(InFlightList([run, stream])).splitlines()[1:]
    assert rows[0].endswith("· task run") and rows[1].endswith("· stream"), rows
