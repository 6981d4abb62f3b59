"""Worker resources and the tasks that need them (dask's ``resources=``; distributed's
``docs/source/resources.rst``).

A worker declares what it has (``LocalCluster(resources={"GPU": 2})``: every worker the
same); a task says what it needs (``submit(resources={"GPU": 1})``, or
``dask.annotate(resources=...)``).  On the scheduler (dask's ``valid_workers``) a worker
is fit for a task when its *total* of each resource is at least the need; a task no worker
is fit for waits in ``no-worker`` — its future stays pending — until a fit worker joins.  On
the worker (dask's ``constrained`` queue) a task runs only while that much is *free*: it
takes the amount when it starts and gives it back when it ends, so two tasks needing a
worker's one GPU run one after the other even with threads to spare.
"""

from __future__ import annotations

from collections.abc import Mapping

#: What a worker without resources has.
NONE: Mapping[str, float] = {}


def fits(have: Mapping[str, float], need: Mapping[str, float]) -> bool:
    """Whether ``have`` covers ``need``, resource by resource."""
    return all(have.get(r, 0) >= n for r, n in need.items())


def take(free: dict[str, float], need: Mapping[str, float]) -> None:
    for r, n in need.items():
        free[r] = free.get(r, 0) - n


def give_back(free: dict[str, float], need: Mapping[str, float]) -> None:
    for r, n in need.items():
        free[r] = free.get(r, 0) + n
