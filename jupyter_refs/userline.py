"""The user's line: where, in the user's own code, a call or a drop came from.

Every event of a user's call is stamped with the ``file:line`` that made it (the
``cell`` field), and ``why`` starts its chains there — so it must be the user's,
never a library's.  It is the first frame, walking out from the call, that is
not in a library: not this package, not dask, not IPython (a magic runs under
``run_line_magic``), not the standard library (a thread pool's worker), not
anything installed in site-packages.

A thread whose whole stack is library code — a ``ThreadPoolExecutor`` running
``client.scatter``, a finalizer run on a network thread — works for the main
thread: its line is the line of the user's cell the main thread is running (the
outermost user frame there), or none when the main thread runs no user code.
"""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: Generated code that is a library's: frozen stdlib modules, ``decorator``'s wrappers.
_GENERATED = ("<frozen ", "<decorator-gen-")


def _library_dirs() -> tuple[str, ...]:
    """This package, the standard library and every site-packages directory."""
    paths = sysconfig.get_paths()
    found = [_PACKAGE, *(paths.get(name) for name in ("stdlib", "platstdlib", "purelib", "platlib"))]
    found += getattr(site, "getsitepackages", list)()
    found.append(site.getusersitepackages())
    return tuple(dict.fromkeys(os.path.abspath(d) + os.sep for d in found if d))


_LIBRARY = _library_dirs()
#: filename -> whether it is a library's, decided once per file.
_SEEN: dict[str, bool] = {}


def add_library(path: str) -> None:
    """Count the files under ``path`` as a library's (a package installed from a checkout:
    the dask adapter adds ``distributed`` and ``dask``, wherever they are)."""
    global _LIBRARY
    directory = os.path.abspath(path) + os.sep
    if directory not in _LIBRARY:
        _LIBRARY = (*_LIBRARY, directory)
        _SEEN.clear()


def is_library(filename: str) -> bool:
    """Whether code in ``filename`` is a library's rather than the user's."""
    library = _SEEN.get(filename)
    if library is None:
        if len(_SEEN) >= 4096:
            _SEEN.clear()
        library = _SEEN[filename] = filename.startswith(_LIBRARY) or filename.startswith(_GENERATED)
    return library


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The user's frame for a call made in ``frame``: the first one out from it that is not a
    library's, else (on another thread) the user's cell line the main thread is running."""
    f = frame
    seen = _SEEN
    while f is not None:
        # is_library's look-up inline (a call made ten frames deep walks ten): a file not
        # decided yet is decided by is_library itself.
        library = seen.get(f.f_code.co_filename)
        if library is None:
            library = is_library(f.f_code.co_filename)
        if not library:
            return f
        f = f.f_back
    main = threading.main_thread()
    if threading.current_thread() is main:
        return None
    return _outermost_user_frame(sys._current_frames().get(main.ident))


def _outermost_user_frame(frame: FrameType | None) -> FrameType | None:
    """The user's frame nearest the bottom of a stack: in a kernel, the cell's own line."""
    found = None
    while frame is not None:
        if not is_library(frame.f_code.co_filename):
            found = frame
        frame = frame.f_back
    return found


def user_line(depth: int = 1) -> str | None:
    """``file:line`` of the user's line for a call made ``depth`` frames up from the caller."""
    frame = user_frame(sys._getframe(depth + 1))
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


#: This package's modules a user's call passes through, as a pattern dask's traceback
#: shortening takes (``admin.traceback.shorten``): what a failed task's traceback leaves out.
_OUR_CALL_PATH = (r"jupyter_refs[\\/](client|client_admin|client_parts|cluster|coordination|gcscope"
                  r"|interrupts|publish|task_runs|userline|worker_context)\.py")


class Unshortened(BaseException):  # noqa: N818 - a base, not an error of its own
    """A ``BaseException`` that only carries control out of the calls it passes (the explorer
    stopping a run, ``explore.Stop``): its traceback is never shown, so it is not shortened —
    most explored runs end so, from inside a ``result()``, and shortening cost each a few
    dask config look-ups."""


class short_traceback:  # noqa: N801 - a context manager, named as dask's
    """Leave this package's call path out of a failed call's traceback, as dask's
    ``Future.result`` and ``Client.gather`` leave theirs (``dask.utils.shorten_traceback``):
    the user's frame, the call they made, and where the error was raised — not the dozen
    frames between.  dask's own patterns still apply (a user's config included)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None and exc.__traceback__ is not None and not isinstance(exc, Unshortened):
            import dask
            from dask.utils import shorten_traceback

            paths = [*dask.config.get("admin.traceback.shorten", []), _OUR_CALL_PATH]
            with dask.config.set({"admin.traceback.shorten": paths}):
                exc.__traceback__ = shorten_traceback.shorten(exc.__traceback__)


def shortened(call: _F) -> _F:
    """``call`` with :class:`short_traceback` around it (the public calls that raise a task's
    error: ``Client.gather``)."""

    @functools.wraps(call)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with short_traceback():
            return call(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def user_cell() -> str | None:
    """``file:line`` of the user's line (:func:`user_frame`): the first frame outside libraries.

    Kept per (code, instruction): a frame's line number is found by walking its code's
    line table, and the same few lines call again and again (a loop, the explorer's runs).
    """
    frame = user_frame(sys._getframe(2))
    if frame is None:
        return None
    where = (frame.f_code, frame.f_lasti)
    cell = _CELLS.get(where)
    if cell is None:
        if len(_CELLS) >= 4096:
            _CELLS.clear()
        cell = _CELLS[where] = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    return cell


#: The user's lines found so far, by (code object, instruction offset).
_CELLS: dict[tuple[Any, int], str] = {}
