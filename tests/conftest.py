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
