"""dask's own synchronous client tests as a yardstick for the model (issue #40).

Extracts distributed's synchronous tests — functions taking the ``c`` / ``client`` fixture, not
async, not ``gen_cluster`` — from a few of its test files (taken from dask/distributed's git
history, never copied into this project) into a temporary directory, runs them with pytest
once on real dask (dask's own fixtures: a scheduler and two one-thread workers) and once on
the model (``jupyter_refs.model()``, ``Client(n_workers=2, threads_per_worker=1)``), each test
with a time limit, and prints how many of those that pass on dask pass on the model::

    python scripts/dask_client_tests.py                     # live network
    python scripts/dask_client_tests.py --network immediate
    python scripts/dask_client_tests.py -k variable -v      # some tests, with every reason

A test that fails on the model is *loud* when a ``NotModelledError`` is among its exceptions
(the model says what it lacks), *silent* otherwise, and *hung* when it exceeded the limit.
dask's results are cached per git ref in the temporary directory (``--fresh`` reruns them).

The test modules import dask's names from ``distributed.client``, ``distributed.lock`` and
the like, which the switch leaves alone (it patches ``distributed`` and
``dask.distributed``); on the model, each such name that ``distributed`` exports is bound to
what the switch puts there, as if the module had imported it from ``distributed``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPO = Path("/work/.mirror/dask+distributed/repo")
FILES = ("test_client", "test_as_completed", "test_variable", "test_queues", "test_publish",
         "test_locks", "test_semaphore", "test_events", "test_worker_client")
FIXTURES = {"c", "client"}
ASYNC_DECORATORS = ("gen_cluster", "gen_test")

# -- extraction ------------------------------------------------------------------------------


def synchronous(node: ast.stmt) -> bool:
    """A test function dask runs with its synchronous ``client`` fixture."""
    if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
        return False
    if any(any(d in ast.unparse(dec) for d in ASYNC_DECORATORS) for dec in node.decorator_list):
        return False
    return bool(FIXTURES & {a.arg for a in node.args.args})


def extract(source: str) -> tuple[str, list[str]]:
    """The module with only its synchronous client tests (and everything that is not a test:
    imports, helpers, fixtures), and their names."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: list[tuple[int, int]] = []
    kept: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            is_test = True  # a class of tests: none takes the client fixture
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            is_test = node.name.startswith("test_")
        else:
            continue
        if not is_test:
            continue
        if synchronous(node):
            kept.append(node.name)
        else:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            drop.append((first - 1, node.end_lineno))
    for start, end in reversed(drop):
        del lines[start:end]
    return "".join(lines), kept


def git_show(repo: Path, ref: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{ref}:{path}"], check=True,
                          capture_output=True, text=True).stdout


# -- what runs inside pytest (written into the temporary directory) --------------------------

PLUGIN = textwrap.dedent('''
    """Per-test time limit, and one JSON line per test: its outcome and a one-line reason."""
    import json, os, signal, traceback

    import pytest

    LIMIT = float(os.environ["YARDSTICK_TIMEOUT"])
    OUT = os.environ["YARDSTICK_RESULTS"]
    _reports = {}


    class Hung(BaseException):
        """The test (or its fixture) ran past the time limit."""


    def _alarm(signum, frame):
        raise Hung(f"no result after {LIMIT:g} s")


    def _chain(exc):
        seen = []
        while exc is not None and exc not in seen:
            seen.append(exc)
            if isinstance(exc, BaseExceptionGroup):
                for e in exc.exceptions:
                    seen.extend(_chain(e))
            exc = exc.__cause__ or exc.__context__
        return seen


    def _kind(exc):
        chain = _chain(exc)
        if any(type(e).__name__ == "Hung" for e in chain):
            return "hung"
        if any("NotModelledError" in {t.__name__ for t in type(e).__mro__} for e in chain):
            return "loud"
        return "silent"


    def _reason(exc):
        for e in _chain(exc):
            if "NotModelledError" in {t.__name__ for t in type(e).__mro__}:
                exc = e
                break
        text = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {text[0] if text else ''}"[:160]


    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        with open(OUT + ".running", "w") as f:
            f.write(item.nodeid)
        old = signal.signal(signal.SIGALRM, _alarm)
        try:
            return (yield)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            outcome = _reports.pop(item.nodeid, {"outcome": "passed", "reason": ""})
            with open(OUT, "a") as f:
                f.write(json.dumps({"nodeid": item.nodeid, **outcome}) + "\\n")


    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(item):
        signal.setitimer(signal.ITIMER_REAL, LIMIT)
        return (yield)


    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(item, nextitem):
        signal.setitimer(signal.ITIMER_REAL, LIMIT)
        return (yield)


    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(item, call):
        report = yield
        if call.when == "call":
            signal.setitimer(signal.ITIMER_REAL, 0)
        if item.nodeid in _reports and _reports[item.nodeid]["outcome"] != "passed":
            return report  # the first failure is the one that counts
        if report.skipped:
            xfail = hasattr(report, "wasxfail")
            _reports[item.nodeid] = {"outcome": "xfailed" if xfail else "skipped",
                                     "reason": str(getattr(report, "wasxfail", "")
                                                   or report.longrepr[-1])[:160]}
        elif report.failed:
            exc = call.excinfo.value if call.excinfo else None
            _reports[item.nodeid] = (
                {"outcome": "failed", "kind": _kind(exc), "when": call.when,
                 "reason": _reason(exc)} if exc is not None else
                {"outcome": "failed", "kind": "silent", "when": call.when,
                 "reason": str(report.longrepr).strip().splitlines()[-1][:160]})
        elif call.when == "call":
            _reports[item.nodeid] = {"outcome": "passed", "reason": ""}
        return report
''')

CONFTEST_DASK = textwrap.dedent('''
    """dask's own fixtures (distributed's conftest), slow tests included."""
    from distributed.utils_test import *  # noqa: F401,F403

    pytest_plugins = ["yardstick_plugin"]
''')

CONFTEST_MODEL = textwrap.dedent('''
    """dask's fixtures, with ``client`` (and ``s``, ``a``, ``b``) pointed at the model."""
    import os

    import pytest

    from distributed.utils_test import *  # noqa: F401,F403

    import jupyter_refs
    from jupyter_refs import dropin

    pytest_plugins = ["yardstick_plugin"]
    NETWORK = os.environ["YARDSTICK_NETWORK"]


    def pytest_configure(config):
        dropin.start(network=NETWORK)


    def pytest_unconfigure(config):
        dropin.stop()


    def pytest_collection_modifyitems(items):
        """Names a test module took from distributed's submodules (distributed.client,
        distributed.lock, ...) that ``distributed`` itself exports: the switch's."""
        swapped = {id(old): name for names in dropin._saved[-1].values()
                   for name, old in names.items() if old is not dropin._MISSING}
        import distributed

        for module in {item.module for item in items}:
            for name, value in list(vars(module).items()):
                if id(value) in swapped and not name.startswith("__"):
                    setattr(module, name, getattr(distributed, swapped[id(value)]))


    @pytest.fixture
    def cluster_fixture():
        from distributed import Client

        with Client(n_workers=2, threads_per_worker=1) as client:
            cluster = client.cluster
            scheduler = {"address": cluster.scheduler_address}
            workers = [{"address": name} for name in cluster.workers]
            yield client, scheduler, workers
        assert not cluster.violations, cluster.violations


    @pytest.fixture
    def client(cluster_fixture):
        yield cluster_fixture[0]


    c = client


    @pytest.fixture
    def s(cluster_fixture):
        return cluster_fixture[1]


    @pytest.fixture
    def a(cluster_fixture):
        return cluster_fixture[2][0]


    @pytest.fixture
    def b(cluster_fixture):
        return cluster_fixture[2][1]
''')

# -- running ---------------------------------------------------------------------------------


def collect(directory: Path, env: dict[str, str], k: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
           str(directory)] + (["-k", k] if k else [])
    out = subprocess.run(cmd, cwd=directory, env=env, capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "::" in line]


def run(directory: Path, conftest: str, env: dict[str, str], timeout: float,
        k: str | None, label: str) -> dict[str, dict]:
    """Every test's outcome; a pytest that stops answering is killed, its test counted hung,
    and the rest run again."""
    (directory / "conftest.py").write_text(conftest)
    out = directory / f"results-{label}.jsonl"
    out.unlink(missing_ok=True)
    env = {**env, "YARDSTICK_RESULTS": str(out), "YARDSTICK_TIMEOUT": str(timeout)}
    todo = collect(directory, env, k)
    results: dict[str, dict] = {}
    while todo:
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=no", *todo]
        proc = subprocess.Popen(cmd, cwd=directory, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        last, seen = time.monotonic(), 0
        while proc.poll() is None:
            time.sleep(0.5)
            lines = out.read_text().splitlines() if out.exists() else []
            if len(lines) != seen:
                last, seen = time.monotonic(), len(lines)
            elif time.monotonic() - last > 2 * timeout + 30:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                running = Path(str(out) + ".running")
                nodeid = running.read_text() if running.exists() else None
                if nodeid and nodeid not in results:
                    with open(out, "a") as f:
                        f.write(json.dumps({"nodeid": nodeid, "outcome": "failed", "kind": "hung",
                                            "reason": "killed: the time limit did not stop it"})
                                + "\n")
        for line in out.read_text().splitlines() if out.exists() else []:
            record = json.loads(line)
            results[record["nodeid"]] = record
        left = [t for t in todo if t not in results]
        if len(left) == len(todo):  # nothing ran: pytest itself fails
            for t in left:
                results[t] = {"nodeid": t, "outcome": "failed", "kind": "silent",
                              "reason": "pytest did not run it (collection error?)"}
            break
        todo = left
    return results


def table(dask: dict[str, dict], model: dict[str, dict]) -> list[tuple]:
    rows: dict[str, Counter] = {}
    for nodeid, r in dask.items():
        if r["outcome"] != "passed":
            continue
        for group in ("all", nodeid.split("::")[0].removesuffix(".py")):
            row = rows.setdefault(group, Counter())
            row["dask"] += 1
            m = model.get(nodeid, {"outcome": "failed", "kind": "silent"})
            row["model" if m["outcome"] == "passed" else m.get("kind", "silent")] += 1
    return [(g, rows[g]) for g in sorted(rows, key=lambda g: (g != "all", g))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--network", choices=("live", "immediate"), default="live")
    p.add_argument("--ref", default="2026.7.1", help="distributed's git ref for its test files")
    p.add_argument("--repo", type=Path, default=REPO, help="dask/distributed's git repository")
    p.add_argument("--timeout", type=float, default=30, help="seconds per test")
    p.add_argument("-k", help="pytest -k expression: run only these tests")
    p.add_argument("--fresh", action="store_true", help="rerun dask, not its cached results")
    p.add_argument("--keep", action="store_true", help="keep the extracted tests (path printed)")
    p.add_argument("-v", "--verbose", action="store_true", help="list skipped and dask's failures")
    args = p.parse_args()

    cache = Path(tempfile.gettempdir()) / "jupyter_refs_yardstick"
    cache.mkdir(exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="dask_client_tests_"))
    names: dict[str, list[str]] = {}
    for name in FILES:
        source, kept = extract(git_show(args.repo, args.ref, f"distributed/tests/{name}.py"))
        (directory / f"{name}.py").write_text(source)
        names[name] = kept
    (directory / "yardstick_plugin.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(directory)]),
           "PYTHONDONTWRITEBYTECODE": "1", "YARDSTICK_NETWORK": args.network}
    env.pop("PYTEST_ADDOPTS", None)

    cached = cache / f"dask-{args.ref}.json"
    dask = json.loads(cached.read_text()) if cached.exists() and not args.fresh else {}
    wanted = set(collect(directory, {**env, "YARDSTICK_RESULTS": "-", "YARDSTICK_TIMEOUT": "1"},
                         args.k))
    if not wanted <= dask.keys():
        print(f"running on real dask (distributed {args.ref}'s tests) ...", file=sys.stderr)
        dask.update(run(directory, CONFTEST_DASK, env, args.timeout, args.k, "dask"))
        cached.write_text(json.dumps(dask))
    dask = {k: v for k, v in dask.items() if k in wanted}
    print(f"running on the model ({args.network}) ...", file=sys.stderr)
    model = run(directory, CONFTEST_MODEL, env, args.timeout, args.k, "model")

    functions = sum(len(v) for v in names.values())
    print(f"\ndistributed {args.ref}: {functions} synchronous client tests, {len(dask)} cases; "
          f"model on the {args.network} network\n")
    head = ("file", "pass on dask", "pass on model", "%", "loud", "silent", "hung")
    rows = table(dask, model)
    print("| " + " | ".join(head) + " |\n|" + "---|" + "---:|" * (len(head) - 1))
    for group, row in rows:
        pct = f"{100 * row['model'] / row['dask']:.0f}" if row["dask"] else "-"
        print(f"| {group} | {row['dask']} | {row['model']} | {pct} | {row['loud']} | "
              f"{row['silent']} | {row['hung']} |")
    other = Counter(r["outcome"] for r in dask.values() if r["outcome"] != "passed")
    print("\nnot passing on dask (left out): "
          + (", ".join(f"{n} {o}" for o, n in sorted(other.items())) or "none"))
    print("\nfailing on the model (tests that pass on dask):")
    for nodeid in sorted(dask):
        if dask[nodeid]["outcome"] != "passed":
            continue
        m = model.get(nodeid, {"outcome": "failed", "kind": "silent", "reason": "not run"})
        if m["outcome"] != "passed":
            print(f"  {m.get('kind', m['outcome']):6} {nodeid}: {m['reason']}")
    if args.verbose:
        print("\nnot passing on dask:")
        for nodeid, r in sorted(dask.items()):
            if r["outcome"] != "passed":
                print(f"  {r['outcome']:7} {nodeid}: {r['reason']}")
    if args.keep:
        print(f"\nextracted tests kept in {directory}")
    else:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
