"""Trace a real dask.distributed cluster: ``tracer = attach(client)``.

Needs the optional dependency ``distributed`` (``pip install jupyter_refs[dask]``).
"""

from .confirm import Confirmation, ConfirmError, confirm
from .explore import check_determinism, explore_dask, replay_dask
from .holds import HeldMessage, HoldsUnavailableError, StepNeverCameError
from .tracer import AlreadyTracedError, DaskTracer, NotOnDaskError, attach

__all__ = ["AlreadyTracedError", "Confirmation", "ConfirmError", "DaskTracer", "HeldMessage",
           "HoldsUnavailableError", "NotOnDaskError", "StepNeverCameError", "attach",
           "check_determinism", "confirm", "explore_dask", "replay_dask"]
