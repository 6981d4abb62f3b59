"""Views in the kernel process: the timeline's data, the refs table, step controls, exports."""

from __future__ import annotations

import json
import logging
import time

import pytest
from helpers import SCHEDULE_A, inc, rescatter

from jupyter_refs import Cluster, Trace
from jupyter_refs.views.export import export, timeline_html
from jupyter_refs.views.refs import RefsTable
from jupyter_refs.views.timeline import Timeline
from jupyter_refs.views.timeline_model import TimelineModel


def variant_a(protocol: str = "legacy") -> tuple[Cluster, object]:
    cluster, _, y, _ = rescatter(protocol, SCHEDULE_A)
    return cluster, y


def test_model_draws_the_race():
    cluster, y = variant_a()
    model = TimelineModel()
    model.add_events(cluster.trace.events())
    lanes = set(model.lanes)
    assert {"client:1", "scheduler", "worker:0", "client:1->scheduler",
            "rpc client:1<->scheduler", f"key {y.key}"} <= lanes
    assert "checks" not in lanes
    # every delivered message is one arrow, coloured by its operation
    received = cluster.trace.events(kind="msg.received")
    assert len(model.messages) == len(received)
    release = model.messages.cols["op"].index("client-releases-keys")
    scatter = [i for i, op in enumerate(model.messages.cols["op"]) if op == "scatter"][-1]
    # logical order: the release was sent before the re-scatter and received after it
    assert model.messages.cols["x0"][release] < model.messages.cols["x0"][scatter]
    assert model.messages.cols["x1"][release] > model.messages.cols["x1"][scatter]
    # the violation marker sits on the event that broke the invariant
    v = cluster.violations[0]
    i = model.violations.cols["first_seq"].index(v.first_seq)
    assert model.violations.cols["x"][i] == v.first_seq
    assert model.lanes[model.violations.cols["lane"][i]] == "scheduler"
    # the key's lifeline: memory, then nothing after forgotten
    assert "memory" in model.states.cols["state"]
    assert model.open_states()["key"] == []


def test_hover_text_carries_the_users_source_line():
    cluster, y = variant_a()
    model = TimelineModel()
    model.add_events(cluster.trace.events())
    cells = [c for c in model.events.cols["cell"] if c]
    assert any("helpers.py" in c and "client.scatter(123)" in c for c in cells)


def test_fixed_has_no_violation_marker():
    cluster, _ = variant_a("fixed")
    model = TimelineModel()
    model.add_events(cluster.trace.events())
    assert len(model.violations) == 0 and len(model.messages) > 0


def test_key_filter_and_wall_view():
    cluster, y = variant_a()
    model = TimelineModel(keys=[y.key], view="wall")
    model.add_events(cluster.trace.events())
    assert all(k == y.key for k in model.events.cols["key"])
    with pytest.raises(ValueError, match="logical"):
        TimelineModel(view="sideways")


def test_timeline_widget_and_step_controls():
    cluster = Cluster(network="manual")
    client = cluster.client()
    x = client.scatter(1)
    timeline = Timeline(cluster, live=False)
    table = RefsTable(cluster, live=False)
    try:
        assert [m for _, m in timeline._in_flight.options] == [m.msg_id for m in cluster.in_flight]
        assert "pending" in table.widget.value
        timeline._deliver_next_button.click()  # what a click in the browser does
        assert timeline._in_flight.options[0][0].startswith("#2 update-data")
        timeline._deliver_all_button.click()
        assert timeline._in_flight.options == () and x.status == "finished"
        table.refresh()
        assert "finished" in table.widget.value and "memory" in table.widget.value
        src = timeline.figure.sources["messages"]
        assert len(src.data["x0"]) == 5  # the scatter RPC, there and back, two hops; key-in-memory
        # two messages queued on one FIFO stream: the second cannot overtake the first
        del x
        f = client.submit(inc, 1)
        timeline.update()
        first, second = [m for _, m in timeline._in_flight.options]
        timeline._in_flight.value = second
        timeline._deliver_selected_button.click()
        assert f"deliver #{first} first" in timeline._step_status.value  # shown, not raised
        assert len(timeline._in_flight.options) == 2  # nothing changed
        timeline._in_flight.value = first
        timeline._deliver_selected_button.click()
        left = [m for _, m in timeline._in_flight.options]
        assert first not in left and second in left  # the release went; free-keys followed it
        table.refresh()
        assert "forgotten" in table.widget.value
        assert f.status == "pending"
    finally:
        timeline.close()
        table.close()
        cluster.close()


def test_live_timeline_updates_while_a_loop_runs():
    with Cluster(network="live") as cluster:
        client = cluster.client()
        timeline = Timeline(cluster, rate=20)
        table = RefsTable(cluster, rate=20)
        start = timeline.updates_sent
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            x = client.scatter(123)
            del x
        cluster.run_until_idle()
        assert timeline.updates_sent - start >= 5
        assert table.updates >= 2
        timeline.close()  # joins the pump: nothing is mid-update below
        table.close()
        shown = len(timeline.figure.sources["messages"].data["x0"])
        assert shown > 20
        for name, source in timeline.figure.sources.items():  # streamed columns stay aligned
            assert len({len(v) for v in source.data.values()}) <= 1, name
        assert not timeline._pump.thread.is_alive() and not table._thread.is_alive()


def test_refs_table_text_and_verdict():
    cluster, y = variant_a()
    table = RefsTable(cluster, live=False)
    text = table.to_text()
    assert y.key in text and "VIOLATION dangling_future" in text and "forgotten" in text
    assert "✗ dangling_future" in table.widget.value
    table.close()


def test_exports_by_suffix(tmp_path):
    cluster, y = variant_a()
    assert "JSON Lines" in export(cluster, str(tmp_path / "t.jsonl"))
    assert len(Trace.from_jsonl((tmp_path / "t.jsonl").read_text())) == len(cluster.trace)
    assert "Chrome" in export(cluster, str(tmp_path / "t.json"))
    assert "traceEvents" in json.loads((tmp_path / "t.json").read_text())
    export(cluster, str(tmp_path / "t.html"))
    page = (tmp_path / "t.html").read_text()
    assert "<script" in page and "Bokeh" in page and "cdn.bokeh.org" not in page
    with pytest.raises(ValueError, match="must end in"):
        export(cluster, str(tmp_path / "t.txt"))
    assert "timeline" in timeline_html(cluster.trace)


@pytest.mark.parametrize("ran", ["nothing", "one scatter", "the race"])
def test_an_html_export_passes_bokehs_validation(tmp_path, caplog, ran):
    """Issue 46.1: every export logged two E-1001 errors (red boxes in a notebook): the
    causal chain's sources, empty, lacked the columns their glyphs name."""
    if ran == "the race":
        cluster, _ = variant_a()
    else:
        cluster = Cluster(protocol="dask", network="immediate")
        if ran == "one scatter":
            cluster.client().scatter(1)
    with caplog.at_level(logging.WARNING, logger="bokeh"):
        export(cluster, str(tmp_path / "t.html"))
    assert "<script" in (tmp_path / "t.html").read_text()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("bokeh")] == []


def test_a_saved_trace_has_a_timeline_too(tmp_path):
    cluster, _ = variant_a()
    trace = Trace.from_jsonl(cluster.trace.to_jsonl())
    timeline = Timeline(trace, live=False)
    assert len(timeline.model.violations) == len(cluster.violations)
    table = RefsTable(trace, live=False)
    assert "dangling_future" in table.to_text()
    timeline.close()
    table.close()


def test_live_window_keeps_the_latest_rows_and_update_redraws_all():
    with Cluster(network="live") as cluster:
        client = cluster.client()
        timeline = Timeline(cluster, rate=20, live_window=50)
        for _ in range(60):
            x = client.scatter(123)
            del x
        cluster.run_until_idle()
        drawn = timeline.figure.sources["messages"].data
        last = timeline.model.messages.cols["x0"]
        deadline = time.monotonic() + 10  # the pump catches up asynchronously
        while (len(drawn["x0"]) != 50 or drawn["x0"][-1] != last[-1]) and time.monotonic() < deadline:
            time.sleep(0.02)
            drawn = timeline.figure.sources["messages"].data
        assert len(drawn["x0"]) == 50 and drawn["x0"][-1] == last[-1]
        timeline.update()
        assert len(timeline.figure.sources["messages"].data["x0"]) == len(timeline.model.messages)
        timeline.close()


def test_a_timeline_not_live_holds_nothing_back_and_update_reads_the_trace():
    """Not live, a timeline queued every batch the trace flushed and nothing drained it:
    it kept every row recorded after it was made, past the trace's own bound.  Now it follows
    nothing, and ``update()`` reads what the trace holds — from the start again when the
    trace dropped rows it had not taken in."""
    with Cluster(protocol="legacy", network="immediate", trace_capacity=2_000) as cluster:
        client = cluster.client()
        client.gather(client.map(inc, range(10)))
        watching = cluster.trace.subscribers
        timeline = Timeline(cluster, live=False)
        first = timeline.model.events.cols["x"][0]
        drawn = len(timeline.model.events)
        assert cluster.trace.subscribers == watching  # the checks', not the timeline's
        client.gather(client.map(inc, range(10, 20)))
        assert len(timeline.model.events) == drawn  # a snapshot until asked
        assert not timeline._queue
        timeline.update()
        assert len(timeline.model.events) > drawn
        assert timeline.model.events.cols["x"][0] == first  # nothing was dropped: taken in after
        assert len(timeline.figure.sources["events"].data["x"]) == len(timeline.model.events)
        for i in range(3):
            client.gather(client.map(inc, range(100 * i + 100, 100 * i + 200)))
        timeline.update()
        xs = timeline.model.events.cols["x"]
        assert xs[0] > first  # the trace dropped its oldest rows: drawn from what it holds
        assert xs[-1] < cluster.trace.next_seq
        assert len(timeline.figure.sources["events"].data["x"]) == len(timeline.model.events)


def test_refs_text_fits_a_notebook_cell():
    """Issue 18.7: ``%refs --text`` was about 150 columns wide and wrapped in the output area."""
    from jupyter_refs.views.refs import TEXT_WIDTH, refs_text

    cluster, y = variant_a()
    rows = RefsTable(cluster, live=False).rows()
    text = refs_text(rows)
    assert max(len(line) for line in text.splitlines()) <= TEXT_WIDTH == 100
    assert y.key in text.splitlines()  # too wide for one line: the key has its own, in full
    assert "VIOLATION dangling_future" in text
    # A wide output area gets one line per key, columns as wide as their contents.
    wide = refs_text(rows, width=200).splitlines()
    assert wide[0].split() == ["key", "clients", "scheduler", "who_wants", "workers", "checks"]
    assert len(wide) == len(rows) + 1 and any(line.startswith(y.key + " ") for line in wide)
    cluster.close()


def test_an_empty_refs_table_says_what_became_of_the_keys():
    """After 50 clean scatter/submit/gather rounds the table has no rows, and said "no keys
    yet" as if nothing had happened: it says how many keys were forgotten, in how many events."""
    with Cluster(network="immediate") as cluster:
        client = cluster.client()
        assert "no keys yet" in RefsTable(cluster, live=False).to_text()
        for i in range(50):
            x = client.scatter(i)
            y = client.submit(inc, x)
            assert client.gather(y) == i + 1
            del x, y
        cluster.apply_drops()
        table = RefsTable(cluster, live=False)
        assert table.rows() == []
        said = f"no keys held: 100 keys forgotten ({cluster.trace.next_seq:,} events)"
        assert said in table.to_text() and said in table.widget.value
        table.close()
