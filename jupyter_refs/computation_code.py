"""The user's code around a ``compute`` / ``submit`` call, sent with its graph (dask's
``Client._get_computation_code``), for the scheduler's computations.

dask walks up the stack from the call, skipping the frames of the modules and files its
config names (``distributed.diagnostics.computations.ignore-modules`` / ``ignore-files``:
dask, distributed, pytest, asyncio …) — and here jupyter_refs', which stands where
distributed's frames would — and keeps the source of the first ``nframes`` others
(``distributed.diagnostics.computations.nframes``, 0 by default: nothing is walked).
"""

from __future__ import annotations

import inspect
import re
import sys
import traceback
from typing import Any

import dask

from .protocol.computations import SourceCode

_KEY = "distributed.diagnostics.computations."
#: distributed's defaults, for when distributed (which sets them in dask's config) is not
#: imported.
_IGNORE_MODULES = ["asyncio", "functools", "threading", "datashader", "dask", "debugpy",
                   "distributed", "ipykernel", "coiled", "cudf", "cuml", "matplotlib",
                   "pluggy", "prefect", "rechunker", "xarray", "xgboost", "xdist",
                   "__channelexec__", "execnet"]
_IGNORE_FILES = ["runpy", r".*py\.?test.*", "pycharm", "get_output_via_markers"]


def computation_code() -> tuple[SourceCode, ...]:
    """The frames of the user's code around the call, outermost first (dask's order)."""
    nframes = dask.config.get(_KEY + "nframes", 0)
    if nframes <= 0:
        return ()
    modules = [*dask.config.get(_KEY + "ignore-modules", _IGNORE_MODULES), "jupyter_refs"]
    files = "|".join(dask.config.get(_KEY + "ignore-files", _IGNORE_FILES))
    mod_pattern = re.compile("|".join(f"(?:{mod})" for mod in modules))
    fname_pattern = re.compile(rf".*[\\/]({files})([\\/]|\.pyc?$|$)|<frozen ({files})>$")
    code: list[SourceCode] = []
    for frame, lineno in traceback.walk_stack(sys._getframe().f_back):
        if len(code) >= nframes:
            break
        if frame.f_code.co_name in ("<listcomp>", "<dictcomp>"):
            continue
        if (mod_pattern.match(frame.f_globals.get("__name__", ""))
                or fname_pattern.match(frame.f_code.co_filename)):
            continue
        source, from_file = _source(frame)
        if source is not None:
            code.append(SourceCode(code=source, lineno_frame=lineno,
                                   filename=frame.f_code.co_filename,
                                   lineno_relative=lineno - frame.f_code.co_firstlineno))
        if not from_file:
            break
        outer = frame.f_back
        if outer is not None:
            name = outer.f_globals.get("__name__", "")
            if (name == "__channelexec__" or name not in sys.modules
                    or sys.modules[name].__name__.endswith("interactiveshell")):
                break
    return tuple(reversed(code))


def _source(frame: Any) -> tuple[str | None, bool]:
    """The source around ``frame`` as dask reads it, and whether it came from a file: else
    it is IPython's current cell (a notebook's), or None."""
    try:
        return inspect.getsource(frame), True
    except OSError:  # no source file: a notebook cell's is IPython's current cell
        return _current_cell(), False


def code_at(stacklevel: int) -> str:
    """The source of the frame ``stacklevel`` above the caller (dask's
    ``_get_computation_code(stacklevel)``, what ``performance_report`` shows as the calling
    code), or dask's ``<Code not available>``."""
    frame = sys._getframe(stacklevel + 1)
    return _source(frame)[0] or "<Code not available>"


def _current_cell() -> str | None:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell.history_manager._i00 if shell is not None else None
