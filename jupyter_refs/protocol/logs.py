"""A node's log: what ``get_scheduler_logs``, ``get_worker_logs`` and ``LocalCluster.get_logs``
read (dask's ``Node._deque_handler`` and ``Node.get_logs``, ``distributed/node.py``).

As dask 2026.8.0's: each node (the scheduler, each worker) keeps its newest records in a deque
bounded by ``distributed.admin.log-length`` (10 000), each formatted by
``distributed.admin.log-format`` when read, and ``get`` returns them newest first as
``(levelname, line)`` — or ``(created, levelname, line)`` with ``timestamps`` — from ``start``
(a time), at most ``n``.  The lines are dask's for what the model does: a scheduler that
starts, workers that register and stop, clients that connect, workers retired or removed.
Each worker keeps its own (as dask's worker processes do; in-process dask workers share
one logger, so each of their deques holds every worker's lines).

No clock here: an entry's time is the ``clock`` the driver gives (``time.time``), and the
log's format is read only when someone reads the log.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

#: dask's defaults of ``distributed.admin.log-length`` and ``log-format`` (the configured
#: ones are read where distributed is loaded).
LOG_LENGTH = 10_000
LOG_FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"


_INFO = logging.INFO
#: Each logger's ``isEnabledFor``, by its name: ``logging.getLogger`` hands out one logger per
#: name for good, and asking it (under logging's lock) for each node of each of the
#: explorer's clusters cost more than the node's lines did.
_ENABLED: dict[str, Callable[[int], bool]] = {}


def _no_clock() -> float:
    return 0.0


class NodeLog:
    """One node's log: entries ``(created, levelname, msg, args)``, formatted when read."""

    __slots__ = ("_enabled", "clock", "entries", "logger")

    def __init__(self, logger: str, maxlen: int | None = LOG_LENGTH,
                 clock: Callable[[], float] = _no_clock):
        self.logger = logger  # dask's logger name: distributed.scheduler, distributed.worker
        self.entries: deque[tuple[float, str, str, tuple[Any, ...]]] = deque(maxlen=maxlen)
        self.clock = clock
        # dask's deque handler hangs on that logger: a level set on it (or on
        # ``distributed``, as distributed's config does) keeps lines out of the log too.
        enabled = _ENABLED.get(logger)
        if enabled is None:
            enabled = _ENABLED[logger] = logging.getLogger(logger).isEnabledFor
        self._enabled = enabled

    def info(self, msg: str, *args: Any) -> None:
        """``logger.info(msg, *args)``, as dask logs it (formatted only when read: cheap)."""
        if self._enabled(_INFO):
            self.entries.append((self.clock(), "INFO", msg, args))

    def infos(self, *lines: tuple[str, tuple[Any, ...]]) -> None:
        """Several ``info(msg, *args)`` lines at once, each ``(msg, args)``: the level asked
        once (a worker that joins logs ten lines, and the explorer makes a cluster a run)."""
        if self._enabled(_INFO):
            clock, append = self.clock, self.entries.append
            for msg, args in lines:
                append((clock(), "INFO", msg, args))

    def get(self, start: float = 0, n: int | None = None,
            timestamps: bool = False) -> list[tuple[Any, ...]]:
        """dask's ``Node.get_logs``: newest first, from ``start``, at most ``n``."""
        import dask

        formatter = logging.Formatter(dask.config.get("distributed.admin.log-format",
                                                       LOG_FORMAT))
        out: list[tuple[Any, ...]] = []
        for count, (created, level, msg, args) in enumerate(reversed(self.entries)):
            if n and count >= n or created < start:
                break
            record = logging.LogRecord(self.logger, getattr(logging, level), self.logger, 0,
                                       msg, args, None)
            record.created = created
            record.msecs = (created - int(created)) * 1000
            line = formatter.format(record)
            out.append((created, level, line) if timestamps else (level, line))
        return out
