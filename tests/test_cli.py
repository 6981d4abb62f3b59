"""The command-line demo: the main job of the README."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jupyter_refs import Trace
from jupyter_refs.cli import main


def test_demo_legacy_shows_the_violation(tmp_path, capsys):
    out = tmp_path / "trace.json"
    assert main(["demo", "scatter-race", "--protocol", "legacy", "--seed", "3", "--out", str(out)]) == 0
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
    assert bad.returncode == 2 and "unknown protocol 'nope'" in bad.stderr


@pytest.mark.parametrize("seed", range(41))
def test_demo_survives_every_seed_and_writes_the_trace(seed, tmp_path, capsys):
    """Issue 18.1: seeds whose worker lost the data (variant B) once ended in a LookupError."""
    out = tmp_path / "trace.jsonl"
    assert main(["demo", "scatter-race", "--seed", str(seed), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "first violation:" in text
    assert "next computation on the held future: inc(x)" in text
    assert f"trace written to {out}" in text
    assert len(Trace.from_jsonl(out.read_text())) > 10


def _usage_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err.strip().splitlines()[-1]


def test_out_is_checked_before_the_run(tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr("jupyter_refs.cli.scatter_race", lambda *a, **k: ran.append(1))
    missing = tmp_path / "nope" / "trace.json"
    assert "does not exist" in _usage_error(["demo", "scatter-race", "--out", str(missing)], capsys)
    line = _usage_error(["demo", "scatter-race", "--out", str(tmp_path / "t.txt")], capsys)
    assert ".json" in line and ".jsonl" in line and "not .txt" in line
    assert not ran and not list(tmp_path.iterdir())


@pytest.mark.parametrize("out", ["/proc/t.json", "/sys/t.json"])
def test_an_unwritable_out_stops_before_the_run_in_one_line(out, capsys, monkeypatch):
    """Issue 46.5: the whole demo ran, then writing the trace ended in a 67-line traceback
    (FileNotFoundError on /proc, PermissionError on /sys)."""
    ran = []
    monkeypatch.setattr("jupyter_refs.cli.scatter_race", lambda *a, **k: ran.append(1))
    with pytest.raises(SystemExit) as exc:
        main(["demo", "scatter-race", "--out", out])
    assert exc.value.code == 2 and not ran
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [captured.err.strip()]
    assert f"cannot write the trace to {out!r}: " in captured.err


def test_an_existing_out_is_left_as_it_was_until_written(tmp_path, capsys, monkeypatch):
    """The check opens the file: an existing trace keeps its bytes, a new name leaves no file."""
    monkeypatch.setattr("jupyter_refs.cli.demo_scatter_race", lambda args: 0)
    old = tmp_path / "old.json"
    old.write_text("{}")
    assert main(["demo", "scatter-race", "--out", str(old)]) == 0
    assert main(["demo", "scatter-race", "--out", str(tmp_path / "new.jsonl")]) == 0
    assert old.read_text() == "{}" and [p.name for p in tmp_path.iterdir()] == ["old.json"]


@pytest.mark.parametrize("bad", ["-3", "0", "many"])
def test_iterations_must_be_positive(bad, capsys):
    line = _usage_error(["demo", "scatter-race", "--iterations", bad], capsys)
    assert "--iterations" in line and ("at least 1" in line or "not a whole number" in line)


def test_help_names_every_option_with_its_default(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "scatter-race", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option, default in [("--protocol", "dask"), ("--seed", "0"), ("--network", "random"),
                            ("--iterations", "200")]:
        assert option in text
        assert f"(default: {default})" in text
    assert "--out FILE" in text and "Chrome trace" in text


def test_version(capsys):
    from jupyter_refs import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"jupyter-refs {__version__}"


def test_a_dependency_freed_under_the_scheduler_times_out_as_on_dask(tmp_path, capsys):
    """Seed 1: the scheduler still places x on the worker that freed it.  dask's worker then
    waits for ever (asking where x is), so ``result(timeout=…)`` raises TimeoutError: the model
    says the same, and why, instead of a LookupError dask never raises."""
    from jupyter_refs import MissingDataError

    assert issubclass(MissingDataError, TimeoutError)
    assert main(["demo", "scatter-race", "--seed", "1", "--out", str(tmp_path / "t.json")]) == 0
    text = capsys.readouterr().out
    assert "inc(x) raised MissingDataError" in text and "real dask would wait for ever" in text
    assert "LookupError" not in text
