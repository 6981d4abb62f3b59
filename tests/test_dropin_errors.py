"""What a dask user catches, caught under the switch: dask's exception classes (the model's
are subclasses of them once ``distributed`` is imported), a worker's client that cannot
connect in no time, a collection whose persisted futures were released — each run on real
dask and under the switch, with the same outcome (dask's own synchronous tests found them
apart: they caught nothing, or left a refcount the scheduler no longer shared)."""

from __future__ import annotations

import pytest
from test_dropin import _outcome

import jupyter_refs as jr

distributed = pytest.importorskip("distributed")

SNIPPETS = {
    "future_cancelled": ("from distributed.client import FutureCancelledError\n"
                         "f = client.submit(inc, 1)\nf.cancel()\n"
                         "try:\n    f.result()\n"
                         "except FutureCancelledError as e:\n"
                         "    out = ('caught', e.key == f.key, e.reason)"),
    "futures_cancelled_in_wait": ("from distributed.client import FuturesCancelledError\n"
                                  "from distributed import wait\n"
                                  "f = client.submit(inc, 1)\nf.cancel()\n"
                                  "try:\n    wait([f])\n"
                                  "except FuturesCancelledError as e:\n"
                                  "    out = ('caught', [(g.reason, len(g.errors)) "
                                  "for g in e.error_groups])"),
    "closed_client": ("from distributed.client import ClosedClientError\nclient.close()\n"
                      "try:\n    client.submit(inc, 1)\n"
                      "except ClosedClientError as e:\n    out = ('caught', str(e))"),
}


@pytest.mark.dask
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_dasks_exceptions_are_caught_as_on_dask(name):
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    real = _outcome(SNIPPETS[name])
    with jr.model():
        model = _outcome(SNIPPETS[name])
    assert model == real and model.startswith("returned ('caught'")


def test_the_models_classes_stay_its_own():
    # Still the model's errors (their text, their %refs --why note), with dask's as bases.
    from distributed.client import FutureCancelledError

    with jr.model(network="immediate"), jr.Client(n_workers=1) as client:
        f = client.submit(inc, 1)
        f.cancel()
        with pytest.raises(FutureCancelledError) as info:
            f.result()
    assert isinstance(info.value, jr.FutureCancelledError)
    assert "%refs --why" in "".join(getattr(info.value, "__notes__", []))
    import pickle

    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is type(info.value) and str(again) == str(info.value)


def inc(x: int) -> int:
    return x + 1
