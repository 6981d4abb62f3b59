"""The magics, through a real IPython shell: happy paths, bad input, the race by hand."""

from __future__ import annotations

import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

from jupyter_refs.protocol.variants import OLDEST


@pytest.fixture
def ip():
    shell = start_ipython() or get_ipython()  # the first call starts it, later ones return None
    shell.run_line_magic("load_ext", "jupyter_refs")
    yield shell
    shell.run_line_magic("unload_ext", "jupyter_refs")
    for name in ("x", "y", "client", "cluster"):
        shell.user_ns.pop(name, None)


def magic(ip, line: str) -> None:
    name, _, rest = line.partition(" ")
    ip.run_line_magic(name, rest)


def state(ip) -> tuple:
    cluster = ip.user_ns.get("cluster")
    return (len(cluster.trace), len(cluster.in_flight)) if cluster else None


def test_load_twice_and_help(ip, capsys):
    ip.run_line_magic("load_ext", "jupyter_refs")  # harmless
    magics = ip.magics_manager.magics
    for name in ("cluster", "scatter", "refs", "release", "timeline", "step", "hold"):
        assert name in magics["line"], name
        assert f"%{name}" in magics["line"][name].__doc__  # %name? shows the argument help
    assert "trace" in magics["cell"]
    capsys.readouterr()
    magic(ip, "cluster")  # none yet: one is started with the defaults
    assert "client bound to 'client'" in capsys.readouterr().out
    magic(ip, "cluster")  # then shown, not replaced
    assert "client bound" not in capsys.readouterr().out


def test_the_default_protocol_is_called_dask(ip, capsys):
    """Issue 46.6: the defaults and the hints still said "legacy", dask's old name."""
    from jupyter_refs.magics import RefsMagics

    assert RefsMagics.protocol.default_value == "dask"
    assert RefsMagics.protocol.help.startswith("protocol of a new %cluster: dask (today's)")
    magic(ip, "cluster")  # none yet: one starts, with the default protocol
    assert ip.user_ns["cluster"].variant.name == "dask"


def test_config_sets_the_defaults(ip):
    ip.run_line_magic("config", "RefsMagics.protocol = 'fixed'")
    ip.run_line_magic("config", "RefsMagics.network = 'immediate'")
    try:
        magic(ip, "cluster")
        magic(ip, "cluster --workers 2")
        assert ip.user_ns["cluster"].variant.name == "fixed"
        assert ip.user_ns["cluster"].network_name == "immediate"
        assert len(ip.user_ns["cluster"].workers) == 2
    finally:
        ip.run_line_magic("config", "RefsMagics.protocol = 'dask'")
        ip.run_line_magic("config", "RefsMagics.network = 'live'")


def test_race_by_hand_on_a_manual_network(ip, capsys):
    magic(ip, "cluster --protocol legacy --network manual")
    cluster = ip.user_ns["cluster"]
    magic(ip, "scatter x = 123")
    magic(ip, "step --all")
    magic(ip, "scatter x = 123")  # drops the old x first: the release is queued
    ops = [m.op for m in cluster.in_flight]
    assert ops == ["client-releases-keys", "scatter"]
    for op in ("scatter", "update-data", "update-data-reply", "scatter-reply"):
        msg = next(m for m in cluster.in_flight if m.op == op)
        magic(ip, f"step --deliver {msg.msg_id}")
    magic(ip, "step")  # the late release
    out = capsys.readouterr().out
    assert "VIOLATION dangling_future" in out and "transition memory → forgotten" in out
    magic(ip, "refs --text")
    assert "VIOLATION dangling_future" in capsys.readouterr().out
    assert ip.user_ns["x"].status == "finished"


@pytest.mark.parametrize("protocol", ["legacy", "fixed"])
def test_race_with_hold_on_the_live_network(ip, capsys, protocol):
    magic(ip, f"cluster --protocol {protocol} --network live")
    magic(ip, "scatter x = 123")
    magic(ip, "hold client:1->scheduler")
    magic(ip, "scatter x = 123")
    held = [m for m in ip.user_ns["cluster"].in_flight if m.channel == "client:1->scheduler"]
    assert [m.op for m in held] == ["client-releases-keys"]  # overtaken by the re-scatter
    magic(ip, "hold --off")
    ip.user_ns["cluster"].run_until_idle()
    magic(ip, "refs --text")
    out = capsys.readouterr().out
    if protocol == "legacy":
        assert "VIOLATION dangling_future" in out
    else:
        assert "VIOLATION" not in out and "memory" in out


def test_release_trace_timeline_and_export(ip, tmp_path, capsys):
    magic(ip, "cluster --network immediate")
    magic(ip, "scatter y = [1, 2, 3] --no-hash")
    key = ip.user_ns["y"].key
    magic(ip, "release y")
    assert "y" not in ip.user_ns
    assert ip.user_ns["cluster"].scheduler_state(key) == "forgotten"
    ip.run_cell_magic("trace", "", "f = client.submit(sum, [1, 2])\nf.result()")
    ip.run_cell_magic("trace", "--live", "g = client.submit(sum, [3, 4])\ng.result()")
    magic(ip, "timeline")
    for suffix in (".jsonl", ".json", ".html"):
        magic(ip, f"timeline --export {tmp_path / ('t' + suffix)}")
        assert (tmp_path / ("t" + suffix)).stat().st_size > 100
    assert "wrote" in capsys.readouterr().out


# -- bad input: one line, nothing changed ---------------------------------------------------

BAD = [
    ("cluster --protocol nope", "unknown protocol 'nope'"),
    ("cluster --protocol dask-1.16.0", f"releases {OLDEST} to 2026.8.0 of distributed are modelled"),
    ("cluster --workers 0", "at least 1"),
    ("cluster --bogus", "unrecognized arguments"),
    ("scatter x 123", "usage: %scatter NAME = EXPR"),
    ("scatter 1x = 2", "usage: %scatter NAME = EXPR"),
    ("scatter x = undefined_name", "cannot evaluate 'undefined_name'"),
    ("scatter x = __import__('threading').Lock()", "cannot send an object of type _thread.lock"),
    ("scatter x = 1 --client nobody", "'nobody' is not a client"),
    ("release nothing_here", "'nothing_here' does not hold a future"),
    ("step --deliver 999", "message 999 is not in flight"),
    ("step 0", "at least 1"),
    ("hold", "usage: %hold CHANNEL"),
    ("hold a b", "unrecognized arguments"),
    ("hold not-a-channel", "is not a channel"),
    ("timeline --export out.txt", "must end in"),
    ("refs --bogus", "unrecognized arguments"),
]


@pytest.mark.parametrize("channel", ["client:1->nowhere", "nosuchchannel", "nowhere->scheduler",
                                     "rpc:nobody#1", "nowhere*"])
def test_hold_refuses_a_channel_the_cluster_does_not_have_and_lists_those_it_has(ip, channel):
    """Issue 46.8: ``%hold client:1->nowhere`` was accepted ("holding client:1->nowhere")."""
    magic(ip, "cluster --network immediate")
    with pytest.raises(UsageError) as info:
        magic(ip, f"hold {channel}")
    said = str(info.value)
    assert said.startswith(f"{channel!r} is not a channel of this cluster: its streams are ")
    assert "client:1->scheduler, " in said and "scheduler->worker:0, " in said and "\n" not in said
    assert ip.user_ns["cluster"].held == set()


def test_hold_takes_a_channel_before_its_first_message(ip, capsys):
    """What the README does: hold the client's stream after a scatter, before it carried one."""
    magic(ip, "cluster --network immediate")
    magic(ip, "scatter x = 1")
    cluster = ip.user_ns["cluster"]
    assert "client:1->scheduler" not in cluster.channels()
    for channel in ("client:1->scheduler", "scheduler->worker:*", "rpc:client:1#*",
                    "rpc:scheduler#3", "client:worker:0->scheduler"):
        magic(ip, f"hold {channel}")
    assert len(cluster.held) == 5


@pytest.mark.parametrize("line, message", BAD)
def test_bad_input_is_one_usage_error_and_changes_nothing(ip, line, message):
    magic(ip, "cluster --network manual")
    magic(ip, "scatter x = 1")
    before = state(ip)
    with pytest.raises(UsageError) as info:
        magic(ip, line)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert state(ip) == before
    assert ip.user_ns["x"].status == "pending"  # the existing future is untouched


@pytest.mark.parametrize("line", ["scatter x = 1", "refs", "step", "hold --off", "timeline"])
def test_magics_after_close_say_the_cluster_was_closed(ip, capsys, line):
    """Issue 46.6: after ``cluster.close()`` the magics said "no cluster yet"."""
    from jupyter_refs.views.lab import refs_message

    magic(ip, "cluster --protocol dask --network immediate")
    cluster = ip.user_ns["cluster"]
    cluster.close()
    with pytest.raises(UsageError) as info:
        magic(ip, line)
    said = str(info.value)
    assert said.startswith("the cluster (protocol=dask network=immediate) was closed: start another "
                           "with %cluster") and "yet" not in said and "\n" not in said
    capsys.readouterr()
    magic(ip, "cluster")
    assert capsys.readouterr().out.startswith("the cluster (protocol=dask network=immediate) was closed")
    assert refs_message(cluster)["ended"] == cluster.ended  # the sidebar says it too


@pytest.mark.parametrize("line", ["scatter x = 1", "refs", "step", "hold --off", "timeline",
                                  "release x"])
def test_magics_that_need_a_cluster_say_so(ip, line):
    ip.user_ns["x"] = 1
    with pytest.raises(UsageError, match="no cluster yet|does not hold a future"):
        magic(ip, line)


@pytest.mark.parametrize("line, kept", [
    ("--protocol legacy --network live     # a scheduler, a worker", "--protocol legacy --network live"),
    ("--all                                    # the late release arrives", "--all"),
    ("# only a comment", ""),
    ('x = "a # b"  # note', 'x = "a # b"'),
    ("x = {'#': 1}", "x = {'#': 1}"),
    ("--export race#1.html", "--export race#1.html"),
    (r'x = "say \"#\" loud" # c', r'x = "say \"#\" loud"'),
    ("x = '''# not a comment'''", "x = '''# not a comment'''"),
])
def test_a_trailing_comment_is_ignored(line, kept):
    from jupyter_refs.magics import _strip_comment

    assert _strip_comment(line) == kept


def test_magics_accept_a_trailing_comment(ip):
    magic(ip, "cluster --protocol legacy --network manual   # a comment, as in the README")
    assert ip.user_ns["cluster"].network_name == "manual"
    magic(ip, "scatter x = '#1'   # the value keeps its hash sign")
    magic(ip, "step --all   # deliver everything")
    key = ip.user_ns["x"].key
    assert ip.user_ns["cluster"].workers["worker:0"].data[key] == "#1"
    magic(ip, "hold client:1->scheduler   # hold the stream")
    magic(ip, "refs --text   # the table")
    with pytest.raises(UsageError, match="unrecognized arguments: --nope"):
        magic(ip, "step --nope   # a real mistake is still one")


def test_cluster_keys_traces_only_those_keys_from_the_start(ip):
    help_text = ip.magics_manager.magics["line"]["cluster"].__doc__
    assert "--keys PATTERN" in help_text and "--sample N" in help_text
    magic(ip, "cluster --network immediate --keys int-")
    cluster = ip.user_ns["cluster"]
    assert cluster.focused is not None and cluster.focused.patterns
    ip.run_cell("x = client.scatter(1); s = client.scatter('s')")
    keys = {e.key for e in cluster.trace if e.key}
    assert keys == {ip.user_ns["x"].key}  # the string's key was never recorded
    with pytest.raises(UsageError, match="sample must be a whole number") as raised:
        magic(ip, "cluster --network immediate --sample 0")
    assert "\n" not in str(raised.value)
    assert ip.user_ns["cluster"] is cluster and not cluster.closed  # refused before any change
    ip.user_ns.pop("s", None)


def test_trace_keys_narrows_the_trace_for_the_cell(ip, capsys):
    magic(ip, "cluster --network immediate")
    cluster = ip.user_ns["cluster"]
    help_text = ip.magics_manager.magics["cell"]["trace"].__doc__
    assert "--keys PATTERN" in help_text and "--sample N" in help_text
    since = cluster.trace.next_seq
    ip.run_cell_magic("trace", "--keys int-", "x = client.scatter(1); s = client.scatter('s')")
    keys = {e.key for e in cluster.trace.events(since=since) if e.key}
    assert keys == {ip.user_ns["x"].key}  # the string's key was never recorded
    assert cluster.focused is None  # what it followed before: every key
    magic(ip, "refs --text")
    assert "focused on" not in capsys.readouterr().out
    cluster.focus("int-")
    magic(ip, "refs --text")
    assert capsys.readouterr().out.splitlines()[0] == (
        "focused on keys int-*: other keys are not traced")
    for line, message in [("--sample 0", "sample must be a whole number"),
                          ("--keys inc-* --sample two", "invalid int value")]:
        before = len(cluster.trace)
        with pytest.raises(UsageError, match=message) as raised:
            ip.run_cell_magic("trace", line, "y = 1")
        assert "\n" not in str(raised.value) and len(cluster.trace) == before
        assert "y" not in ip.user_ns


def test_why_starts_at_the_users_magic_line(ip):
    """``%scatter``'s rebind drops the old future under IPython's ``run_line_magic``: the
    chain starts at the cell's own line (the magic's), never at IPython's frame."""
    ip.run_cell("%cluster --protocol legacy --network live\n%scatter x = 123", store_history=True)
    ip.run_cell("%hold client:1->scheduler\n%scatter x = 123  # the rebind", store_history=True)
    ip.run_cell("%hold --off", store_history=True)
    cluster = ip.user_ns["cluster"]
    cluster.run_until_idle()
    chain = cluster.why(ip.user_ns["x"].key)
    first = chain.steps[0]
    assert first.kind == "refcount.dec" and first.cell, chain
    assert "interactiveshell.py" not in first.text and "IPython" not in first.cell, chain
    assert "line 2: `%scatter x = 123`" in first.text, chain
    # The scatter that overtook the release is the same line's.
    assert any(s.kind == "refcount.inc" and s.cell == first.cell for s in chain.steps), chain


def test_a_replayed_explore_cell_is_explained_from_its_own_lines(ip):
    """Lesson 07: the chain of a replayed ``%%explore`` failure starts at the cell's line that
    dropped the future (not ``<%%explore>``), and ``%replay``'s own drop is its magic line."""
    ip.run_cell("def inc(v):\n    return v + 1", store_history=True)
    ip.run_cell("%%explore --max 300 --processes 1\nx = client.scatter(123)\ndel x\n"
                "x = client.scatter(123)\nclient.submit(inc, x)", store_history=True)
    explored = ip.user_ns["explored"]
    ip.run_cell("%replay {explored.failures[0].schedule}", store_history=True)
    chain = ip.user_ns["cluster"].why(explored.failures[0].violations[0].key)
    assert "line 3: `del x` → client:1 refcount 1→0" in chain.steps[0].text, chain
    lines = [s.text for s in chain.steps if s.cell]
    assert any("line 4: `x = client.scatter(123)`" in t for t in lines), chain
    assert not any("<%%explore>" in t or "interactiveshell" in t for t in lines), chain
    ip.user_ns.pop("explored")


def test_a_replayed_order_that_returns_where_in_order_raises_says_outcome_differs(ip, capsys):
    """#8215 as a cell: an order in which the scenario returns while the in-order run raises
    is a failure to %%explore (outcome_differs); %replay judges it the same way, against the
    in-order run (a replay alone has none to compare with, and printed "no violation")."""
    ip.run_cell("def inc(v):\n    return v + 1", store_history=True)
    ip.run_cell("%%explore --max 300 --processes 1 --bound 2\nf = client.submit(inc, 1, key='k')\n"
                "client.cancel([f])\ng = client.submit(inc, 1, key='k')\ng.result()",
                store_history=True)
    explored = ip.user_ns.pop("explored")
    returning = next(f for f in explored.failures if f.names == ("outcome_differs",))
    capsys.readouterr()
    ip.run_cell(f"%replay {returning.schedule}", store_history=True)
    out = capsys.readouterr().out
    assert (f"replayed {returning.schedule}: outcome_differs: the scenario returned 2 under "
            "this order; the replayed cluster is now `cluster`") in out, out
    # In the replayed cluster's trace too, where its timeline shows it.
    assert [e.fields["name"] for e in ip.user_ns["cluster"].trace.events(kind="violation")] == [
        "outcome_differs"]


@pytest.mark.slow
@pytest.mark.dask
def test_confirm_takes_an_earlier_exploration_by_name(ip, inproc, capsys):
    """Lesson 05: ``%confirm --explored NAME`` confirms a schedule of the %%explore cell whose
    result was kept under NAME, though another %%explore ran since (no re-run to make it the
    last); a name that is no exploration is refused, saying how to keep one."""
    distributed = pytest.importorskip("distributed")
    ip.run_cell("def inc(v):\n    return v + 1", store_history=True)
    ip.run_cell("%%explore --max 300 --processes 1\nx = client.scatter(123)\ndel x\n"
                "x = client.scatter(123)\nclient.submit(inc, x)", store_history=True)
    ip.user_ns["found"] = found = ip.user_ns["explored"]
    ip.run_cell("%%explore --protocol fixed --max 50 --processes 1\ny = client.scatter(1)\ndel y",
                store_history=True)
    assert ip.user_ns["explored"] is not found and not ip.user_ns["explored"].failures
    ip.user_ns["dc"] = inproc
    schedule = found.failures[0].schedule
    capsys.readouterr()
    try:
        magic(ip, f"confirm --explored found --client dc {schedule}")
        out = capsys.readouterr().out
        assert f"confirmed on distributed {distributed.__version__}" in out, out
        assert ip.user_ns["confirmed"].confirmed
        # without the name, the last exploration's scenario: the schedule is not its own
        with pytest.raises(UsageError):
            magic(ip, f"confirm --client dc {schedule}")
        ip.user_ns["other"] = object()
        for name in ("other", "nothing_here"):
            with pytest.raises(UsageError, match=f"--explored {name}: not the result of a %%explore"):
                magic(ip, f"confirm --explored {name} --client dc {schedule}")
    finally:
        for name in ("found", "explored", "confirmed", "dc", "other"):
            ip.user_ns.pop(name, None)


@pytest.mark.dask
def test_explore_magic_shares_its_runs_with_a_dask_cluster(ip, capsys):
    """``%%explore --client NAME``: the cell, and the notebook names it reads (a function
    defined in the notebook here), go to a dask cluster's worker processes; the result is
    the one this kernel alone gives.  A name that is not a dask client is refused in one
    line."""
    distributed = pytest.importorskip("distributed")
    cell = "x = client.scatter(123)\ndel x\nx = client.scatter(123)\nclient.submit(plus, x)"
    ip.run_cell("def plus(v):\n    return v + 1")
    try:
        ip.run_cell(f"%%explore --max 3000 --processes 1\n{cell}")
        here = ip.user_ns["explored"]
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                      dashboard_address=":0") as cluster, \
                distributed.Client(cluster) as dc:
            ip.user_ns["dc"] = dc
            capsys.readouterr()
            ip.run_cell(f"%%explore --max 3000 --client dc\n{cell}")
            there = ip.user_ns["explored"]
            assert there is not here and there.schedules == 3000 and there.sampled > 0
            assert [(f.schedule, f.count) for f in there.failures] == \
                [(f.schedule, f.count) for f in here.failures]
            assert there.failures and "distinct failure" in capsys.readouterr().out
            ip.user_ns["other"] = object()
            for name in ("other", "nothing_here"):
                with pytest.raises(UsageError, match=f"'{name}' is not a dask distributed.Client"):
                    ip.run_cell_magic("explore", f"--client {name}", cell)
    finally:
        for name in ("explored", "dc", "other", "plus"):
            ip.user_ns.pop(name, None)


def test_the_model_switch_in_a_notebook(ip, capsys):
    """``%cluster --model``: the user's own dask lines, unchanged, run on the kernel-side
    cluster, and ``%refs`` follows the cluster their ``Client(...)`` started."""
    distributed = pytest.importorskip("distributed")
    original = distributed.Client
    magic(ip, "cluster --model --network immediate")
    try:
        assert "switch is on" in capsys.readouterr().out
        ip.run_cell("from dask.distributed import Client\nc = Client(processes=False)\n"
                    "x = c.submit(len, 'ab')\ny = x.result()", store_history=False)
        assert ip.user_ns["y"] == 2 and isinstance(ip.user_ns["x"], distributed.Future)
        magic(ip, "refs")
        assert ip.user_ns["x"].key in capsys.readouterr().out
        with pytest.raises(UsageError, match="--workers do not apply to the switch"):
            magic(ip, "cluster --model --workers 3")
    finally:
        ip.user_ns.pop("c").close()
        magic(ip, "cluster --no-model")
    assert distributed.Client is original and "switch is off" in capsys.readouterr().out
