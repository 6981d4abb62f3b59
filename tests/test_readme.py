"""The README's code blocks, run as written: users paste them.

Every fenced ``bash`` and ``python`` block is run, in a temporary folder (the
blocks write ``trace.json``, ``race.json``, ``race.html``).  Python blocks that
use magics or ``display`` run in a real IPython kernel, the others as a script;
the dask blocks get a real scheduler and worker on 127.0.0.1, started by the
README's own bash block (on a free port: parallel runs must not collide).  The
two commands at the top are checked without recursing: ``pip`` and the test run
are stand-ins, and ``.ci/run`` must hold the second command exactly.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = [(m["lang"], m["code"]) for m in
          re.finditer(r"^```(?P<lang>\w*)\n(?P<code>.*?)^```", README, re.S | re.M)]
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
BASH = [code for lang, code in BLOCKS if lang == "bash"]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}


def block(*needles: str, lang: str = "python") -> str:
    found = [code for lg, code in BLOCKS if lg == lang and all(n in code for n in needles)]
    assert len(found) == 1, f"{len(found)} {lang} blocks hold {needles}"
    return found[0]


def test_every_block_is_covered():
    assert {lang for lang, _ in BLOCKS} == {"bash", "python", ""}  # "": printed output, not code
    covered = {block("from jupyter_refs import Cluster\n"), block("%load_ext jupyter_refs"),
               block("explore(race"), block("attach(client)"), block("Timeline(cluster), RefsTable"),
               block("jupyter_refs.model(")}
    assert covered == set(PYTHON)
    assert {block("pip install", lang="bash"), block("dask scheduler", lang="bash")} == set(BASH)


def run_script(code: str, cwd: Path, timeout: float = 120) -> str:
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=ENV, capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr
    return result.stdout


# -- the two commands at the top --------------------------------------------------------------

STAND_INS = """
pip() { echo "pip $*" >> "$LOG"; }
apt-get() { echo "apt-get $*" >> "$LOG"; }
python() { if [ "$1 $2" = "-m pytest" ]; then echo "pytest $*" >> "$LOG"; else command python "$@"; fi; }
"""


def test_the_first_commands(tmp_path):
    code = block("pip install", lang="bash")
    lines = code.strip().splitlines()
    assert len(lines) == 2
    assert lines[1] in (ROOT / ".ci" / "run").read_text().splitlines()  # CI runs exactly this
    log = tmp_path / "log"
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", STAND_INS + code], cwd=tmp_path,
                            env={**ENV, "LOG": str(log)}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "first violation: dangling_future" in result.stdout
    assert (tmp_path / "trace.json").stat().st_size > 10_000  # the demo ran, for real
    calls = log.read_text().splitlines()
    assert calls[0] == "pip install -e ." and calls[-1] == "pytest -m pytest"
    assert 'pip install -e .[test]' in calls
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r"^test = \[", pyproject, re.M)  # the extra the second command names


# -- python, as a script --------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", ["dask", "fixed"])
def test_the_cluster_example(tmp_path, protocol):
    """As written, and with "fixed" as its comment invites."""
    code = block("from jupyter_refs import Cluster\n")
    if protocol == "fixed":
        assert 'protocol="dask"' in code and '# or "fixed"' in code
        code = code.replace('protocol="dask"', 'protocol="fixed"')
    out = run_script(code, tmp_path)
    if protocol == "fixed":
        assert out.strip() == "no violation in 200 iterations"
    else:  # the live network races at random: most runs break, a quiet one may not
        assert "dangling_future" in out or "refcount_mismatch" in out or "no violation" in out
    assert (tmp_path / "race.json").exists()


def test_the_dask_program_example(tmp_path):
    """The program the README says runs unchanged prints what its comments say."""
    out = run_script(block("jupyter_refs.model("), tmp_path).splitlines()
    assert re.fullmatch(r"<Future: finished, type: int, key: sum-[0-9a-f]{32}> 6", out[0])
    assert out[1] == "{'a': 1, 'b': (2, 7)}"


def test_the_shown_race_is_true():
    """"What it shows": the printed order happens on the model (a manual network, delivered as
    shown), event for event; it is not the order that wins lesson 1's game within its 6
    deliveries (review 5: the README gave the game's answer)."""
    from jupyter_refs import Cluster
    from jupyter_refs.views.text import format_events

    shown = next(code for lang, code in BLOCKS if lang == "" and "VIOLATION dangling_future" in code)
    order = re.findall(r"← recv #\d+ ([\w-]+)", shown)
    assert len(order) == 7  # one more than the game's budget
    with Cluster(protocol="dask", network="manual") as cluster:
        client = cluster.client()
        x = client.scatter(123)
        cluster.run_until_idle()
        since = cluster.trace.next_seq
        del x
        x = client.scatter(123)
        for n, op in enumerate(order, 1):
            cluster.deliver(next(m for m in cluster.in_flight if m.op == op).msg_id)
            # review 6: the violation comes with the 7th delivery, past the game's budget
            assert bool(cluster.violations) == (n == 7), (n, op, cluster.violations)
        cluster.trace.flush()
        trace = format_events(cluster.trace.events(since=since))
        assert [v.name for v in cluster.violations] == ["dangling_future"] and x.status == "finished"
        assert x.key in cluster.workers["worker:0"].data  # the worker holds the new copy
    for line in shown.strip().splitlines():
        actor, rest = line.split(None, 1)
        rest = re.sub(r"\s+\(.*\)$", "", rest)  # a comment
        parts = re.split(r" … |, ", rest.replace("memory → released → forgotten",
                                                 "memory → released, released → forgotten"))
        for part in parts:
            assert re.search(rf"{re.escape(actor)}\s+\S+\s+.*{re.escape(part)}", trace), (part, trace)


def test_the_explore_example(tmp_path):
    code = block("explore(race")
    out = run_script(code + "\nprint('---')\nprint(run.violations[0].name)\n", tmp_path)
    schedules, _, rest = out.partition("---")
    assert schedules.split()[:2] == ["dask@8a52c2:5>1", "dask@8a52c2:1>1,2>1,3>1"]
    # What the README says of the second: the scatter RPC passing the queued release.
    assert "#7 scatter on rpc:client:1#2 was delivered before #6 client-releases-keys" in out
    assert rest.split() == ["dangling_future"]


# -- python, in a real kernel ---------------------------------------------------------------------

@pytest.fixture
def kernel_in(tmp_path):
    """A real IPython kernel whose working directory is a temporary folder."""
    pytest.importorskip("jupyter_client")
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(tmp_path), env=ENV)
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run_in_kernel(kc, code: str, timeout: float = 120) -> str:
    """Run ``code`` as one cell; its text output.  An error in the cell fails the test."""
    out, errors = [], []

    def hook(msg):
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind in ("execute_result", "display_data"):
            out.append(content["data"].get("text/plain", "") + "\n")
        elif kind == "error":
            errors.append(f"{content['ename']}: {content['evalue']}")

    reply = kc.execute_interactive(code, output_hook=hook, timeout=timeout)
    assert reply["content"]["status"] == "ok" and not errors, (errors, "".join(out)[-2000:])
    return "".join(out)


def test_the_magics_block(kernel_in):
    """Pasted as one cell, comments and all: every line of the README's walk-through runs."""
    out = run_in_kernel(kernel_in, block("%load_ext jupyter_refs"))
    assert "VIOLATION dangling_future" in out
    assert "unrecognized arguments" not in out
    # The last line swapped in a fixed cluster.
    assert "fixed" in run_in_kernel(kernel_in, "print(cluster.variant.name)")


def test_the_timeline_block(kernel_in, tmp_path):
    run_in_kernel(kernel_in, block("Timeline(cluster), RefsTable"))
    assert (tmp_path / "race.html").stat().st_size > 10_000


# -- the dask blocks: the README's own scheduler and worker, on a free port ------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.dask
@pytest.mark.slow
def test_the_dask_blocks(tmp_path):
    pytest.importorskip("distributed")
    port = str(_free_port())
    start = block("dask scheduler", lang="bash").replace("8786", port)
    attach = block("attach(client)").replace("8786", port)
    assert attach.count(port) == 1
    proc = subprocess.Popen(["bash", "-c", start + "wait"], cwd=tmp_path, env=ENV,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "dask.log", "w"))
    try:
        deadline = time.monotonic() + 60
        while True:  # the scheduler, and a worker registered with it
            probe = subprocess.run(
                [sys.executable, "-c", f"from distributed import Client; c = Client('tcp://127.0.0.1:"
                 f"{port}', timeout=5); c.wait_for_workers(1, timeout=5); c.close()"],
                env=ENV, capture_output=True, timeout=60)
            if probe.returncode == 0:
                break
            assert time.monotonic() < deadline, (tmp_path / "dask.log").read_text()[-3000:]
            time.sleep(0.5)
        code = attach + "\nprint('violations:', len(tracer.violations))\n"
        assert "violations: 0" in run_script(code, tmp_path)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def test_the_course_table_gives_each_lesson_its_own_minutes():
    """The table's minutes are the ones each lesson states in its first cell (**Time.**)."""
    import json

    rows = dict(re.findall(r"^\| \[`(\d\d_\w+)`\]\(notebooks/\1\.ipynb\) \| (\d+) \|", README, re.M))
    assert len(rows) == len(list((ROOT / "notebooks").glob("0*.ipynb"))) == 10
    for name, minutes in rows.items():
        first = "".join(json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
                        ["cells"][0]["source"])
        stated = re.search(r"\*\*Time\.?\*\*:?\s*(\d+) minutes", first)
        assert stated and stated.group(1) == minutes, (name, minutes, stated and stated.group(1))
