"""Each promise a violation breaks is declared once, in ``promises.py``, and judged somewhere."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from jupyter_refs import checks, promises, why

explore = importlib.import_module("jupyter_refs.explore")  # the package exports the function

ROOT = Path(__file__).resolve().parents[1]


def _reported_names() -> set[str]:
    """The violation names ``checks.py`` passes to ``Checks._report``, read from its code."""
    tree = ast.parse((ROOT / "jupyter_refs" / "checks.py").read_text())
    return {call.args[0].value for call in ast.walk(tree)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "_report" and call.args
            and isinstance(call.args[0], ast.Constant)}


def test_every_name_the_checks_report_is_declared_and_every_declared_check_is_judged():
    reported = _reported_names()
    assert reported == promises.CHECKED
    assert checks.NAMES is promises.CHECKED


def test_the_explorer_judges_the_promises_declared_for_it():
    assert {explore.SCENARIO_RAISED, explore.OUTCOME_DIFFERS} == {
        p.name for p in promises.PROMISES if p.judge == "explore"}


def test_the_dask_explorer_judges_what_is_declared_for_it():
    dask_explore = importlib.import_module("jupyter_refs.dask.explore")
    assert promises.BY_NAME[dask_explore.DASK_RAISED].judge == "dask"
    assert dask_explore.DANGLING_FUTURE in promises.CHECKED


def test_why_ranks_every_promise_and_only_those():
    assert why._LOSSES == promises.RANKED
    assert len(set(promises.RANKED)) == len(promises.RANKED)


def test_the_reference_table_names_every_check():
    table = (ROOT / "docs" / "model.md").read_text()
    missing = [name for name in promises.CHECKED if f"| `{name}` |" not in table]
    assert not missing, f"docs/model.md's table of checks lacks {missing}"
