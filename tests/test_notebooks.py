"""The teaching notebooks run top to bottom, and show what they claim."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def execute(name: str):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def text_of(nb, tag: str) -> str:
    cell = next(c for c in nb.cells if tag in c.metadata.get("tags", []))
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif "data" in o:
            out.append(o.data.get("text/plain", ""))
    return "".join(out)


@pytest.mark.slow
def test_scatter_race_lesson():
    nb = execute("01_scatter_race.ipynb")
    assert "VIOLATION dangling_future" in text_of(nb, "legacy-refs")
    assert "forgotten" in text_of(nb, "legacy-refs")
    assert "cancelled for reason: lost dependencies." in text_of(nb, "legacy-submit")
    assert "dask: violation after" in text_of(nb, "legacy-loop")
    fixed = text_of(nb, "fixed-refs")
    assert "VIOLATION" not in fixed and "memory" in fixed
    assert "result: 124" in text_of(nb, "fixed-submit")
    assert "fixed: no violation in 2000 iterations" in text_of(nb, "fixed-loop")
    widgets = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert any(m["model_name"] == "BokehModel" for m in widgets.values())  # %timeline drew


def widget_models(nb) -> list[str]:
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return [m["model_name"] for m in state.values()]


def test_ghost_task_lesson():
    nb = execute("02_ghost_task.ipynb")
    legacy = text_of(nb, "legacy-refs")
    assert "released (ghost)" in legacy and "VIOLATION ghost_task" in legacy
    meet = text_of(nb, "legacy-meet")
    assert "the future came back: <Future: pending" in meet
    for name in ("y", "g", "other"):  # all of client:1's futures, the unrelated one too
        assert f"{name} -> FutureCancelledError" in meet and "scheduler-connection-lost" in meet
    ghosts = int(re.search(r"dask-2024.7: (\d+) ghost tasks in 50", text_of(nb, "legacy-loop"))[1])
    assert ghosts > 0
    assert "in a list, the task got: [41]" in text_of(nb, "list-unpacked")  # a value, not a future
    unbound = "in the task: status None; .result() -> RuntimeError:"
    today = text_of(nb, "dask-refs")  # today's dask: the future arrives unbound, no ghost
    assert unbound in today and "not properly initialized" in today
    assert "ghost" not in today and "VIOLATION" not in today and "created_task=True" not in today
    meet = text_of(nb, "dask-meet")
    assert "the future came back: <Future: pending" in meet and "other -> 7" in meet
    assert "dask: 0 ghost tasks in 50 iterations" in text_of(nb, "dask-loop")
    fixed = text_of(nb, "fixed-refs")
    assert "VIOLATION" not in fixed and unbound in fixed and "holds no reference" in fixed
    meet = text_of(nb, "fixed-meet")
    assert "unknown to the scheduler" in meet and "lost dependencies" in meet and "other -> 7" in meet
    assert "fixed: 0 ghost tasks in 50 iterations" in text_of(nb, "fixed-loop")
    assert "BokehModel" in widget_models(nb)


@pytest.mark.slow
def test_future_ids_lesson():
    nb = execute("03_future_ids.ipynb")
    found = re.search(r"16000 futures, (\d+) id collisions, (\d+) second puts refused",
                      text_of(nb, "legacy-threads"))
    collisions, refused = int(found[1]), int(found[2])
    assert collisions > 0 and refused == collisions
    shown = text_of(nb, "legacy-collision")
    assert "was handed out twice" in shown and shown.count("Future can be set only once") >= 2
    assert ("16000 futures, 0 id collisions, 0 second puts refused, 0 futures not finished"
            in text_of(nb, "fixed-threads"))
    assert "every result right: True" in text_of(nb, "fixed-threads")
    # dask's pure=False keys: inc-<uuid4>
    keys = re.findall(r"\binc-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b", text_of(nb, "dask-keys"))
    assert len(set(keys)) == 3
    assert ("16000 futures, 0 id collisions, 0 second puts refused, 0 futures not finished"
            in text_of(nb, "dask-threads"))
    assert "BokehModel" in widget_models(nb)


@pytest.mark.slow
@pytest.mark.dask
def test_real_dask_lesson():
    distributed = pytest.importorskip("distributed")
    nb = execute("04_real_dask.ipynb")
    # The course's conventions (issue 20): header, predict-then-run, exercises with hidden
    # solutions that ran, a takeaway, a model-vs-dask box.
    head = nb.cells[0].source
    assert head.startswith("# Lesson 4") and "**Goal**:" in head and "**Prerequisites**:" in head
    assert re.search(r"\*\*Time\*\*: \d+ minutes", head)
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    guesses = [i for i, c in code if re.search(r"^guess = \.\.\.", c.source, re.M)]
    checks = [i for i, c in code if "course.check(guess" in c.source]
    assert len(guesses) == len(checks) == 3
    assert all(g < k < (guesses + [len(nb.cells)])[n + 1] for n, (g, k) in enumerate(zip(guesses, checks)))
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    solutions = [c for _, c in code if "solution" in c.metadata.get("tags", [])]
    assert len(solutions) == len(re.findall(r"^### Exercise \d", markdown, re.M)) == 3
    for c in solutions:
        assert c.metadata["jupyter"]["source_hidden"] is True
        assert c.outputs and not any(o.output_type == "error" for o in c.outputs)
    assert re.search(r"^## Takeaway$", markdown, re.M)
    assert re.search(r"^> \*\*Model vs dask\.\*\* ", markdown, re.M)
    # What it claims.
    assert "real dask: the scheduler lost x at iteration" in text_of(nb, "dask-loop")
    assert "dangling_future on int-" in text_of(nb, "dask-violations")
    why = text_of(nb, "dask-why").splitlines()
    assert "`del x` → client:1 refcount 1→0" in why[1], why  # the chain starts at the user's line
    assert any("received `client-releases-keys`" in line for line in why)
    assert why[-1].strip().startswith("→ your future"), why
    ordered = text_of(nb, "dask-ordered")
    assert "ordered scatter: no failure in 1000 iterations" in ordered and "violations: []" in ordered
    a = text_of(nb, "holds-a")
    assert "variant A: the key was lost 10 times out of 10" in a and "the answer: 'finished'" in a
    b = text_of(nb, "holds-b")
    assert "variant B: the key was lost 10 times out of 10" in b and "the answer: 'cancelled'" in b
    assert "refcounts [1]" in b
    held = text_of(nb, "holds-ordered")
    assert "ordered scatter: the key was lost 0 times out of 20" in held
    assert "violations: []" in held and "the answer: 0 " in held
    found = int(re.search(r"(\d+) distinct failure\(s\)", text_of(nb, "explore"))[1])
    confirmed = text_of(nb, "confirm")
    assert found >= 2 and confirmed.count(
        f"\nconfirmed on distributed {distributed.__version__}: dangling_future") == found
    assert "not confirmed" not in confirmed
    assert "release first: the key was lost 0 times out of 3" in text_of(nb, "exercise-1")
    chain = text_of(nb, "exercise-2")
    assert "starts at: cell" in chain and "`del x`" in chain and "deletes the data: worker:" in chain
    workaround = text_of(nb, "exercise-3")
    assert "not confirmed on distributed" in workaround and "the order could not be made" in workaround
    assert "enforced: False" in workaround
    assert "BokehModel" in widget_models(nb)


@pytest.mark.slow
def test_explore_lesson():
    nb = execute("05_explore.ipynb")
    legacy = text_of(nb, "legacy-8576")
    assert "legacy: every order within bound 2" in legacy and "distinct failure(s)" in legacy
    variants = text_of(nb, "variants")
    assert "A: the late release" in variants and "B: the late free" in variants
    assert "replayed legacy@" in text_of(nb, "replay") and "dangling_future" in text_of(nb, "replay")
    assert "ghost_task" in text_of(nb, "legacy-ghost")
    for tag in ("fixed-8576", "fixed-ghost"):
        assert "fixed: every order within bound 2" in text_of(nb, tag)
        assert text_of(nb, tag).rstrip().endswith("no failure")
    assert "BokehModel" in widget_models(nb)


@pytest.mark.slow
def test_tasks_that_submit_lesson():
    nb = execute("06_tasks_that_submit.ipynb")
    assert "right after submit: pending" in text_of(nb, "notebook-tree")
    assert "sum: 2016 | status: finished" in text_of(nb, "notebook-tree")
    task = text_of(nb, "task-tree")
    assert "sum: 2016" in task and "client:worker:" in task and "violations: 0" in task
    deadlock = text_of(nb, "deadlock")
    assert "ThreadsExhaustedError" in deadlock and "with worker_client(): 2" in deadlock
    cancel = text_of(nb, "cancel")
    assert "executing -> cancelled" in cancel and "cancelled -> released" in cancel
    assert "on the worker afterwards: False" in cancel
    assert "leaked_key" in text_of(nb, "ff-legacy")
    assert "no failure" in text_of(nb, "ff-fixed")
    assert "right sums: notebook 50/50, in a task 50/50; violations: 0" in text_of(nb, "fifty")
