"""``distributed.diagnostics.MemorySampler`` on the kernel-side cluster
(``distributed/diagnostics/memory_sampler.py``).

As dask 2026.8.0's: ``with ms.sample(label):`` records the cluster's memory at once and then
every ``interval`` seconds until the block ends, as ``(timestamp, bytes)`` in
``ms.samples[label]`` (a random label if none); ``to_pandas`` and ``plot`` are dask's own.
The measures are the scheduler's ``MemoryState`` summed over the workers: ``process`` — each
worker reports the memory of the process it runs in, and here, as in an in-process dask
cluster, that is the kernel's, once per worker — ``managed`` (the ``sizeof`` of the data the
workers hold), ``unmanaged`` (the rest) and ``spilled`` (nothing: the model's workers never
spill).  dask's ``process`` lags by a heartbeat; the model reads it when sampling.  The
measures built on a history of the last 30 s (``unmanaged_old``, ``unmanaged_recent``,
``optimistic``) are not modelled, and say so.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from .errors import NotModelledError
from .worker_context import dask_get_client

MEASURES = ("process", "managed", "unmanaged", "spilled")


def _memory(cluster: Any, measure: str) -> int:
    """The cluster's memory by ``measure`` (see the module's doc)."""
    import psutil
    from dask.sizeof import sizeof

    with cluster.locked():
        managed = sum(sizeof(v) for w in cluster.workers.values() for v in w.data.values())
        workers = len(cluster.workers)
    if measure == "managed":
        return managed
    if measure == "spilled":
        return 0
    process = psutil.Process().memory_info().rss * workers
    return process if measure == "process" else max(0, process - managed)


def _base() -> type:
    from distributed.diagnostics.memory_sampler import MemorySampler as DaskMemorySampler

    return DaskMemorySampler


class MemorySampler(_base()):  # type: ignore[misc] - dask's, for to_pandas and plot
    """dask's ``MemorySampler``, sampling the kernel-side cluster."""

    def sample(self, label: str | None = None, *, client: Any = None, measure: str = "process",
               interval: float = 0.5) -> Any:
        if measure not in MEASURES:
            raise NotModelledError(f"MemorySampler measure {measure!r}",
                                   f"the model has {', '.join(MEASURES)}")
        if client is None:
            client = dask_get_client()
        return self._sampled(label, client.cluster, measure, interval)

    @contextmanager
    def _sampled(self, label: str | None, cluster: Any, measure: str,
                 interval: float) -> Iterator[None]:
        key = str(uuid.uuid4())
        samples: list[tuple[float, int]] = []
        stop = threading.Event()

        def sample() -> None:
            samples.append((datetime.now().timestamp(), _memory(cluster, measure)))

        def loop() -> None:
            while not stop.wait(interval):
                if cluster.closed:
                    return
                sample()

        sample()  # at once, as dask's: there is always a sample
        sampler = threading.Thread(target=loop, name="jupyter-refs-memory-sampler", daemon=True)
        sampler.start()
        try:
            yield
        finally:
            stop.set()
            sampler.join()
            self.samples[label or key] = samples

