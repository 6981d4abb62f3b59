"""Ready-made runs of the races, shared by the command line, the tests and the notebooks."""

from __future__ import annotations

from dataclasses import dataclass

from .checks import Violation
from .cluster import Cluster
from .errors import FutureCancelledError


def inc(x: int) -> int:
    return x + 1


@dataclass
class ScatterRaceResult:
    cluster: Cluster
    iterations: int
    violation: Violation | None
    #: What the next computation on the held future gave: a value, or the cancellation text.
    aftermath: str | None


def scatter_race(protocol: str = "dask", seed: int | None = 0, iterations: int = 200,
                 network: str = "random") -> ScatterRaceResult:
    """Crusaderky's loop from dask#8576: scatter the same value, check, drop, repeat.

    Stops at the first violation.  Then, while still holding the future, it
    submits ``inc`` on it — on a lost key that is what a user meets next: a
    cancellation when the scheduler forgot the key (variant A), an error from
    the task when the worker deleted the data (variant B).  Whatever the
    computation raises is reported in ``aftermath``, never raised here.
    """
    cluster = Cluster(protocol=protocol, workers=1, network=network, seed=seed)
    client = cluster.client()
    x = None
    done = 0
    while done < iterations:
        done += 1
        x = client.scatter(123)
        if cluster.violations:
            break
        del x
        x = None
    aftermath = None
    if x is not None:
        try:
            aftermath = f"inc(x) = {client.submit(inc, x, pure=False).result(timeout=5)}"
        except FutureCancelledError as exc:
            aftermath = f"inc(x) was cancelled: {exc.reason}"
        except Exception as exc:  # noqa: BLE001 - what the user meets next is the demo's point
            aftermath = f"inc(x) raised {type(exc).__name__}: {exc}"
        del x
    cluster.run_until_idle()
    violations = cluster.violations
    return ScatterRaceResult(cluster, done, violations[0] if violations else None, aftermath)
