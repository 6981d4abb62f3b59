"""Trace a real dask.distributed cluster: ``tracer = attach(client)``.

Needs the optional dependency ``distributed`` (``pip install jupyter_refs[dask]``).
"""

from .tracer import AlreadyTracedError, DaskTracer, NotOnDaskError, attach

__all__ = ["AlreadyTracedError", "DaskTracer", "NotOnDaskError", "attach"]
