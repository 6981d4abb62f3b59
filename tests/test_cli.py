"""The command-line demo: the main job of the README."""

from __future__ import annotations

import json
import subprocess
import sys

from jupyter_refs import Trace
from jupyter_refs.cli import main


def test_demo_legacy_shows_the_violation(tmp_path, capsys):
    out = tmp_path / "trace.json"
    assert main(["demo", "scatter-race", "--protocol", "legacy", "--seed", "1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "first violation: dangling_future" in text
    assert "client-releases-keys" in text and "transition memory → forgotten" in text
    assert "lost dependencies" in text
    assert "traceEvents" in json.loads(out.read_text())


def test_demo_fixed_has_none(tmp_path, capsys):
    out = tmp_path / "trace.jsonl"
    assert main(["demo", "scatter-race", "--protocol", "fixed", "--seed", "1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "no violation in 200 iterations" in text
    assert len(Trace.from_jsonl(out.read_text())) > 1000


def test_console_script_runs():
    result = subprocess.run([sys.executable, "-m", "jupyter_refs.cli", "demo", "scatter-race"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "dangling_future" in result.stdout
    bad = subprocess.run([sys.executable, "-m", "jupyter_refs.cli", "demo", "scatter-race",
                          "--protocol", "nope"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
