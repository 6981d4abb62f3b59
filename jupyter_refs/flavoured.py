"""Which class to raise for one of the model's errors: dask's too, once ``distributed`` is
imported.

Apart from ``errors.py`` (which declares the model's classes) and ``dask_errors.py`` (which
subclasses them with dask's, and needs ``distributed`` to import): the choice needs both, and
neither may import the other back.
"""

from __future__ import annotations

import sys
from typing import TypeVar

_E = TypeVar("_E", bound=BaseException)


def dask_flavoured(cls: type[_E]) -> type[_E]:
    """The class to raise for ``cls``: once ``distributed`` is imported (always under the
    switch), its subclass that is dask's exception too (:mod:`jupyter_refs.dask_errors`),
    so code written for dask catches it; otherwise ``cls``.  Checked at each raise, not at
    import, so the model never imports ``distributed`` itself."""
    if "distributed.client" not in sys.modules:
        return cls
    from .dask_errors import FLAVOURED

    return FLAVOURED.get(cls, cls)  # type: ignore[return-value]
