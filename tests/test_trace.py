"""The event log: exports, bounds, subscribers."""

from __future__ import annotations

import json
import warnings

import pytest
from helpers import deliver_op

from jupyter_refs import Cluster, Trace
from jupyter_refs.trace import FIELDS


def race_trace() -> Cluster:
    cluster = Cluster(protocol="legacy", network="manual")
    client = cluster.client()
    x = client.scatter(123)
    cluster.run_until_idle()
    del x
    cluster.y = client.scatter(123)  # held, so the late release leaves it dangling
    for op in ["scatter", "update-data", "update-data-reply", "scatter-reply", "client-releases-keys"]:
        deliver_op(cluster, op)
    cluster.run_until_idle()
    return cluster


def test_jsonl_round_trip(tmp_path):
    cluster = race_trace()
    text = cluster.trace.to_jsonl(str(tmp_path / "t.jsonl"))
    lines = text.splitlines()
    assert len(lines) == len(cluster.trace)
    assert all(json.loads(line)["seq"] == i for i, line in enumerate(lines))
    loaded = Trace.from_jsonl((tmp_path / "t.jsonl").read_text())
    assert loaded.events() == cluster.trace.events()
    assert loaded.to_jsonl() == text


def test_every_recorded_kind_is_in_the_vocabulary():
    cluster = race_trace()
    kinds = {e.kind for e in cluster.trace}
    assert kinds <= set(FIELDS)
    for e in cluster.trace:
        assert len(e.data) == len(FIELDS[e.kind]), e


def test_chrome_trace_structure(tmp_path):
    cluster = race_trace()
    path = tmp_path / "t.json"
    cluster.trace.to_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    names = {(e["pid"], e["args"]["name"]) for e in events if e.get("name") == "thread_name"}
    # one track per actor and per channel, one per key
    assert {(1, "client:1"), (1, "scheduler"), (1, "worker:0"), (1, "checks")} <= names
    assert (2, "client:1->scheduler") in names
    assert any(pid == 2 and n.startswith("rpc:client:1#") for pid, n in names)
    assert any(pid == 3 and n.startswith("int-") for pid, n in names)
    # every message is a flow from its send to its receive
    starts = {e["id"] for e in events if e["ph"] == "s"}
    ends = {e["id"] for e in events if e["ph"] == "f"}
    sent = {e.msg_id for e in cluster.trace.events(kind="msg.sent")}
    assert starts == sent and ends == starts
    assert any(e["ph"] == "C" and e["name"].startswith("refcount int-") for e in events)
    assert any(e["ph"] == "i" and e["name"] == "VIOLATION dangling_future" for e in events)
    key_slices = [e["name"] for e in events if e["ph"] == "X" and e["pid"] == 3]
    assert "memory" in key_slices
    ts = [e["ts"] for e in events if "ts" in e and e["pid"] == 1 and e["ph"] == "X"]
    assert ts == sorted(ts)  # log order survives identical simulated times
    assert doc["otherData"]["dropped_events"] == 0


def test_bounded_log_counts_what_it_drops():
    trace = Trace(capacity=100)
    for i in range(1000):
        trace.record("client:1", "refcount.inc", f"k{i}", 0, 1)
    assert 100 <= len(trace) <= 100 + trace._slack
    assert trace.dropped + len(trace) == 1000
    events = trace.events()
    assert events[0].seq == trace.dropped and events[-1].seq == 999
    assert events[-1].key == "k999"
    assert f"{trace.dropped} dropped" in repr(trace)
    with pytest.raises(IndexError, match="not in the log"):
        trace[0]
    with pytest.raises(ValueError, match="at least 1"):
        Trace(capacity=0)


def test_cluster_trace_overflow_is_visible():
    with Cluster(network="immediate", trace_capacity=50) as cluster:
        client = cluster.client()
        assert client.gather(client.map(lambda v: v, range(20))) == list(range(20))
        assert cluster.trace.dropped > 0
        assert cluster.trace.to_chrome_trace()["otherData"]["dropped_events"] == cluster.trace.dropped


def test_subscribers_receive_batches_and_misses():
    trace = Trace(capacity=10)
    got = []
    trace.subscribe(lambda b: got.append((b.start, len(b.rows), b.missed)))
    for _i in range(5):
        trace.record("a", "refcount.inc", "k", 0, 1)
    trace.flush()
    for _i in range(40):
        trace.record("a", "refcount.inc", "k", 0, 1)
    trace.flush()
    trace.flush()  # nothing new: no call
    assert got[0] == (0, 5, 0)
    start, n, missed = got[1]
    assert start + n == 45 and missed == start - 5 and missed > 0


def test_failing_subscriber_is_removed_and_reported_once():
    trace = Trace()
    calls = []

    def bad(batch):
        calls.append(batch)
        raise RuntimeError("broken view")

    trace.subscribe(bad)
    trace.record("a", "refcount.inc", "k", 0, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace.flush()
        trace.record("a", "refcount.inc", "k", 0, 1)
        trace.flush()
    assert len(calls) == 1 and len(caught) == 1
    assert "broken view" in str(caught[0].message)


def test_filter_by_key_includes_messages_about_it():
    cluster = race_trace()
    key = cluster.trace.events(kind="scatter.begin")[0].key
    about = cluster.trace.filter(key=key)
    assert {e.kind for e in about} >= {"msg.sent", "transition", "refcount.dec", "violation"}
    assert all(e.key == key or key in e.get("keys", ()) for e in about)
