"""The JupyterLab extension's kernel side, its packaging, and its TypeScript unit tests.

The comm feed is tested on a real kernel, read from the wire as a front end
would see it; the TypeScript tests (vitest, in ``labextension/test``) draw
bundles that the Python side really writes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from helpers import collect, run

from jupyter_refs import Cluster
from jupyter_refs.demo import scatter_race
from jupyter_refs.views.saved import MIME, SavedTrace, trace_bundle, window
from jupyter_refs.views.svg import SVG_MIME

ROOT = Path(__file__).resolve().parents[1]
LABEXT = ROOT / "labextension"


# -- the saved-trace bundle ------------------------------------------------------------------


@pytest.fixture(scope="module")
def legacy_race():
    return scatter_race("legacy", seed=1, iterations=40).cluster


def test_bundle_is_the_laid_out_trace_and_plain_json(legacy_race):
    trace = legacy_race.trace
    bundle = json.loads(json.dumps(trace_bundle(trace, title="t")))
    assert bundle["version"] == 1 and bundle["title"] == "t"
    assert bundle["window"] == {"first": 0, "next": len(trace), "total": len(trace), "dropped": 0}
    kinds = {e.kind for e in trace}
    drawn = set(bundle["events"]["kind"])
    assert drawn and drawn <= kinds
    sent = [e for e in trace if e.kind == "msg.received"]
    assert len(bundle["messages"]["x0"]) == len(sent)  # every delivered message is an arrow
    violations = [e for e in trace if e.kind == "violation"]
    assert len(violations) > 0
    assert bundle["violations"]["name"] == [v.get("name") for v in violations]
    lanes = len(bundle["lanes"])
    for name in ("events", "states", "violations"):
        assert all(0 <= lane < lanes for lane in bundle[name]["lane"])


def test_bundle_window_keeps_the_first_violation_of_a_long_trace(legacy_race):
    trace = legacy_race.trace
    first = trace.events(kind="violation")[0]
    lo, hi = window(trace, 50)
    assert hi - lo == 50
    assert lo <= first.get("first_seq") < hi
    small = trace_bundle(trace, max_events=50)
    assert small["window"]["first"] == lo and small["window"]["next"] == hi
    assert len(small["violations"]["x"]) >= 1
    fixed = scatter_race("fixed", seed=1, iterations=40).cluster.trace
    assert window(fixed, 50) == (len(fixed) - 50, len(fixed))  # no violation: the latest events
    with pytest.raises(ValueError, match="max_events must be at least 1"):
        window(trace, 0)


def test_timeline_outputs_carry_the_saved_trace(legacy_race):
    from jupyter_refs.views.timeline import OPEN_TIMELINES, Timeline

    tl = Timeline(legacy_race, live=False)
    try:
        data = tl._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in data
        saved = data[MIME]
        assert saved["timeline_id"] == tl.id
        assert saved["window"]["next"] == tl.drawn_until == legacy_race.trace.next_seq
        assert MIME not in tl._repr_mimebundle_(exclude=[MIME])
        assert tl in OPEN_TIMELINES
    finally:
        tl.close()
    assert tl not in OPEN_TIMELINES
    alone = SavedTrace(legacy_race.trace)._repr_mimebundle_()
    assert set(alone) == {MIME, SVG_MIME, "text/plain"} and "violations" in alone["text/plain"]


def test_show_key_filters_a_timeline_and_ignores_unknown_keys():
    from jupyter_refs.views.timeline import Timeline

    cluster = Cluster(network="immediate")
    client = cluster.client()
    a, b = client.scatter(1), client.scatter(2)
    tl = Timeline(cluster, live=False)
    try:
        assert tl.show_key(a.key)
        assert tl.model.keys == {a.key} and tl._key_filter.value == a.key
        assert not tl.show_key("nope") and tl.model.keys == {a.key}
        assert tl.show_key(None) and tl.model.keys is None
        assert b.key in tl.model.seen_keys
    finally:
        tl.close()
        cluster.close()


# -- the comm feed, on a real kernel -------------------------------------------------------------




def _comm_data(msgs: list[dict], kind: str) -> list[dict]:
    return [m["content"]["data"] for m in msgs
            if m["msg_type"] == "comm_msg" and m["content"]["data"].get("type") == kind]


def _send(kc, msg_type: str, content: dict) -> None:
    kc.shell_channel.send(kc.session.msg(msg_type, content))


def _wait_for(kc, predicate, seconds: float = 10, got: list[dict] | None = None) -> list[dict]:
    """iopub messages until one satisfies ``predicate`` (all of them, in order), counting
    those already ``got``."""
    got = list(got or [])
    if any(predicate(m) for m in got):
        return got
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got += collect(kc, 0.2)
        if any(predicate(m) for m in got):
            return got
    raise AssertionError(f"not seen in {seconds} s; got {[m['msg_type'] for m in got]}")


def test_the_sidebar_feed_over_a_real_kernel_comm(kernel):
    # Before %load_ext: the kernel refuses a sidebar's comm (it closes it at once).
    _send(kernel, "comm_open", {"comm_id": "probe-1", "target_name": "jupyter-refs", "data": {}})
    _wait_for(kernel, lambda m: m["msg_type"] == "comm_close" and m["content"]["comm_id"] == "probe-1")

    # %load_ext only registers the target: the kernel opens no comm of its own, so a front
    # end without the extension has nothing to complain about ("No handler found").
    msgs = run(kernel, "%load_ext jupyter_refs")
    assert [m for m in msgs if m["msg_type"] == "comm_open"] == []
    # The sidebar opens the comm (after the cell that loaded it) and hears there is no cluster.
    comm_id = "sidebar-1"
    _send(kernel, "comm_open", {"comm_id": comm_id, "target_name": "jupyter-refs",
                                "data": {"type": "hello"}})
    msgs = _wait_for(kernel, lambda m: bool(_comm_data([m], "refs")), got=msgs)
    assert _comm_data(msgs, "refs")[0]["cluster"] is None

    # A cluster and a future: the feed sends the key with the client's refcount.
    msgs = run(kernel, "%cluster --network immediate\n%scatter x = 123")
    msgs = _wait_for(kernel, lambda m: any(r["rows"] for r in _comm_data([m], "refs")), got=msgs)
    refs = [r for r in _comm_data(msgs, "refs") if r["rows"]][-1]
    row = refs["rows"][0]
    assert refs["cluster"]["title"].startswith("protocol=dask")
    assert row["clients"] == {"client:1": [1, "finished"]} and row["scheduler"] == "memory"
    key = row["key"]

    # Dropping the future in a cell updates the feed: the key is released and forgotten.
    msgs = run(kernel, "del x")
    _wait_for(kernel, lambda m: any(r["cluster"] and key not in [row["key"] for row in r["rows"]]
                                    for r in _comm_data([m], "refs")), got=msgs)

    # A second front end opens its own comm and gets the refs at once.
    _send(kernel, "comm_open", {"comm_id": "sidebar-2", "target_name": "jupyter-refs",
                                "data": {"type": "hello"}})
    _wait_for(kernel, lambda m: m["msg_type"] == "comm_msg"
              and m["content"]["comm_id"] == "sidebar-2" and m["content"]["data"]["type"] == "refs")

    # A click on a key filters the kernel's open timelines.
    run(kernel, "%scatter y = 7\nfrom jupyter_refs.views.timeline import Timeline\n"
                "tl = Timeline(cluster, live=False)")
    _send(kernel, "comm_msg", {"comm_id": comm_id, "data": {"type": "filter", "key": key}})
    _wait_for(kernel, lambda m: m["msg_type"] == "status")
    time.sleep(0.2)
    out = run(kernel, "print(sorted(tl.model.keys or []))")
    printed = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
    assert key in printed

    # A live timeline's saved trace is refreshed over the comm once its figure moves on.
    out = run(kernel, "tl2 = Timeline(cluster, rate=20)\ndisplay(tl2)\nprint(tl2.id)\n%scatter z = 9")
    tl_id = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream").split()[0]
    ours = lambda m: any(d["timeline_id"] == tl_id for d in _comm_data([m], "trace"))  # noqa: E731
    msgs = _wait_for(kernel, ours, seconds=15, got=out)
    saved = next(d for d in _comm_data(msgs, "trace") if d["timeline_id"] == tl_id)
    out = run(kernel, "print(tl2.drawn_until, tl2.trace.next_seq)")
    drawn, total = map(int, "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream").split())
    assert 0 < saved["bundle"]["window"]["next"] <= drawn <= total
    picture = ET.fromstring(saved["svg"])  # the static picture travels with it, kept as current
    assert len(picture.findall(".//{http://www.w3.org/2000/svg}g[@class='message']")) == len(
        saved["bundle"]["messages"]["x0"])

    # %cluster replacing the cluster is followed at once; unloading closes the comms.
    msgs = run(kernel, "%cluster --network immediate --protocol fixed")
    _wait_for(kernel, lambda m: any(r["cluster"] and "fixed" in r["cluster"]["title"]
                                    for r in _comm_data([m], "refs")), got=msgs)
    msgs = run(kernel, "tl.close(); tl2.close()\n%unload_ext jupyter_refs")
    _wait_for(kernel, lambda m: m["msg_type"] == "comm_close", got=msgs)


# -- packaging and the TypeScript tests -------------------------------------------------------------


def test_the_extension_is_installed_and_enabled():
    out = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"],
                         capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    line = next((x for x in text.splitlines() if "jupyter-refs" in x), "")
    assert "enabled" in line and "OK" in line, text


def test_typescript_unit_tests():
    if not (LABEXT / "node_modules").is_dir() or shutil.which("jlpm") is None:
        if os.environ.get("CI"):
            pytest.fail("labextension/node_modules is missing: pip install -e . builds it")
        pytest.skip("the labextension is not built here (pip install -e . builds it)")
    proc = subprocess.run(["jlpm", "test"], cwd=LABEXT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout


@pytest.mark.slow
def test_pip_builds_a_wheel_that_carries_the_prebuilt_extension(tmp_path):
    """``pip install .`` installs what this wheel holds: the front end, built by the build hook."""
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                           "-w", str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheel = next(tmp_path.glob("jupyter_refs-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    prefix = "jupyter_refs-0.1.0.data/data/share/jupyter/labextensions/jupyter-refs/"
    assert {prefix + "package.json", prefix + "install.json"} <= names
    assert any(n.startswith(prefix + "static/remoteEntry.") for n in names)
    assert "jupyter_refs/views/lab.py" in names


def test_a_notebook_run_headless_saves_the_trace_its_live_timeline_ended_with(tmp_path):
    """nbconvert/nbclient: the timeline is shown before the race; the saved copy has the race."""
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (
        "%load_ext jupyter_refs", "%cluster --network immediate", "%timeline",
        "%scatter x = 123\n%scatter y = 7\nprint(x.key, y.key)")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = [o for o in nb.cells[2].outputs if MIME in o.get("data", {})]
    assert len(outputs) == 1  # updated in place, not shown again
    saved = outputs[0]["data"][MIME]
    keys = nb.cells[3].outputs[0]["text"].split()
    assert set(keys) <= set(saved["seen_keys"])
    assert saved["events"]["kind"].count("refcount.inc") >= 2
