"""Fixtures shared by the tests."""

from __future__ import annotations

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
