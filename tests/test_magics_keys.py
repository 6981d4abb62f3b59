"""Magics that take keys name any key — spaces, quotes, unicode, parentheses, dask's tuple
keys — quoted as a shell quotes; and a bare ``%cluster`` starts one when there is none."""

from __future__ import annotations

import shlex

import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

from jupyter_refs import Client, Cluster

KEYS = ["my key", 'it\'s "quoted"', "ключ (1)", "('x', 0)", "a  b"]


@pytest.fixture
def ip():
    shell = start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "jupyter_refs")
    yield shell
    shell.run_line_magic("unload_ext", "jupyter_refs")
    for name in ("client", "cluster"):
        shell.user_ns.pop(name, None)


def lost(ip) -> Cluster:
    """Each of KEYS scattered, then released: every one of them has a loss to explain."""
    ip.run_line_magic("cluster", "--network immediate")
    client: Client = ip.user_ns["client"]
    futures = client.scatter(dict.fromkeys(KEYS, 1))
    del futures
    ip.user_ns["cluster"].apply_drops()
    return ip.user_ns["cluster"]


def quoted(key: str) -> list[str]:
    """The ways a user may write ``key`` on a magic's line."""
    single = shlex.quote(key)
    double = '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return [single, double] + ([key] if key == key.strip() else [])


@pytest.mark.parametrize("key", KEYS)
def test_refs_why_names_a_key_of_any_text(ip, capsys, key):
    lost(ip)
    for written in quoted(key):
        capsys.readouterr()
        ip.run_line_magic("refs", f"--why {written}")
        assert key in capsys.readouterr().out, written


@pytest.mark.parametrize("key", KEYS)
def test_refs_and_timeline_take_keys_of_any_text(ip, capsys, key):
    lost(ip)
    for written in quoted(key)[:2]:
        capsys.readouterr()
        ip.run_line_magic("refs", f"--text {written}")
        out = capsys.readouterr().out
        assert key in out and not any(k in out for k in KEYS if k != key and k not in key), written
        ip.run_line_magic("timeline", f"--why {written}")
        assert key in capsys.readouterr().out


def test_a_tuple_key_may_be_written_as_python_writes_it(ip, capsys):
    lost(ip)
    ip.run_line_magic("refs", "--why ('x',0)")
    assert "('x', 0)" in capsys.readouterr().out
    with pytest.raises(UsageError, match="takes no --keys or --export"):
        ip.run_line_magic("timeline", "--why ('x', 0) --export a.html")


def test_an_unclosed_quote_is_one_usage_error(ip):
    lost(ip)
    with pytest.raises(UsageError, match="no closing quotation") as info:
        ip.run_line_magic("refs", "'my key")
    assert "\n" not in str(info.value)


def test_bare_cluster_starts_one_with_the_defaults_when_there_is_none(ip, capsys):
    ip.run_line_magic("cluster", "")
    cluster = ip.user_ns["cluster"]
    assert cluster.variant.name == "dask" and not cluster.closed
    assert ip.user_ns["client"].cluster is cluster
    assert "--protocol legacy" not in capsys.readouterr().out
    ip.run_line_magic("cluster", "")  # shown, not replaced
    assert ip.user_ns["cluster"] is cluster
    cluster.close()
