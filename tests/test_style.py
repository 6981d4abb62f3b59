"""The code stays ruff clean, and CI runs exactly the README's test command."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

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


def test_checkpoints_are_ignored():
    """JupyterLab's autosave folder next to a notebook stays out of git."""
    assert subprocess.run(["git", "check-ignore", "-q", "notebooks/.ipynb_checkpoints/x-checkpoint.ipynb"],
                          cwd=ROOT).returncode == 0


@pytest.mark.slow
def test_a_run_that_writes_into_the_tree_fails(tmp_path):
    """The guard in tests/conftest.py: a test run must leave ``git status`` as it found it."""
    import os

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "conftest.py", repo / "tests" / "conftest.py")
    (repo / ".gitignore").write_text("__pycache__/\n")
    (repo / "tracked.txt").write_text("as committed\n")
    (repo / "tests" / "test_it.py").write_text(
        "from pathlib import Path\n"
        "ROOT = Path(__file__).resolve().parents[1]\n"
        "def test_tmp(tmp_path):\n    (tmp_path / 'fine.txt').write_text('x')\n"
        "def test_tracked():\n    (ROOT / 'tracked.txt').write_text('rewritten')\n"
        "def test_new():\n    (ROOT / 'new.png').write_bytes(b'png')\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(git + cmd, cwd=repo, check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def run(*tests):
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               *[f"tests/test_it.py::{t}" for t in tests]],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=120)

    clean = run("test_tmp")
    assert clean.returncode == 0, clean.stdout
    dirty = run("test_tmp", "test_tracked", "test_new")
    assert dirty.returncode == 1 and "3 passed" in dirty.stdout
    assert "the test run changed the work tree" in dirty.stdout
    assert "tracked.txt" in dirty.stdout and "new.png" in dirty.stdout
    # Already modified before the run and rewritten again: still caught.
    again = run("test_tracked")
    assert again.returncode == 0  # the same content: nothing changed
    (repo / "tracked.txt").write_text("edited by hand\n")
    assert run("test_tracked").returncode == 1


def test_a_long_run_shows_progress():
    """Issue 18.8: minutes of dots.  Each test is named as it starts, the slowest are listed,
    a header says what is tested, and CI says what it runs and how long it took."""
    import tomllib

    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert {"-v", "--durations=15"} <= set(addopts["addopts"].split())
    ci = (ROOT / ".ci" / "run").read_text()
    assert "== install" in ci and "== done in" in ci
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                             "tests/test_style.py"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert "a full run takes about 30 minutes on 2 cores" in result.stdout  # measured: 29 (2026-12-07)
    assert "extension: about 5 minutes), then every test: about 30 minutes" in ci  # issue 46.10
