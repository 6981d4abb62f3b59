"""Confirm a zoo race on the real release of distributed it affects, in a venv of its own.

Not a test and not run in CI: it installs old releases from PyPI.  Run from a checkout:

    python scripts/confirm_in_release.py [--race 7498] [--venv DIR] [--no-contrast]

For the race (``jupyter_refs.zoo.RACES``) it makes a venv with ``distributed==<release>`` and
``dask==<release>`` (the release its ``found_under`` protocol models: 2024.8.1 for the ghost
task, dask#7498) and the project's runtime dependencies, with this checkout on ``PYTHONPATH``
(no build of the JupyterLab extension).  Inside that venv it explores the race's scenario on
the model under its release, takes the race's failure, and ``confirm``s it on a real
in-process ``LocalCluster`` of that release: the model's message order forced by the holds.
With the contrast (the default), the same order is then forced once on the first release
that shipped the fix (``absent_under``, 2024.8.2 for the ghost), in a second venv.

A race ``confirm`` cannot force in process has a probe of its own, run in the venvs instead
(:data:`PROBES`): PR 8522's needs worker processes with nannies, and a heartbeat answered
before the scheduler's ``close``.  A race no release had (found under a development version,
``dask-1.17.0.dev0``) has nothing to install, and says so.

``--venv DIR`` keeps the venvs under DIR (``DIR/distributed-<release>``) and reuses them on
the next run; without it they go in a temporary directory, removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Races confirmed by a probe of their own (a script needing only distributed), not ``confirm``.
PROBES = {"8522": ROOT / "scripts" / "dask_8522_probe.py"}


def _release(protocol: str) -> str | None:
    return protocol.removeprefix("dask-") if protocol.startswith("dask-") else None


def _runtime_deps() -> list[str]:
    """pyproject's dependencies, less dask (the venv gets the release's own)."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if not d.replace(" ", "").startswith(("dask>", "dask=", "dask<"))
            and d.strip() != "dask"]


def _venv(base: Path, release: str) -> Path:
    """A venv with distributed and dask of ``release`` (made once under ``base``)."""
    venv = base / f"distributed-{release}"
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import distributed, dask; print(distributed.__version__, "
             "dask.__version__)"]
    if python.exists():
        got = subprocess.run(check, capture_output=True, text=True)
        if got.returncode == 0 and got.stdout.split() == [release, release]:
            print(f"[venv] reusing {venv}", flush=True)
            return python
    t = time.monotonic()
    print(f"[venv] making {venv}: distributed=={release} dask=={release}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          f"distributed=={release}", f"dask=={release}", *_runtime_deps()],
                         capture_output=True, text=True)
    if pip.returncode:
        sys.stderr.write(pip.stdout + pip.stderr)
        raise SystemExit(f"pip could not install distributed=={release} in {venv}")
    subprocess.run(check, check=True)
    print(f"[venv] ready in {time.monotonic() - t:.0f} s", flush=True)
    return python


def outside(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ROOT))  # this checkout's zoo, whatever the interpreter has installed
    from jupyter_refs.zoo import RACES

    race = RACES[args.race]
    release = args.release or _release(race.found_under)
    if release is None:
        raise SystemExit(f"race {race.name} is found under {race.found_under!r}, not a "
                         "release: give --release")
    if ".dev" in release:
        raise SystemExit(
            f"race {race.name} affects no release of distributed: {race.found_under} models the "
            f"development state before its fix ({race.releases}); nothing to install (the fix "
            "holding on today's release is checked by tests/test_zoo.py)")
    fixes = [r for r in map(_release, race.absent_under) if r]
    runs = [release] + (fixes[:1] if args.contrast else [])
    base = Path(args.venv) if args.venv else Path(tempfile.mkdtemp(prefix="jr-release-"))
    base.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    t0 = time.monotonic()
    rc = 0
    try:
        for real in runs:
            python = _venv(base, real)
            print(f"\n=== race {race.name} under {race.found_under}, forced on real distributed "
                  f"{real}{' (the fix: contrast)' if real != release else ''} ===", flush=True)
            # The fix gets the one order that confirms on the release (the schedule's own
            # overtakes): the other orders of ``confirm``'s retries are other races.
            attempts = args.attempts if real == release else 1
            if race.name in PROBES:
                rc |= subprocess.run([str(python), str(PROBES[race.name]), "--runs",
                                      str(attempts)], env=env, cwd=ROOT).returncode
                continue
            rc |= subprocess.run([str(python), __file__, "--inside", "--race", race.name,
                                  "--protocol", race.found_under, "--attempts", str(attempts)],
                                 env=env, cwd=ROOT).returncode
    finally:
        if not args.venv:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\n[total {time.monotonic() - t0:.0f} s]")
    return rc


def inside(args: argparse.Namespace) -> int:
    """In the release's venv: explore on the model, confirm on real dask, say what it did."""
    import logging

    import distributed

    import jupyter_refs
    from jupyter_refs.dask.confirm import confirm
    from jupyter_refs.zoo import RACES

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    print(f"distributed {distributed.__version__}, jupyter_refs from "
          f"{Path(jupyter_refs.__file__).parent}")
    race = RACES[args.race]
    t = time.monotonic()
    found = race.failures(race.find(args.protocol, first=True, processes=1))
    if not found:
        print(f"the model under {args.protocol} did not find race {race.name}")
        return 1
    failure = found[0]
    print(f"model ({time.monotonic() - t:.1f} s): {failure.explain().splitlines()[0]}")
    for line in failure.explain().splitlines()[1:2]:
        print(f"  {line.strip()}")
    t = time.monotonic()
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        result = confirm(race.scenario, failure, client, attempts=args.attempts, stall=1.0,
                         timeout=30)
    print(f"real dask ({time.monotonic() - t:.1f} s, {result.attempts} run(s)):")
    print(f"  verdict:   {result}")
    print(f"  confirmed: {result.confirmed}; enforced: {result.enforced}")
    for said in result.overtakes:
        print(f"  forced:    {said}")
    if not result.overtakes:
        print("  forced:    nothing: the schedule's overtakes are task runs only, which are not "
              "steered; real dask ran in its own order")
    for said in result.unmet:
        print(f"  unmet:     {said}")
    print(f"  scenario:  {result.outcome}")
    for v in result.violations:
        print(f"  showed:    {v.name} on {v.key}: {v.explanation[:400]}")
    if not result.violations:
        print("  showed:    no violation")
    failed = [e for e in result.trace.events() if e.kind == "hook.failed"]
    for e in failed:
        print(f"  adapter:   hook failed: {e.data}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--race", default="7498", help="a race of jupyter_refs.zoo (default 7498)")
    p.add_argument("--release", help="the distributed release to install (default: the one "
                   "the race's found_under models)")
    p.add_argument("--venv", help="keep (and reuse) the venvs under this directory")
    p.add_argument("--no-contrast", dest="contrast", action="store_false",
                   help="skip forcing the same order on the fixing release")
    p.add_argument("--attempts", type=int, default=3, help="confirm's runs (default 3)")
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--protocol", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    return inside(args) if args.inside else outside(args)


if __name__ == "__main__":
    sys.exit(main())
