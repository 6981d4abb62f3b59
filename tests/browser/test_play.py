"""Be the scheduler, in real JupyterLab (issue 42): a scripted student plays lesson 1's game.

The notebook holds lesson 1's own game cell (read from the lesson by its tag), then a prediction
left unanswered.  Run All draws the game and stops at the prediction with one line; the student
then selects messages in the widget's "in flight" list and presses "deliver selected", in the
shortest order that loses the future, and the widget says the goal is reached.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from lab import browser, jupyter_lab, new_page, run_notebook_in_lab, write_notebook

LESSON_1 = Path(__file__).resolve().parents[2] / "notebooks" / "01_scatter_race.ipynb"
#: The shortest order that makes form A of #8576 (tests/test_game.py finds the same by hand).
FORM_A = ["scatter", "update-data", "update-data-reply", "scatter-reply", "client-releases-keys"]

OUTPUTS = """() => {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
    const out = [];
    for (let i = 0; i < cells.length; i++) {
        for (const o of cells.get(i).toJSON().outputs || []) {
            out.push(typeof o.text === 'string' ? o.text : (o.text || []).join(''));
            if (o.output_type === 'error') {
                out.push(o.ename + ': ' + o.evalue + ' | ' + o.traceback.join('\\n'));
            }
        }
    }
    return out.join('\\n');
}"""


def game_cell() -> str:
    nb = nbformat.read(LESSON_1, as_version=4)
    return next(c.source for c in nb.cells if "game" in c.metadata.get("tags", []))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("game")
    write_notebook(root / "game.ipynb", [
        game_cell(),
        'guess = course.predict(..., "01-1")  # left unanswered, as a student who runs all',
        'print("ran past the prediction")',
    ])
    with browser() as b, jupyter_lab(root) as url:
        yield url, b


def test_a_student_wins_the_game_by_delivering_by_hand(lab):
    url, b = lab
    with new_page(b) as page:
        run_notebook_in_lab(page, url, "game.ipynb")
        status = page.locator(".jupyter-refs-goal")
        status.wait_for(timeout=90_000)
        assert "0 of 6 deliveries used" in status.inner_text()
        # Run All stopped at the prediction: one line, no traceback, the next cell not run.
        page.wait_for_function(f"() => ({OUTPUTS})().includes('NoGuessError')", timeout=30_000)
        outputs = page.evaluate(OUTPUTS)
        assert "NoGuessError: prediction '01-1': write your guess" in outputs
        assert "Traceback" not in outputs and "ran past the prediction" not in outputs
        select = page.locator(".widget-select select").first
        deliver = page.locator("button", has_text="deliver selected").first
        for n, op in enumerate(FORM_A, 1):
            labels: list[str] = []
            for _ in range(100):  # the list follows the kernel: wait for the message to be there
                labels = [t.replace("\xa0", " ") for t in select.locator("option").all_inner_texts()]
                if any(f" {op}[" in label for label in labels):
                    break
                page.wait_for_timeout(100)
            found = [i for i, label in enumerate(labels) if f" {op}[" in label]
            assert found, (op, labels, page.locator(".jupyter-refs-goal").inner_text())
            index = found[0]
            select.select_option(index=index)
            deliver.click()
            if n < len(FORM_A):
                page.wait_for_function(
                    "n => document.querySelector('.jupyter-refs-goal').innerText"
                    ".includes(n + ' of 6 deliveries used')", arg=n, timeout=30_000)
        page.wait_for_function("() => document.querySelector('.jupyter-refs-goal-won') !== null",
                               timeout=30_000)
        won = status.inner_text()
        assert "Goal reached in 5 deliveries (budget 6)" in won and "dangling_future" in won
        page.wait_for_function(  # the game is over: no more deliveries
            "() => [...document.querySelectorAll('button')].some("
            "b => b.textContent.includes('deliver selected') && b.disabled)", timeout=10_000)
        shots = os.environ.get("JUPYTER_REFS_SCREENSHOTS")  # docs/screenshots.py sets it
        if shots:
            page.locator(".jp-Cell-outputArea").first.screenshot(path=str(Path(shots) / "game.png"))
