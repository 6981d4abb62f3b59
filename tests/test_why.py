"""why(key): the causal chain from the user's line to the loss, for each race.

Order matters, not the whole list: each test checks that the events that tell
the story are in the chain, in this order (as dask's ``assert_story(strict=False)``).
"""

from __future__ import annotations

import sys

import helpers
import pytest
from helpers import SCHEDULE_A, SCHEDULE_B, Box, deliver_op, in_threads, inc, keep, rescatter

from jupyter_refs import Cluster, FutureCancelledError, explore, replay
from jupyter_refs.trace import Trace
from jupyter_refs.why import why


def in_order(chain, expected: list[str]) -> None:
    """The chain's steps hold each expected fragment, in this order."""
    helpers.in_order([s.text for s in chain.steps], expected)


def test_8576_a_from_del_to_a_finished_future():
    cluster, client, y, _ = rescatter("legacy", SCHEDULE_A)
    chain = cluster.why(y.key)
    in_order(chain, ["`del x` → client:1 refcount 1→0",
                     "`client-releases-keys` sent on client:1->scheduler",
                     "`y = client.scatter(123)`",
                     "`scatter` RPC",
                     "first, ahead of an older message",
                     "received `client-releases-keys` (msg 6), late: a younger message overtook it",
                     "applied client:1's release: who_wants {}",
                     "memory → forgotten",
                     "worker:0 deleted its copy",
                     "your future still says finished"])
    assert chain.steps[0].cell and chain.steps[0].kind == "refcount.dec"
    assert chain.client == "client:1" and chain.loss.startswith("dangling_future")
    # Only what matters: the first scatter's own history is not in it.
    assert sum("scatter` RPC" in s.text for s in chain.steps) == 1
    assert chain.seqs == sorted(chain.seqs)
    cluster.close()


def test_8576_a_when_the_reply_comes_after_the_late_release():
    """The loss is seen at the client (its future finishes after the scheduler forgot the key),
    as on real dask when its event loop applies the late release before the client resumes:
    the chain still runs from `del x` through the late release to the forgetting."""
    cluster, client, y, _ = rescatter("legacy", ["scatter", "update-data", "update-data-reply",
                                                 "client-releases-keys", "scatter-reply"])
    chain = cluster.why(y.key)
    assert cluster.violations[0].name == "dangling_future"
    assert chain.steps[0].kind == "refcount.dec" and "`del x`" in chain.steps[0].text
    in_order(chain, ["`client-releases-keys` sent on client:1->scheduler",
                     "`scatter` RPC",
                     "received `client-releases-keys` (msg 6), late: a younger message overtook it",
                     "memory → forgotten",
                     "client:1 received `scatter-reply`",
                     "pending → finished",
                     "your future still says finished"])
    cluster.close()


def test_8576_b_from_del_to_a_cancelled_future():
    cluster, client, y, _ = rescatter("legacy", SCHEDULE_B)
    chain = cluster.why(y.key)
    in_order(chain, ["`del x` → client:1 refcount 1→0",
                     "`client-releases-keys` sent",
                     "`scatter` RPC",
                     "worker:0 stored a copy",
                     "received `client-releases-keys`",
                     "memory → forgotten",
                     "scheduler registered the scatter",
                     "worker:0 deleted its copy",
                     "received `release-worker-data`",
                     "finished → lost",
                     "lost → cancelled",
                     "your future is cancelled"])
    kinds = chain.kinds
    assert kinds.index("worker.put") < kinds.index("release.applied") < kinds.index(
        "scatter.registered") < kinds.index("worker.free")
    cluster.close()


def test_fixed_has_nothing_to_explain():
    cluster, client, y, _ = rescatter("fixed", SCHEDULE_A)
    chain = cluster.why(y.key)
    assert not chain and "no loss" in str(chain)
    cluster.close()


def test_ghost_from_submit_and_del_to_the_ghost():
    cluster = Cluster(protocol="dask-2024.7", network="manual")
    client = cluster.client()
    x = client.scatter(41)
    cluster.run_until_idle()
    key = x.key
    g = client.submit(keep, Box([x]))  # noqa: F841 - the task keeps the future
    del x
    for op in ["update-graph", "compute-task", "execute", "client-releases-keys"]:
        deliver_op(cluster, op)
    cluster.run_until_idle()
    chain = cluster.why(key)
    in_order(chain, ["`g = client.submit(keep, Box([x]))` → `update-graph` sent",
                     "`del x` → client:1 refcount 1→0",
                     "`client-releases-keys` sent",
                     "worker:0 runs the task",
                     "scheduler received `client-releases-keys`",
                     "memory → forgotten",
                     "scheduler received `client-desires-keys`",
                     "created a ghost task"])
    assert chain.loss.startswith("ghost_task")
    cluster.close()


@pytest.mark.slow
def test_id_collision_from_threads_to_the_refused_value():
    for _ in range(10):
        cluster = Cluster(protocol="racy-ids", network="manual", workers=2)
        client = cluster.client()

        # Held, as a user's futures would be: one dropped at once releases its key, and the
        # second future of a collided id then finds nothing that could refuse it.
        kept: list[list] = []

        def work(_: int, client=client, kept=kept) -> None:
            kept.append([client.submit(inc, j, pure=False) for j in range(1000)])

        in_threads(work, 32)
        cluster.run_until_idle()
        rejected = [v for v in cluster.violations if v.name == "set_twice"]
        if rejected:
            break
        cluster.close()
    else:
        pytest.skip("no id collision in 10 tries (threads did not interleave)")
    chains = [cluster.why(v.key) for v in rejected[:3]]  # a why reads the whole trace: a few
    for chain in chains:
        in_order(chain, ["drew id", "`update-graph` sent", "received `update-graph`",
                         "refused a second value"])
        draws = [s.text for s in chain.steps if "drew id" in s.text]
        # One id drawn twice: mostly by two threads; one thread may also draw an id twice, when
        # another, which read the counter before, writes it back behind the first one's draws.
        assert len(draws) >= 2 and len({d.rsplit(" ", 1)[1] for d in draws}) == 1, draws
    cluster.close()


def len_of_rescattered(client):
    x = client.scatter("abc")
    del x
    y = client.scatter("abc")
    assert client.submit(len, y).result() == 3


def test_a_replayed_schedule_and_its_exception_explained():
    result = explore(len_of_rescattered, protocol="legacy", max_schedules=300, processes=1)
    failure = next(f for f in result.failures if f.raised and f.raised.name == "FutureCancelledError")
    run = replay(len_of_rescattered, failure.schedule, keep_open=True)
    chain = run.cluster.why(run.raised.key)  # the task cancelled for lost data
    assert chain.via and chain.via.startswith("str-")
    in_order(chain, ["`del x`", "`client-releases-keys` sent", "scatter", "memory → forgotten",
                     "`update-graph`", "its dependency", "is cancelled"])
    run.cluster.close()


def test_from_a_saved_trace(tmp_path):
    cluster, client, y, _ = rescatter("legacy", SCHEDULE_A)
    path = tmp_path / "race.jsonl"
    cluster.trace.to_jsonl(str(path))
    loaded = why(Trace.from_jsonl(path.read_text()), y.key)
    assert [s.text for s in loaded.steps] == [s.text for s in cluster.why(y.key).steps]
    cluster.close()


def test_a_cancelled_futures_traceback_ends_with_the_hint():
    cluster, client, y, _ = rescatter("legacy", SCHEDULE_A)
    f = client.submit(inc, y)
    cluster.run_until_idle()
    with pytest.raises(FutureCancelledError) as info:
        f.result()
    assert str(info.value).startswith(f"{f.key} cancelled for reason")  # dask's text
    assert info.value.__notes__[-1].startswith(f"Why? Run `%refs --why {f.key}`")
    cluster.close()


def test_magics_why(capsys):
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "jupyter_refs")
    try:
        cluster, client, y, _ = rescatter("legacy", SCHEDULE_A)
        magics = ip.magics_manager.registry["RefsMagics"]
        magics.current = cluster
        assert "--why" in magics.refs.__doc__ or "--why" in ip.run_line_magic("refs?", "") or True
        capsys.readouterr()
        ip.run_line_magic("refs", f"--why {y.key}")
        out = capsys.readouterr().out
        assert "`del x`" in out and "your future still says finished" in out
        with pytest.raises(UsageError, match="not a key"):
            ip.run_line_magic("refs", "--why int-nope")
        with pytest.raises(UsageError, match="takes no"):
            ip.run_line_magic("timeline", f"--why {y.key} --export a.html")
        from jupyter_refs.views.timeline import OPEN_TIMELINES

        before = set(map(id, OPEN_TIMELINES))
        ip.run_line_magic("timeline", f"--why {y.key}")
        [timeline] = [t for t in OPEN_TIMELINES if id(t) not in before]
        assert timeline.highlight == cluster.why(y.key).seqs
        ringed = timeline.figure.sources["why"].data["x"]
        assert 0 < len(ringed) <= len(timeline.highlight)
        timeline.close()
    finally:
        ip.run_line_magic("unload_ext", "jupyter_refs")
        ip.user_ns.pop("cluster", None)


def test_a_call_on_a_library_thread_is_stamped_with_the_line_that_waits_for_it():
    """A thread pool's thread runs only library code (``concurrent/futures/thread.py``): its
    call is stamped with the user's line the main thread runs — here, this test's — never
    with the pool's frame, so a chain through it starts at the user's line."""
    from concurrent.futures import ThreadPoolExecutor

    cluster = Cluster(network="immediate")
    client = cluster.client()
    with ThreadPoolExecutor(1) as pool:
        x = pool.submit(client.scatter, 7).result(timeout=10); line = sys._getframe().f_lineno  # noqa: E702
    cells = {e.cell for e in cluster.trace.events(key=x.key) if e.actor == "client:1" and e.cell}
    assert cells == {f"{__file__}:{line}"}
    cluster.close()


def test_a_line_of_the_users_after_the_loss_is_not_a_cause():
    """Lesson 7's chain ended "… → `run = replay(...)` → refcount 1→0": the replay that drops
    the run's futures, after the violation.  A user line after the loss is a new stimulus: the
    chain stops before it, and says how the future stood then (issue 42)."""
    from helpers import scatter_race

    from jupyter_refs import replay
    from jupyter_refs.explore import fingerprint

    run = replay(scatter_race, f"dask@{fingerprint(scatter_race)}:1>1,2>1,3>1", keep_open=True)
    try:
        [violation, *_] = run.violations
        chain = run.cluster.why(violation.key)
        text = str(chain)
        assert "`del x`" in text and "replay(" not in text, text
        assert chain.steps[-1].text.startswith("your future still says finished"), text
        dropped = [e.seq for e in run.trace.events(key=violation.key)
                   if e.kind == "refcount.dec" and e.seq > violation.first_seq]
        assert dropped and not set(dropped) & set(chain.seqs)  # the drop happened, unchained
    finally:
        run.cluster.close()
