"""The build hook's function (pyproject: ``build-function``): hatch-jupyter-builder's
``npm_builder``, skipped for an editable install when the built extension is up to date.

``pip install -e .`` and then ``pip install -e ".[test]"`` (the README's two commands)
would otherwise run ``jlpm install`` and build the extension twice.  Up to date means:
the built extension is there, and no source of it (``src/``, ``style/``,
``package.json``, ``tsconfig.json``, ``yarn.lock``) changed after it was built.  A
wheel (``pip install .``, ``pip wheel``) always builds, for production.
``JUPYTER_REFS_REBUILD=1`` forces a build.

A build takes minutes (about 5 on two cores) while pip shows only its spinner — it
captures a build's output and prints it only with ``-v`` — so the hook says what it is
doing on the terminal itself (:func:`say`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SOURCES = ("src", "style", "package.json", "tsconfig.json", "yarn.lock")
#: Where :func:`say` writes past pip's capture (tests point it elsewhere).
TTY = "/dev/tty"
BUILT = ("package.json", "static/style.js")


def _mtimes(path: Path):
    if path.is_file():
        yield path.stat().st_mtime
    for folder, _, files in os.walk(path):
        for name in files:
            yield (Path(folder) / name).stat().st_mtime


def up_to_date(path: str | Path, built: str | Path) -> bool:
    """Whether ``built`` (the extension's output folder) is newer than every source in ``path``."""
    path, built = Path(path), Path(built)
    if not all((built / name).is_file() for name in BUILT):
        return False
    sources = [m for name in SOURCES for m in _mtimes(path / name)]
    return bool(sources) and max(sources) < min((built / name).stat().st_mtime for name in BUILT)


def say(line: str) -> None:
    """Show ``line`` on the user's terminal, past pip's capture of the build's output; with
    no terminal (CI, a notebook's ``!pip``) or in the background, print it (pip keeps it
    for ``-v`` and for a failure's report).  Never fails, never waits on the terminal."""
    try:
        fd = os.open(TTY, os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        fd = None
    if fd is not None:
        try:
            if os.tcgetpgrp(fd) == os.getpgrp():  # in the foreground: a write cannot stop us
                os.write(fd, f"\n{line}\n".encode())
                return
        except OSError:
            pass
        finally:
            os.close(fd)
    print(line, flush=True)


def build(target_name: str, version: str, path: str = ".", built: str = "", **kwargs: Any) -> None:
    from hatch_jupyter_builder import npm_builder

    if (version == "editable" and built and os.environ.get("JUPYTER_REFS_REBUILD") != "1"
            and up_to_date(path, built)):
        say(f"jupyter_refs: the JupyterLab extension in {built} is up to date with {path}/: "
            "not rebuilding (JUPYTER_REFS_REBUILD=1 forces it)")
        return
    say(f"jupyter_refs: building the JupyterLab extension in {path}/ with jlpm (install, then "
        f"{kwargs.get('build_cmd', 'build')}): this takes several minutes, about 5 on two cores")
    npm_builder(target_name, version, path=path, **kwargs)
