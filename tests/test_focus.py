"""A trace focused on some keys: which keys, chosen alike everywhere, and judged fairly.

The kernel-side cluster here; real dask in ``test_dask_focus.py``.
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import cloudpickle
import pytest
from helpers import SCHEDULE_A, inc, rescatter

from jupyter_refs import Cluster
from jupyter_refs.focus import Focus, FocusError, exactly

ROOT = Path(__file__).resolve().parents[1]
KEYS = [f"inc-{i:04d}" for i in range(2000)] + ["x-1", "x-10", "('x', 0)", "int-abc"]


def test_globs_prefixes_lists_and_predicates_choose_keys():
    assert Focus("inc-000*").keep(tuple(KEYS)) == tuple(f"inc-000{i}" for i in range(10))
    assert Focus("x-1").keep(tuple(KEYS)) == ("x-1", "x-10")  # a plain string: a prefix
    assert Focus(["x-1?", "int-"]).keep(tuple(KEYS)) == ("x-10", "int-abc")
    assert Focus("('x', *").keep(tuple(KEYS)) == ("('x', 0)",)  # a tuple key, as the trace names it
    assert Focus(lambda k: k.endswith("0")).keep(tuple(KEYS))[:2] == ("inc-0000", "inc-0010")
    assert Focus.of() is None and Focus.of(sample=1) is None  # every key: no focus at all


def test_a_sample_is_the_same_keys_in_every_process():
    """One key in N by CRC-32 of the key, not by Python's salted hash(): another process,
    with another hash seed, picks exactly the same keys."""
    here = Focus(sample=10).keep(tuple(KEYS))
    assert 150 < len(here) < 250  # about one in ten
    code = ("import sys; from jupyter_refs.focus import Focus; "
            "print('\\n'.join(Focus(sample=10).keep(tuple(sys.stdin.read().split()))))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "12345"}
    there = subprocess.run([sys.executable, "-c", code], input=" ".join(KEYS), env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    assert tuple(there) == here
    assert Focus("inc-*", sample=10).keep(tuple(KEYS)) == tuple(k for k in here if k[:4] == "inc-")


def test_a_focus_travels_pickled_and_cloudpickled():
    focus = Focus(["inc-*", "x"], sample=3)
    again = pickle.loads(pickle.dumps(focus))
    assert again == focus and again.keep(tuple(KEYS)) == focus.keep(tuple(KEYS))
    by_function = cloudpickle.loads(cloudpickle.dumps(Focus(lambda k: k.startswith("x-"))))
    assert by_function.keep(tuple(KEYS)) == ("x-1", "x-10")


@pytest.mark.parametrize("keys,sample,message", [
    ([], 1, "keys=[] would trace no key at all"),
    ("", 1, "an empty pattern would match every key"),
    (["inc-*", 3], 1, "keys: 3 is not a string"),
    (42, 1, "keys must be a glob, a key prefix, a list of those or a function"),
    ("inc-*", 0, "sample must be a whole number of keys, 1 or more"),
    ("inc-*", 2.5, "sample must be a whole number"),
])
def test_a_bad_focus_says_what_is_wrong(keys, sample, message):
    with pytest.raises(FocusError, match=re.escape(message)):
        Focus(keys, sample)


def test_a_focused_trace_of_the_8576_race_still_reports_it():
    cluster = Cluster(protocol="legacy", network="manual")
    other = cluster.client("client:other")
    noise = other.scatter("unrelated")  # another key, traced before the focus only
    cluster.run_until_idle()
    cluster.focus("int-")
    noise.release()
    cluster.run_until_idle()
    cluster, client, y, start = rescatter("legacy", SCHEDULE_A, cluster)
    # What the unfocused race reports (test_races): the same two, on the focused key.
    assert [(v.name, v.key) for v in cluster.violations] == [("dangling_future", y.key),
                                                             ("refcount_mismatch", y.key)]
    after = cluster.trace.events(since=start)
    assert {e.key for e in after if e.key} == {y.key}
    assert all(y.key in e.data[0] for e in after if e.kind.startswith("msg."))
    assert not any(e.key == noise.key for e in cluster.trace.events(since=start))
    cluster.close()


def test_the_unfocused_trace_records_through_the_plain_methods():
    """No per-event work when nothing is focused: the trace's own record methods, which
    every actor took, come back when the focus is lifted."""
    with Cluster(protocol="dask", network="immediate") as cluster:
        client = cluster.client()
        assert "record" not in vars(cluster.trace)
        cluster.focus("int-")
        assert cluster.scheduler.record == cluster.trace._record_focused
        cluster.focus()
        assert "record" not in vars(cluster.trace) and cluster.focused is None
        assert cluster.scheduler.record == cluster.trace.record
        assert all(a.record == cluster.trace.record for a in cluster._actors.values())
        assert client.scatter(1).result() == 1


def test_a_key_that_joins_the_focus_is_judged_from_its_next_life():
    """A key held before it joined the focus has half a history: the checks never saw
    alice's hold, so when bob scatters the same value the scheduler's who_wants {alice, bob}
    would read as a key kept for a client with refcount 0 (leaked_key)."""
    with Cluster(protocol="dask", network="immediate") as cluster:
        alice, bob = cluster.client("alice"), cluster.client("bob")
        cluster.focus("nothing-")
        x = alice.scatter(123)
        cluster.run_until_idle()
        cluster.focus()  # every key again: x's key joins, with alice's hold unrecorded
        s = alice.scatter("s")  # a key of alice's the checks see whole
        x2 = bob.scatter(123)
        cluster.run_until_idle()
        assert x2.key == x.key
        assert cluster.violations == []
        assert x.key not in cluster.checks.beliefs.sched  # not believed: half a history
        del x, x2
        cluster.run_until_idle()
        y = alice.scatter(123)  # its next life: believed and judged again
        assert alice.submit(inc, y).result() == 124
        cluster.run_until_idle()
        assert cluster.checks.beliefs.sched[y.key] == "memory"
        assert cluster.violations == []
        del s


def test_keys_that_leave_the_focus_are_forgotten():
    with Cluster(protocol="dask", network="manual") as cluster:
        client = cluster.client()
        x = client.scatter(123)
        cluster.run_until_idle()
        assert [r.key for r in cluster.checks.snapshot()] == [x.key]
        cluster.focus("str-")
        assert cluster.checks.snapshot() == []
        s = client.scatter("s")
        cluster.run_until_idle()
        del x  # a release nobody traces now: half a story, not judged
        cluster.run_until_idle()
        assert [r.key for r in cluster.checks.snapshot()] == [s.key]
        assert cluster.violations == []
        changes = cluster.trace.events(kind="focus.changed")
        assert [e.describe() for e in changes] == ["focus: keys str-*"]


def test_exactly_one_key_and_how_patterns_are_shown():
    """The sidebar's "trace only this key" wants that key, not every key it prefixes."""
    for key in ("t-1", "('x', 0)", "a*b?[c]"):
        assert Focus(exactly(key)).keep((key, key + "0", "x" + key)) == (key,)
        assert str(Focus(exactly(key))) == f"keys {key}"
    assert str(Focus(["inc-*", "x-1"], sample=10)) == "keys inc-*, x-1* · one key in 10"
    assert str(Focus(lambda k: True)) == "keys <lambda>(key)"


def test_the_views_say_what_the_trace_follows():
    from jupyter_refs.views.refs import RefsTable
    from jupyter_refs.views.timeline import Timeline

    with Cluster(protocol="dask", network="immediate") as cluster:
        client = cluster.client()
        cluster.focus(["int-", "str-*"], sample=1)
        x = client.scatter(1)
        timeline = Timeline(cluster, live=False)
        assert "focused on keys int-*, str-*: other keys are not traced" in timeline._status.value
        events = timeline.model.events.cols
        assert "focus: keys int-*, str-*" in events["desc"][events["kind"].index("focus.changed")]
        table = RefsTable(cluster, live=False)
        assert "focused on keys int-*, str-*" in table.widget.value and x.key in table.widget.value
        cluster.focus()
        timeline.update()
        assert "focused on" not in timeline._status.value
        table.refresh()
        assert "focused on" not in table.widget.value
        timeline.close()
        table.close()
