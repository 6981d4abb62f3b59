"""Where a kernel-side scheduler is: its address, and the rpc dask code reads it from.

dask code finds the scheduler through ``client.scheduler.address`` and, in a task,
``get_worker().scheduler.address`` (dask's test_get_client_sync, a client's repr, a
scheduler file).  Each kernel-side cluster has an address of its own, ``inproc://`` as
an in-process dask cluster's (``cluster.new_address``), so two clusters in one kernel are
told apart.  Calling the
scheduler's handlers through the rpc (``await client.scheduler.ncores()``) is not
modelled: the client's methods are the way in.
"""

from __future__ import annotations

from typing import Any

from .errors import NotModelledError


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
