"""CPython's collector while a cluster serves a call: as dask's scheduler process sets it.

``dask scheduler`` and ``dask worker`` triple the collector's thresholds when
they start (distributed#1653): a scheduler builds up long-lived bookkeeping —
task states, futures, sets of holders — a few objects per task, and with the
default thresholds CPython runs a full collection every few thousand tasks,
walking every object in the process.  On a 10,000-task ``map`` that was a fifth
of the kernel-side cluster's time.

The kernel-side scheduler shares its process with the user's kernel, so the
thresholds are raised only while a cluster call is served and restored when the
last concurrent call returns: the user's own code between calls sees the
collector as they set it.  Nothing is disabled: collections only come less often,
and the dask tracer's merge holds a full one back until it ends (:func:`scope`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from . import interrupts

#: The factor ``distributed/cli/dask_scheduler.py`` applies to each threshold.
FACTOR = 3

_F = TypeVar("_F", bound=Callable[..., Any])

#: The oldest generation's threshold while a block holds full collections back: never reached.
NEVER = 2**31 - 1

_lock = threading.Lock()
_isenabled = gc.isenabled
_depth = 0  # calls served (or blocks in scope) now
_held = 0  # of them, blocks that start no full collection
_saved: tuple[int, ...] = ()


def _apply() -> None:
    """Set the thresholds the blocks in scope ask for (under ``_lock``)."""
    if _depth == 0:
        gc.set_threshold(*_saved)
        return
    young, middle, old = (t * FACTOR for t in _saved)
    gc.set_threshold(young, middle, NEVER if _held else old)


def enter(full: bool = True) -> bool:
    """A call begins: the first of any concurrent calls raises the thresholds; with
    ``full=False``, no full collection starts until every such block has left.

    Returns whether it did anything: with the collector off (the explorer turns it off
    for its runs) thresholds do not matter, and the caller must not ``leave()``.
    """
    global _depth, _held, _saved
    if not _isenabled():
        return False
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
        _depth += 1
        _held += not full
        if _depth == 1 or (not full and _held == 1):
            _apply()
    return True


def leave(full: bool = True) -> None:
    """A call ends (``full`` as it entered): the last one restores the thresholds it found,
    and collects the young generation — the garbage cycles the call made.

    A library's cycle can hold a call's frames: an exception kept in a local of the frame its
    traceback holds (Cython's shadow modules, which pickle meets when it looks for a function
    in every module).  The frames below it then keep their locals — the futures ``submit``
    returned — until the collector runs, and in an idle kernel it may not run for minutes:
    ``del future`` would not let the key go.  (dask's event loop allocates all the time, so
    its collector runs within moments.)  Only what the call allocated is young: a few µs.
    """
    global _depth, _held
    with _lock:
        _depth -= 1
        _held -= not full
        last = _depth == 0
        if last or (not full and _held == 0):
            _apply()
    if last:
        gc.collect(0)


@contextlib.contextmanager
def scope(full: bool = True) -> Iterator[None]:
    """The raised thresholds for a block: the dask tracer's merge, which builds a row per
    event and grows long-lived state (the trace, the checks' beliefs) as a scheduler does.

    ``full=False``: and no full collection starts in the block.  One that falls due starts
    at the first young collection after it, in whichever thread allocates then: the same
    collection, of everything the process holds, at its own pace.  For the merge, whose
    allocations otherwise trip the one a dask computation's heap had made due (0.5–1.7 s
    at 40,000 tasks, in half the merges a user's script timed), so that what a user waits
    for in ``violations`` is the merge's own work.
    """
    entered = enter(full)
    try:
        yield
    finally:
        if entered:
            leave(full)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off for a block, on again after if it was on: an explorer's runs, each
    of which leaves young cycles (a cluster and its actors), collected in bulk by the
    explorer itself (``gc.collect(0)`` every 100 runs)."""
    collecting = _isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def served(method: _F) -> _F:
    """Raise the thresholds for the whole of a public call (``Client.map``, ``gather``, …).

    The cluster's own section (``Cluster.call``) enters the scope too, but a call does
    much before it: a 10,000-task ``map`` builds its keys and pickles its arguments
    first, and with the user's thresholds a full collection landed there on most runs.
    """

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        # ``enter`` and ``leave`` are shielded from interrupts, the call itself is not: one
        # landing between the two would leave the thresholds raised for the session.
        shield = interrupts.enter()
        try:
            entered = enter()
            try:
                gate = interrupts.opened()
                try:
                    return method(*args, **kwargs)
                finally:
                    interrupts.close(gate)
            finally:
                if entered:
                    leave()
        finally:
            interrupts.leave(shield)

    return call  # type: ignore[return-value]
