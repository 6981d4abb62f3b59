"""Where a kernel-side scheduler is: its address, and the rpc dask code reads it from.

dask code finds the scheduler through ``client.scheduler.address`` and, in a task,
``get_worker().scheduler.address`` (dask's test_get_client_sync, a client's repr, a
scheduler file).  Each kernel-side cluster has an address of its own, ``inproc://`` as
an in-process dask cluster's, so two clusters in one kernel are told apart.  Calling the
scheduler's handlers through the rpc (``await client.scheduler.ncores()``) is not
modelled: the client's methods are the way in.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

from .errors import NotModelledError

_numbers = itertools.count(1)
#: Each cluster by its address, while it lives: ``Client(address)`` and
#: ``Client(scheduler_file=...)`` find it there, as a second dask client connects.  (Any:
#: a ``Cluster``, which imports this module.)
_clusters: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def new_address(cluster: Any) -> str:
    """An address no other cluster of this kernel has, for ``cluster``."""
    address = f"inproc://jupyter-refs/{next(_numbers)}"
    _clusters[address] = cluster
    return address


def cluster_at(address: str) -> Any:
    """The kernel-side cluster with this scheduler address (a ``Cluster``), if one lives."""
    return _clusters.get(address)


class SchedulerRPC:
    """dask's rpc to the scheduler (``client.scheduler``, ``worker.scheduler``): its
    ``address``; anything else says it is not modelled."""

    def __init__(self, address: str):
        self.address = address

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotModelledError(f"the scheduler's rpc .{name}",
                               "its address is modelled; the client's methods call the "
                               "scheduler")

    def __repr__(self) -> str:
        return f"<pooled rpc to {self.address!r}>"
