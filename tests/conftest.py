"""Fixtures shared by the tests."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from jupyter_refs import Cluster


@pytest.fixture
def manual_cluster(request):
    clusters = []

    def make(protocol: str = "legacy", workers: int = 1) -> Cluster:
        c = Cluster(protocol=protocol, workers=workers, network="manual")
        clusters.append(c)
        return c

    yield make
    for c in clusters:
        c.close()


@pytest.fixture(scope="module")
def kernel():
    """A real IPython kernel (jupyter_client), one per test module: what a front end talks to."""
    pytest.importorskip("jupyter_client")
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# -- what is tested, said at the top of the run ------------------------------------------------

def pytest_report_header(config):
    import shutil

    import jupyter_refs

    try:
        import distributed
        dask = f"distributed {distributed.__version__}"
    except ImportError:
        dask = "distributed missing: the dask tests skip"
    chromium = shutil.which("chromium") or "missing: the browser tests skip (CI fails)"
    return [f"jupyter_refs {jupyter_refs.__version__} from {Path(jupyter_refs.__file__).parent}",
            f"{dask}; chromium: {chromium}",
            "a full run takes about 30 minutes on 2 cores, the browser tests (tests/browser/) last; "
            "the slowest are listed at the end; the fast suite (under 3 minutes): -m 'not slow and "
            "not dask and not conformance' --ignore=tests/browser"]


def pytest_collection_modifyitems(config, items):
    """Browser tests last: everything quick reports first."""
    items.sort(key=lambda item: "browser" in str(item.fspath))


# -- a test run leaves the work tree as it found it -------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def _tree_state() -> dict[str, str] | None:
    """What ``git status`` shows, with a hash of each file it names; None outside a checkout."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    state = {}
    for line in out.stdout.splitlines():
        path = ROOT / line[3:].split(" -> ")[-1].strip('"')
        digest = hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else "-"
        state[line[3:]] = f"{line[:2]} {digest}"
    return state


def pytest_sessionstart(session):
    session.config.stash[_TREE] = _tree_state()


def pytest_sessionfinish(session, exitstatus):
    before, after = session.config.stash.get(_TREE, None), _tree_state()
    if before is None or after is None:
        return
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    if changed:
        session.config.stash[_CHANGED] = changed
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    changed = config.stash.get(_CHANGED, None)
    if changed:
        terminalreporter.section("the test run changed the work tree", red=True)
        terminalreporter.line("tests must write to temporary folders (tmp_path); changed:")
        for path in changed:
            terminalreporter.line(f"  {path}")


_TREE = pytest.StashKey[dict | None]()
_CHANGED = pytest.StashKey[list]()


@pytest.fixture
def dask_cli(tmp_path):
    """``start(workers, *worker_args)``: a ``dask scheduler`` and ``workers`` ``dask worker``
    processes on 127.0.0.1 (free ports), the layout of a multi-machine cluster.  Returns the
    scheduler file to connect with; every process is ended after the test."""
    import os
    import shutil
    import sys
    import time

    if shutil.which("dask") is None:
        pytest.skip("the dask command line comes with dask")
    procs: list[subprocess.Popen] = []
    # The plugins travel pickled by reference: the processes import the jupyter_refs under
    # test (this checkout), not whichever one is installed.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
             "env": {**os.environ, "PYTHONPATH": path}}

    def start(workers: int = 1, *worker_args: str, timeout: float = 60.0) -> Path:
        sched_file = tmp_path / "scheduler.json"
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--dashboard-address", ":0", "--scheduler-file", str(sched_file)],
            **quiet))
        deadline = time.monotonic() + timeout
        while not sched_file.exists():
            if time.monotonic() > deadline or procs[0].poll() is not None:
                raise RuntimeError(f"dask scheduler did not start within {timeout} s")
            time.sleep(0.1)
        for _ in range(workers):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                 str(sched_file), "--host", "127.0.0.1", "--nthreads", "1",
                 "--dashboard-address", ":0", *worker_args], **quiet))
        return sched_file

    try:
        yield start
    finally:
        # One grace period for all, then SIGKILL: a ``dask worker`` whose peer was killed can
        # sit in asyncio's cancelling of its tasks for 30 s and more after SIGTERM (py-spy:
        # ``Runner.close`` -> ``_cancel_all_tasks``), and a wait of its own for each such
        # worker made the eight-worker test's teardown 180 s.  Nothing a test reads is there.
        for p in reversed(procs):
            p.terminate()
        deadline = time.monotonic() + 10
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=30)


@pytest.fixture(scope="module")
def inproc():
    """A client of a one-worker in-process dask cluster, shared by a module's tests."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        yield client
