"""Lesson 00 (references) runs top to bottom and shows what it claims (the labs and the capstone:
``tests/test_labs.py``).

Every claim the lessons make about dask is printed by a cell that checked it, on real
``distributed`` and on the model; these tests read those outputs.  They also check the course's
conventions (goal, time, predict-then-run, exercises with hidden solutions, takeaway, the
"model vs dask" box), and that every timeline output carries a static SVG picture.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import lesson_env

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SVG = "image/svg+xml"
WIDGET = "application/vnd.jupyter.widget-view+json"
TRACE = "application/vnd.jupyter-refs.trace+json"


def execute(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Run a lesson in a fresh kernel that imports *this* tree's jupyter_refs, its predictions
    filled from the tests' answers file (``helpers.lesson_env``)."""
    for name_, value in lesson_env().items():  # the kernel is a subprocess: cwd is not enough
        monkeypatch.setenv(name_, value)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def cell(nb, tag: str):
    return next(c for c in nb.cells if tag in c.metadata.get("tags", []))


def text_of(nb, tag: str) -> str:
    out = []
    for o in cell(nb, tag).outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif "data" in o:
            out.append(o.data.get("text/plain", ""))
    return "".join(out)


def check_conventions(nb, minutes: int) -> None:
    """Goal, prerequisites and time up front; predict-then-run; exercises with hidden
    solutions; a takeaway; the model-vs-dask box."""
    head = nb.cells[0]
    assert head.cell_type == "markdown"
    for field in ("**Goal.**", "**Prerequisites.**"):
        assert field in head.source
    assert re.search(rf"\*\*Time\.\*\* {minutes} minutes", head.source)
    sources = [c.source for c in nb.cells]
    # A prediction raises until the student guesses (course.predict); a bare `guess = ...` is older.
    guesses = [i for i, s in enumerate(sources)
               if re.search(r"^guess = (\.\.\.|course\.predict\(\.\.\.)", s, re.M)]
    assert len(guesses) >= 2
    for i in guesses:  # each guess is checked by a later cell
        assert any("course.check(guess" in s for s in sources[i + 1:])
    solutions = [c for c in nb.cells if "solution" in c.metadata.get("tags", [])]
    assert 2 <= len(solutions) <= 3
    for s in solutions:
        assert s.cell_type == "code" and s.metadata["jupyter"]["source_hidden"] is True
        assert s.outputs and not any(o.output_type == "error" for o in s.outputs)
    exercises = [n for c in nb.cells if c.cell_type == "markdown"
                 for n in re.findall(r"^\*\*Exercise (\d)\.\*\*", c.source, re.M)]
    assert exercises == [str(i) for i in range(1, len(solutions) + 1)]
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert any(s.startswith("## Takeaway") for s in markdown)
    assert any("> **Model vs dask.**" in s for s in markdown)


def timeline_svgs(nb) -> list[ET.Element]:
    """The static pictures of every timeline output, parsed (a parse error fails the test)."""
    found = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            data = o.get("data", {})
            if WIDGET in data and TRACE in data:
                assert SVG in data, "a timeline output without its static picture"
                found.append(ET.fromstring(data[SVG]))
    return found


@pytest.mark.slow
@pytest.mark.dask
def test_lesson_00_references(tmp_path, monkeypatch, caplog):
    pytest.importorskip("distributed")
    nb = execute("00_references.ipynb", tmp_path, monkeypatch)
    # The kernel opens no comm of its own: a front end without the extension has nothing to refuse.
    assert "No handler found for comm target" not in caplog.text
    # Run All shows no red boxes: dask's log of the workers this lesson removes on purpose is hushed.
    stderr = [o.text for c in nb.cells for o in c.get("outputs", [])
              if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, stderr
    check_conventions(nb, 45)
    for side in ("dask", "model"):
        life = text_of(nb, "lifecycle")
        assert re.search(rf"{side}\s+right after submit: pending\s+scheduler: processing", life)
        assert re.search(rf"{side}\s+after .result\(\) = 1: finished", life)
        assert re.search(rf"{side}\s+a task that raised: error; .result\(\) re-raised ValueError", life)
        assert re.search(rf"{side}\s+after cancel\(\): cancelled; scheduler at once: processing, "
                         r"then: forgotten", life)
        refs = text_of(nb, "refcount")
        assert re.search(rf"{side}\s+same key: True \(int-[0-9a-f]{{32}}\); refcount 2; "
                         r"who_wants \['[^',]+'\]", refs)
        assert re.search(rf"{side}\s+after del y: refcount 1; scheduler: memory", refs)
        assert re.search(rf"{side}\s+after del x: refcount 0; scheduler: forgotten", refs)
        states = text_of(nb, "states")
        for line in (r"a processing\s+b waiting", r"a memory\s+b memory", r"del a: a released\s+b memory",
                     r"del b: a forgotten\s+b forgotten", r"a task that raised: erred"):
            assert re.search(rf"{side}\s+{line}", states), line
    # 00-1 asks what each side says right after cancel() (issue 42: the table of statuses
    # answered the old question, the status right after submit)
    assert "the answer: ('cancelled', 'processing')" in text_of(nb, "check-status")
    assert "model and dask agree: True" in text_of(nb, "check-status")
    # 00-2 asks the size of who_wants (issue 42's review: cell 11 has just given the refcount)
    assert "the answer: 1 " in text_of(nb, "check-refcount")
    assert "model and dask agree: True" in text_of(nb, "check-refcount")
    sources = [c.source for c in nb.cells]
    asked = next(i for i, c in enumerate(nb.cells) if "guess-refcount" in c.metadata.get("tags", []))
    before = "\n".join(sources[:asked])
    assert "a set" not in before and "once" not in before.split("## 2. The client's refcount")[1]
    head = sources[0]
    assert "lessons 1–9 read" in head.replace("\n", " ")
    # a status changes by the scheduler's messages, and by the client's own cancel() (00-1)
    md = " ".join(c.source.replace("\n", " ") for c in nb.cells if c.cell_type == "markdown")
    assert "updated only by messages" not in md and "changed only by" not in md
    assert "or, at once, by the client's own `cancel()`" not in md  # not before 00-1's check
    told = next(i for i, c in enumerate(nb.cells) if "at once, by the client's own `cancel()`" in c.source)
    checked = next(i for i, c in enumerate(nb.cells) if "check-status" in c.metadata.get("tags", []))
    assert told > checked
    # 00-1's question says when the look is taken (the review: `processing` holds only then)
    assert "before its cancel-keys reaches the scheduler" in cell(nb, "guess-status").source
    assert "in its last two sections" in head.replace("\n", " ")
    # lesson 0's box does not say what today's dask does with a travelling future (02-4's answer)
    box = next(c.source for c in nb.cells if "> **Model vs dask.**" in c.source)
    assert "differed in one respect" not in box and "on a manual network `scatter` returns" in box
    assert "changed by the scheduler's messages or by the   client's own `cancel()`" in md
    assert "the answer: 'released'" in text_of(nb, "check-states")
    assert "model and dask agree: True" in text_of(nb, "check-states")
    lost = text_of(nb, "lost")
    assert "FutureState.lose sets status 'lost': True" in lost
    assert "run spec of the scattered key: None | of the computed key: Task" in lost
    assert "computed key finished again, recomputed on A (scheduler: memory -> released" in lost
    assert "scattered key cancelled (nothing can recompute it), computed key lost" in lost
    intervals = re.findall(r"dask flushes every (\d+) ms, the model every (\d+) ms", text_of(nb, "intervals"))
    assert [d for d, _ in intervals] == ["10", "5", "2", "2"]
    assert all(d == m for d, m in intervals)
    channels = dict(re.findall(r"^(\S+)\s+\S+\s+(RPC|batched stream)$", text_of(nb, "channels"), re.M))
    assert {op: channels[op] for op in ("scatter", "update-data", "gather")} == dict.fromkeys(
        ("scatter", "update-data", "gather"), "RPC")
    for op in ("update-graph", "client-releases-keys", "cancel-keys", "free-keys", "compute-task",
               "key-in-memory", "release-worker-data"):
        assert channels[op] == "batched stream", op
    assert re.search(r"client-releases-keys\s+client:1->scheduler\s", text_of(nb, "channels"))
    refs = text_of(nb, "legend-refs")  # a harmless program: lesson 1's answer is not given away
    assert re.search(r"client:1=1/finished\s+memory", refs)
    assert "VIOLATION" not in refs
    fields = text_of(nb, "event-fields")
    assert "'op': 'client-releases-keys'" in fields and "'channel': 'client:1->scheduler'" in fields
    assert "'stimulus_id': 'client-releases-keys-" in fields
    stimulus = text_of(nb, "stimulus")
    assert re.search(r"dask:  memory -> forgotten  stimulus_id=client-releases-keys-\d", stimulus)
    assert re.search(r"model: memory -> forgotten  stimulus_id=client-releases-keys-\d", stimulus)
    # The timeline's lanes, read from its saved trace (the lesson no longer prints them: test
    # plumbing, issue 42's review): actors, channels (an RPC's pair in one lane), keys.
    [bundle] = [o["data"][TRACE] for c in nb.cells for o in c.get("outputs", [])
                if TRACE in o.get("data", {})]
    groups = {0: "actor", 1: "channel", 2: "key"}
    lanes = "\n".join(f"{groups[lane['group']]:8} {lane['name']}" for lane in bundle["lanes"])
    for lane in ("actor    client:1", "actor    scheduler", "channel  client:1->scheduler",
                 "channel  rpc client:1<->scheduler", "key      key int-"):
        assert lane in lanes, lanes
    assert bundle["messages"]["op"] and not bundle["violations"]["seq"]
    assert not any(t in c.metadata.get("tags", []) for c in nb.cells for t in ("lanes",))
    assert "TimelineModel" not in "\n".join(sources)
    incarnation = text_of(nb, "incarnation")
    assert re.search(r"incarnation \d+, replaced nothing", incarnation)
    # the model's numbering of its runs and copies is not taught (issue 42's second review)
    assert "The numbers skip 3" not in "\n".join(c.source for c in nb.cells)
    carried = re.search(r"free-keys event carries: (\[.*\])", incarnation)[1]
    assert "'keys'" in carried and "incarnation" not in carried
    # Exercise 1: a scatter and a submit on one key (issue 42's second review: not cell 13 again)
    solution = text_of(nb, "solution-refcount")
    assert len(re.findall(r"same key: True; y.result\(\) = 7 \(inc never ran", solution)) == 2, solution
    assert len(re.findall(r"refcount 2, who_wants has 1 entry", solution)) == 2, solution
    assert len(re.findall(r"after del x: refcount 1, scheduler: memory; y: finished", solution)) == 2
    # Exercise 2: cancel-keys against a scatter RPC sent after it (not answered by the table)
    cancel = text_of(nb, "solution-cancel")
    # under a key of its own (review 4: an inc-<uuid> key here showed 03-2's answer early)
    assert re.search(r"^in flight: #\d+ cancel-keys\[p\] client:1->scheduler$", cancel, re.M), cancel
    # the scatter in flight is an RPC: its line names the RPC's channel, not the stream
    assert re.search(r"^in flight: #\d+ scatter\[int-\w+\] client:1->scheduler on rpc:client:1#\d+$",
                     cancel, re.M), cancel
    assert re.search(r"^delivered first: #\d+ scatter\[", cancel, re.M), cancel
    # the order of arrival is observed (the two msg.received events' seq), not inferred
    received = re.findall(r"^(scatter|cancel-keys) \((RPC|batched stream)\) received by scheduler "
                          r"at seq (\d+)$", cancel, re.M)
    assert [(op, kind) for op, kind, _ in received] == [("scatter", "RPC"),
                                                        ("cancel-keys", "batched stream")], cancel
    assert int(received[0][2]) < int(received[1][2])
    assert "p: cancelled, q: finished" in cancel
    sources = [c.source for c in nb.cells]
    asked = next(i for i, s in enumerate(sources) if s.startswith("**Exercise 2.**"))
    assert "## 5. Two kinds of channel" in "\n".join(sources[:asked])
    # Exercise 3 searches real dask's story for what took a cancelled task out of processing
    stimulus = text_of(nb, "solution-stimulus")
    assert re.search(r"^processing -> released  stimulus_id=cancel-key-[\d.]+$", stimulus, re.M), stimulus
    assert "caused by the client's cancel: True" in stimulus
    assert "no client-releases-keys involved: True" in stimulus
    [picture] = timeline_svgs(nb)
    assert not picture.findall(".//{http://www.w3.org/2000/svg}g[@class='violation']")
    assert static_html_pictures(nb) == 1
    # The exercise's cancel runs on a manual network: no task blocks the kernel on the gate.
    assert "in flight: " in cancel and "cancel-keys" in cancel and "gate" not in sources[asked + 2]


def static_html_pictures(nb) -> int:
    """How many timeline pictures nbconvert's HTML shows for a notebook saved as JupyterLab saves
    it by default, with no widget state: then nbconvert skips the widget view for the next MIME
    type it knows, the SVG.  (With saved widget state it prefers the widget view, which only
    renders with the widget manager's scripts from a CDN.)"""
    from nbconvert import HTMLExporter

    saved = nbformat.from_dict(nb)
    saved.metadata.pop("widgets", None)
    html, _ = HTMLExporter().from_notebook_node(saved)
    return html.count('src="data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmci')
