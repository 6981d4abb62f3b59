"""The code stays ruff clean, and CI runs exactly the README's test command."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is installed by the test extra")
def test_ruff_clean():
    result = subprocess.run(["ruff", "check", "."], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_ci_runs_the_readme_test_command():
    main_job, tests = readme_commands()[:2]
    assert "jupyter-refs demo scatter-race" in main_job
    assert tests in (ROOT / ".ci" / "run").read_text()
