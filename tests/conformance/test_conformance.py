"""Each program on the model (immediate and live networks) against its observation on real dask;
a few also on multi-process dask (a ``LocalCluster(processes=True)`` and ``dask scheduler`` /
``dask worker`` subprocesses), which must observe what in-process dask does."""

from __future__ import annotations

import shutil

import pytest

from . import programs  # noqa: F401 - registers the programs
from .harness import PROGRAMS, RemoteClusters, backend_factory, run
from .known import KNOWN, PENDING

pytestmark = pytest.mark.conformance

NETWORKS = ["immediate", "live"]
REMOTE = [n for n, p in PROGRAMS.items() if p.remote]


@pytest.fixture(scope="session")
def dask_observation():
    """A program's observation on in-process dask, computed once per session."""
    cache: dict[str, object] = {}

    def get(name: str) -> object:
        if name not in cache:
            cache[name] = run(backend_factory("dask"), PROGRAMS[name])
        return cache[name]

    return get


@pytest.fixture(scope="module")
def remote_clusters():
    """The multi-process clusters, ended with this module: their idle processes (a scheduler
    and two workers, heartbeating) took a core's tenth for the rest of the suite."""
    clusters = RemoteClusters()
    yield clusters
    clusters.close()


def test_known_names_are_programs():
    for entry in [*KNOWN, *PENDING]:
        assert entry.split("[")[0] in PROGRAMS, f"known.py names {entry!r}, which is not a program"


@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_model(name, network, dask_observation):
    expected = dask_observation(name)
    observed = run(backend_factory(f"model-{network}"), PROGRAMS[name])
    specific = KNOWN.get(f"{name}[{network}]")
    reason = specific or KNOWN.get(name)
    if observed == expected:
        assert not specific, f"known.py lists {name}[{network}] ({specific}), but it matches dask now"
        return
    if reason:
        pytest.xfail(reason)
    if name in PENDING:
        pytest.xfail(f"not yet conformant: {PENDING[name]}")
    pytest.fail(f"{name} on the {network} network differs from dask\n"
                f"  dask:  {expected!r}\n  model: {observed!r}", pytrace=False)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dask-processes", "dask-cli"])
@pytest.mark.parametrize("name", REMOTE)
def test_multiprocess_dask(name, kind, dask_observation, remote_clusters):
    if kind == "dask-cli" and shutil.which("dask") is None:
        pytest.skip("the dask command line comes with dask")
    observed = run(backend_factory(kind, remote_clusters), PROGRAMS[name], timeout=120)
    assert observed == dask_observation(name)
