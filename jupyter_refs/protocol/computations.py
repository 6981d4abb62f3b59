"""The scheduler's history of computations (dask's ``Scheduler.computations``).

dask groups the graphs clients send into *computations*: an ``update-graph`` that reaches an
idle scheduler starts a new one, one that reaches a busy scheduler joins the last; each
keeps the user code the client sent with its graphs (``code``: the frames around the
``compute`` call, ``distributed.diagnostics.computations.nframes`` of them, none by
default).  A function run on the scheduler reads them (dask's
test_computation_object_code_dask_compute).  Sans-IO: the code arrives in the message.
"""

from __future__ import annotations

from collections import deque
from typing import Any, NamedTuple

from ..errors import NotModelledError

#: dask's ``distributed.diagnostics.computations.max-history``.
MAX_HISTORY = 100


class SourceCode(NamedTuple):
    """dask's ``SourceCode``: one frame of the code that sent a graph."""

    code: str
    lineno_frame: int
    lineno_relative: int
    filename: str


class Computation:
    """One computation: the code of every graph that joined it (distinct, sorted, as
    dask's ``SortedSet``), in ``code``.  Its task groups and timings are not modelled."""

    __slots__ = ("code",)

    def __init__(self) -> None:
        self.code: list[tuple[SourceCode, ...]] = []

    def add(self, code: tuple[SourceCode, ...]) -> None:
        if code and code not in self.code:
            self.code.append(code)
            self.code.sort()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise NotModelledError(f"Computation.{name}", "its code is modelled")

    def __repr__(self) -> str:
        return f"<Computation: {len(self.code)} code blocks>"


def joined(history: deque[Computation], idle: bool,
           code: tuple[SourceCode, ...]) -> Computation:
    """The computation a graph joins: the last while the scheduler is busy, else a new
    one; ``code`` is added to it."""
    if idle or not history:
        history.append(Computation())
    computation = history[-1]
    computation.add(code)
    return computation
