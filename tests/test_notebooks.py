"""The teaching notebooks run top to bottom, and show what they claim."""

from __future__ import annotations

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


def test_scatter_race_lesson():
    nb = execute("01_scatter_race.ipynb")
    assert "VIOLATION dangling_future" in text_of(nb, "legacy-refs")
    assert "forgotten" in text_of(nb, "legacy-refs")
    assert "lost data" in text_of(nb, "legacy-submit")
    assert "legacy: violation after" in text_of(nb, "legacy-loop")
    fixed = text_of(nb, "fixed-refs")
    assert "VIOLATION" not in fixed and "memory" in fixed
    assert "result: 124" in text_of(nb, "fixed-submit")
    assert "fixed: no violation in 2000 iterations" in text_of(nb, "fixed-loop")
    widgets = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert any(m["model_name"] == "BokehModel" for m in widgets.values())  # %timeline drew
