"""Views in a real IPython kernel, read from the wire (jupyter_client, no browser).

What a front end would receive is what is asserted: widget messages on iopub
while a cell is still running, and the effect of a button click sent as a
comm message.
"""

from __future__ import annotations

import pytest
from helpers import BLOCK_8, collect, comm_models, is_patch, run

jupyter_client = pytest.importorskip("jupyter_client")




def test_timeline_updates_reach_iopub_while_the_cell_runs(kernel):
    msgs = run(kernel, """
import time
from jupyter_refs import Cluster
from jupyter_refs.views.timeline import Timeline
cluster = Cluster(network="live")
client = cluster.client()
tl = Timeline(cluster, rate=10)
display(tl)
deadline = time.monotonic() + 2
n = 0
while time.monotonic() < deadline:
    x = client.scatter(123)
    del x
    n += 1
print("loop done", n)
""")
    bokeh = [cid for cid, state in comm_models(msgs).items() if state.get("_model_name") == "BokehModel"]
    assert len(bokeh) == 1
    done = next(i for i, m in enumerate(msgs) if m["msg_type"] == "stream"
                and "loop done" in m["content"]["text"])
    patches = [i for i, m in enumerate(msgs[:done])
               if is_patch(m) and m["content"]["comm_id"] == bokeh[0]]
    # Live: patches arrive on iopub before the loop (and so the cell) has finished.
    assert len(patches) >= 5, f"{len(patches)} patches before the loop ended"
    run(kernel, "tl.close(); cluster.close()")


def test_step_controls_driven_through_comm_messages(kernel):
    msgs = run(kernel, """
from jupyter_refs import Cluster
from jupyter_refs.views.timeline import Timeline
from jupyter_refs.views.refs import RefsTable
mc = Cluster(network="manual")
mclient = mc.client()
fut = mclient.scatter(42)
step_tl = Timeline(mc, rate=20)
table = RefsTable(mc, rate=20)
display(step_tl, table)
""")
    models = comm_models(msgs)
    buttons = {s["description"]: cid for cid, s in models.items() if s.get("_model_name") == "ButtonModel"}
    table_id = next(cid for cid, s in models.items()
                    if s.get("_model_name") == "HTMLModel" and "jupyter-refs-table" in s.get("value", ""))
    assert "pending" in models[table_id]["value"]
    select = next(cid for cid, s in models.items() if s.get("_model_name") == "SelectModel")
    assert models[select]["_options_labels"][0].startswith("#1 scatter")

    def send(comm_id: str, data: dict) -> None:
        """What the front end sends when the user acts on a widget."""
        kernel.shell_channel.send(kernel.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))

    click = {"method": "custom", "content": {"event": "click"}}
    # Choose the first in-flight message in the list, click "deliver selected".
    send(select, {"method": "update", "state": {"index": 0}, "buffer_paths": []})
    send(buttons["deliver selected"], click)
    later = collect(kernel, 2.0)
    flight = [m["content"]["data"]["state"] for m in later if m["msg_type"] == "comm_msg"
              and "_options_labels" in m["content"]["data"].get("state", {})]
    assert flight and flight[-1]["_options_labels"][0].startswith("#2 update-data"), flight
    # Then "deliver all".
    send(buttons["deliver all"], click)
    later = collect(kernel, 3.0)
    values = [m["content"]["data"]["state"]["value"] for m in later
              if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == table_id
              and "value" in m["content"]["data"].get("state", {})]
    assert values and "finished" in values[-1] and "memory" in values[-1]
    flight = [m["content"]["data"]["state"] for m in later if m["msg_type"] == "comm_msg"
              and "_options_labels" in m["content"]["data"].get("state", {})]
    assert flight and flight[-1]["_options_labels"] == []
    msgs = run(kernel, "print(fut.status, len(mc.in_flight))")
    assert any("finished 0" in m["content"].get("text", "") for m in msgs)


GAME = """
from jupyter_refs import course


def rescatter(client):
    x = client.scatter(123)
    client.cluster.run_until_idle()
    del x
    return client.scatter(123)


game = course.goal(rescatter, check="dangling_future", within=6)
display(game)
"""


def test_the_game_is_won_through_comm_messages(kernel):
    """Be the scheduler (issue 42), from the wire: the student selects each message of form A's
    shortest order and clicks "deliver selected"; the goal's status says it is reached."""
    msgs = run(kernel, GAME)
    models = comm_models(msgs)
    for m in msgs:  # the state as it is now: opened, then updated while the cell ran
        if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] in models:
            models[m["content"]["comm_id"]].update(m["content"]["data"].get("state", {}))
    select = next(cid for cid, s in models.items() if s.get("_model_name") == "SelectModel")
    deliver = next(cid for cid, s in models.items()
                   if s.get("_model_name") == "ButtonModel" and s["description"] == "deliver selected")
    status = next(cid for cid, s in models.items()
                  if s.get("_model_name") == "HTMLModel" and "jupyter-refs-goal" in s.get("value", ""))
    assert "0 of 6 deliveries used" in models[status]["value"]
    labels = models[select]["_options_labels"]
    value = models[status]["value"]

    def send(comm_id: str, data: dict) -> None:
        kernel.shell_channel.send(kernel.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))

    for op in ("scatter", "update-data", "update-data-reply", "scatter-reply", "client-releases-keys"):
        index = next(i for i, label in enumerate(labels) if f" {op}[" in label)
        send(select, {"method": "update", "state": {"index": index}, "buffer_paths": []})
        send(deliver, {"method": "custom", "content": {"event": "click"}})
        for m in collect(kernel, 1.0):
            if m["msg_type"] != "comm_msg":
                continue
            state = m["content"]["data"].get("state", {})
            if m["content"]["comm_id"] == select and "_options_labels" in state:
                labels = state["_options_labels"]
            if m["content"]["comm_id"] == status and "value" in state:
                value = state["value"]
    assert "Goal reached in 5 deliveries (budget 6)" in value, value
    run(kernel, "game.close()")


def test_views_save_what_they_show_without_the_magics():
    """README block 8, headless, with no ``%load_ext``: the saved outputs and widget state
    hold the trace the cell ended with, not the empty one the views were shown with."""
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    from jupyter_refs.views.saved import MIME

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(BLOCK_8)]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    outputs = nb.cells[0].outputs
    events, key = next(o.text for o in outputs if o.output_type == "stream").split()
    assert int(events) > 100
    [saved] = [o.data[MIME] for o in outputs if MIME in o.get("data", {})]
    assert saved["window"]["total"] == int(events)
    assert key in saved["seen_keys"]
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    html = [m["state"].get("value", "") for m in state.values() if m["model_name"] == "HTMLModel"]
    assert any(f"trace: {events} events" in h for h in html), html
    [table] = [h for h in html if "jupyter-refs-table" in h or "no keys" in h]
    assert key in table
    # A reader with no widget state (nbconvert, GitHub) gets the same table as text and HTML.
    [shown] = [o.data for o in outputs if "text/html" in o.get("data", {})]
    assert key in shown["text/plain"] and key in shown["text/html"]


def test_release_says_what_it_did_and_nothing_else(kernel):
    """``%release x`` under a live timeline showed two BokehJS loaders and no word: the
    timeline's refreshed output brought a loader into the running cell.  Now the cell shows
    one line — the key released and its refcount — and the timeline's output is updated."""
    run(kernel, "%load_ext jupyter_refs\n%cluster --network immediate\n%scatter x = 123\n"
                "y = client.scatter(123)")
    run(kernel, "%timeline")
    msgs = run(kernel, "%release x")
    shown = [m for m in msgs if m["msg_type"] in ("display_data", "execute_result", "stream")]
    assert [m["msg_type"] for m in shown] == ["stream"], shown
    text = shown[0]["content"]["text"]
    assert text.startswith("released x: int-") and "refcount 2 → 1" in text, text
    msgs = run(kernel, "%release y")
    text = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    assert "refcount 1 → 0" in text and "client-releases-keys" in text, text
    assert not [m for m in msgs if m["msg_type"] == "display_data"]
    updated = [m for m in msgs if m["msg_type"] == "update_display_data"]
    assert updated and "application/javascript" not in updated[-1]["content"]["data"]
    run(kernel, "%unload_ext jupyter_refs")


def test_a_reloaded_page_gets_the_timeline_as_it_is_now(kernel):
    """A reloaded page asks each widget for its whole state (``request_state``).  jupyter_bokeh
    answered with the figure as first shown — patches never touch its render_bundle — so lesson
    01's restored timeline had a lane and a cross fewer than the live one."""
    msgs = run(kernel, """
from jupyter_refs import Cluster, Timeline
rc = Cluster(protocol="dask", network="immediate")
rclient = rc.client()
first = rclient.scatter(1)
rtl = Timeline(rc)
display(rtl)""")
    [bokeh] = [cid for cid, s in comm_models(msgs).items() if s.get("_model_name") == "BokehModel"]
    msgs = run(kernel, "later = rclient.scatter(2)\nrtl.update()\nprint(later.key)")
    key = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream").strip()
    kernel.shell_channel.send(kernel.session.msg(
        "comm_msg", {"comm_id": bokeh, "data": {"method": "request_state"}}))
    replies = [m["content"]["data"]["state"] for m in collect(kernel, 3.0)
               if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == bokeh
               and "render_bundle" in m["content"]["data"].get("state", {})]
    assert replies and f"key {key}" in replies[-1]["render_bundle"]
    run(kernel, "rtl.close(); rc.close()")
