"""``pip install -e`` twice builds the JupyterLab extension once (issue 18.8).

The full check was run by hand in a scratch venv (first install: jlpm install and
build; second: "up to date: not rebuilding"); here, the freshness rule and the wiring.
"""

from __future__ import annotations

import importlib.util
import os
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("build_hook", ROOT / "labextension" / "build_hook.py")
build_hook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_hook)


def _touch(path: Path, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    os.utime(path, (mtime, mtime))


def test_up_to_date_only_when_built_after_every_source(tmp_path):
    src, built = tmp_path / "labextension", tmp_path / "built"
    for name in ("src/index.ts", "style/base.css", "package.json", "tsconfig.json", "yarn.lock"):
        _touch(src / name, 1000)
    assert not build_hook.up_to_date(src, built)  # never built
    _touch(built / "package.json", 2000)
    assert not build_hook.up_to_date(src, built)  # half built
    _touch(built / "static" / "style.js", 2000)
    assert build_hook.up_to_date(src, built)
    for name in ("src/index.ts", "style/base.css", "package.json", "yarn.lock"):
        _touch(src / name, 3000)  # an edit after the build
        assert not build_hook.up_to_date(src, built), name
        _touch(src / name, 1000)
    _touch(src / "src" / "new.ts", 3000)
    assert not build_hook.up_to_date(src, built)


def test_skipped_for_editable_installs_only(tmp_path, monkeypatch, capsys):
    import sys
    import types

    monkeypatch.setattr(build_hook, "TTY", str(tmp_path / "no-terminal"))

    calls = []
    fake = types.ModuleType("hatch_jupyter_builder")
    fake.npm_builder = lambda *a, **k: calls.append((a, k))
    monkeypatch.setitem(sys.modules, "hatch_jupyter_builder", fake)
    monkeypatch.setattr(build_hook, "up_to_date", lambda path, built: True)
    build_hook.build("wheel", "editable", path="labextension", built="out", build_cmd="build")
    assert not calls and "not rebuilding" in capsys.readouterr().out
    build_hook.build("wheel", "standard", path="labextension", build_cmd="build:prod")
    monkeypatch.setenv("JUPYTER_REFS_REBUILD", "1")
    build_hook.build("wheel", "editable", path="labextension", built="out", build_cmd="build")
    assert [c[0][1] for c in calls] == ["standard", "editable"]
    assert "built" not in calls[1][1]  # npm_builder gets its own arguments only


def test_pyproject_uses_the_hook():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    hook = config["tool"]["hatch"]["build"]["hooks"]["jupyter-builder"]
    assert hook["build-function"] == "labextension.build_hook.build"
    assert hook["editable-build-kwargs"]["built"] == "jupyter_refs/labextension"
    assert "built" not in hook["build-kwargs"]  # a wheel always builds


def test_a_build_says_it_takes_minutes_before_it_starts(tmp_path, monkeypatch, capsys):
    """Issue 46.10: five minutes of pip's spinner, with nothing said."""
    import sys
    import types

    said = []
    fake = types.ModuleType("hatch_jupyter_builder")
    fake.npm_builder = lambda *a, **k: said.append(capsys.readouterr().out)
    monkeypatch.setitem(sys.modules, "hatch_jupyter_builder", fake)
    monkeypatch.setattr(build_hook, "TTY", str(tmp_path / "no-terminal"))
    build_hook.build("wheel", "standard", path="labextension", build_cmd="build:prod")
    assert said == ["jupyter_refs: building the JupyterLab extension in labextension/ with jlpm "
                    "(install, then build:prod): this takes several minutes, about 5 on two "
                    "cores\n"]


def test_say_writes_past_pips_capture_to_the_foreground_terminal(tmp_path):
    """pip captures the build's output: the line goes to the controlling terminal, when the
    build runs in its foreground; elsewhere (none, or a terminal not ours) it is printed."""
    import subprocess
    import sys

    master, slave = os.openpty()
    child = f"""
import importlib.util, os
spec = importlib.util.spec_from_file_location("hook", {str(ROOT / "labextension" / "build_hook.py")!r})
hook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hook)
hook.TTY = {os.ttyname(slave)!r}
os.close(os.open(hook.TTY, os.O_RDWR))  # a session leader's first terminal: now its own
hook.say("to the terminal")
hook.TTY = {str(tmp_path / "none")!r}
hook.say("to stdout")
"""
    try:
        out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                             timeout=60, start_new_session=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout == "to stdout\n"
        assert b"to the terminal" in os.read(master, 1000)
    finally:
        os.close(master)
        os.close(slave)
