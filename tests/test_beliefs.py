"""The belief model alone: what each side believed, at any point, with no check run."""

from __future__ import annotations

from helpers import SCHEDULE_A, SCHEDULE_B, rescatter

from jupyter_refs.beliefs import Beliefs


def test_beliefs_agree_with_what_the_checks_judged_over():
    cluster, _, y, _ = rescatter("legacy", SCHEDULE_A)
    rows = cluster.checks.snapshot([y.key])[0]
    mine = Beliefs.of(cluster.trace).snapshot([y.key])[0]
    assert (mine.clients, mine.scheduler, mine.who_wants, mine.on_workers) == (
        rows.clients, rows.scheduler, rows.who_wants, rows.on_workers)
    assert mine.violations == () and "dangling_future" in rows.violations


def test_beliefs_at_a_point_are_what_each_side_believed_then():
    cluster, _, y, start = rescatter("legacy", SCHEDULE_A)
    forget = next(e for e in cluster.trace.events(key=y.key, kind="transition", since=start)
                  if e.get("finish") == "forgotten")
    before = Beliefs.of(cluster.trace, until=forget.seq).snapshot([y.key])[0]
    after = Beliefs.of(cluster.trace, until=forget.seq + 1).snapshot([y.key])[0]
    # Just before the late release forgot it, the scheduler held the key for nobody...
    assert before.scheduler == "memory" and before.who_wants == ()
    # ...while the client, throughout, holds a finished future (the dangling one).
    assert before.clients == after.clients == {"client:1": (1, "finished")}
    assert after.scheduler == "forgotten"


def test_beliefs_judge_nothing():
    cluster, _, y, _ = rescatter("legacy", SCHEDULE_B)
    n = len(cluster.trace)
    beliefs = Beliefs.of(cluster.trace)
    assert len(cluster.trace) == n  # no violation recorded
    assert beliefs.fstate[("client:1", y.key)] == "cancelled"
    assert beliefs.forgotten_by[y.key] is not None  # what forgot it, for the explanations


def inc(v: int) -> int:
    return v + 1


def test_a_quiet_limit_bounds_what_is_kept_of_keys_long_gone():
    """A trace that runs for ever keeps the history of only the newest quiet keys."""
    from jupyter_refs import Cluster
    from jupyter_refs.checks import Checks

    with Cluster(protocol="dask", network="immediate") as cluster:
        client = cluster.client()
        bounded = Checks(cluster.trace, quiet_limit=10)
        for _ in range(3):
            futures = client.map(inc, range(100), pure=False)
            assert client.gather(futures) == list(range(1, 101))
            del futures
            cluster.apply_drops()
            cluster.run_until_idle()
        cluster.trace.flush()
        b, everything = bounded.beliefs, cluster.checks.beliefs
        assert len(everything.forgotten) == 300  # unbounded: every key ever seen
        for table in (b.forgotten, b.forgotten_by, b.desired_by, b.released_by, b.applied,
                      b.holders):
            assert len(table) <= 10, table
        assert bounded.violations == cluster.checks.violations == []


def test_a_quiet_limit_does_not_hide_a_loss():
    """The key #8576 loses is held: never quiet, never erased, still judged."""
    from jupyter_refs.checks import Checks

    cluster, _, y, _ = rescatter("dask", SCHEDULE_A)
    bounded = Checks(cluster.trace, quiet_limit=1)
    cluster.trace.flush()
    assert [v.name for v in bounded.violations] == [v.name for v in cluster.checks.violations]
    assert "dangling_future" in {v.name for v in bounded.violations}


def test_a_key_held_again_comes_after_the_keys_held_since():
    """The keys are listed in the order they became held or known, a key whose hold ended
    and began again from its return (as when each belief was a table of its own), though its
    record, and its history, stayed in between."""
    from jupyter_refs import Cluster

    with Cluster(protocol="dask", network="immediate") as cluster:
        client = cluster.client()
        x = client.scatter(1)
        y = client.scatter(2)
        key = x.key
        del x
        cluster.apply_drops()
        cluster.run_until_idle()
        x = client.scatter(1)
        cluster.trace.flush()
        beliefs = cluster.checks.beliefs
        assert x.key == key and key in beliefs.records  # one record all along
        assert beliefs.keys() == [y.key, x.key]
        assert dict(beliefs.refcount) == {("client:1", y.key): 1, ("client:1", x.key): 1}
        assert beliefs.sched == {y.key: "memory", x.key: "memory"}
        assert not beliefs.forgotten and beliefs.forgotten_by.get(key) is not None
