"""dask's ``get_task_stream``: the records of the tasks that ran while a block ran, or
``Client.get_task_stream`` for a span of time (``distributed/diagnostics/task_stream.py``).

As dask 2026.8.0's: entering the block asks the scheduler for its stream's cursor (which
installs the stream: nothing is kept before anyone asks), leaving it collects every record
since; each record is a dict (``key``, ``worker``, ``thread``, ``startstops``, ``status``,
``nbytes``, ``type``, ``typename``, …; see ``protocol/task_stream.py``).  The plots (``plot=``,
bokeh) are not modelled, and say so.
"""

from __future__ import annotations

from typing import Any

from .client_parts import ask, current_client
from .coordination import answered
from .errors import NotModelledError
from .protocol import messages as m


def _no_plot(plot: Any) -> None:
    if plot:
        raise NotModelledError("get_task_stream(plot=...)", "the records are modelled; the "
                               "bokeh figure is not")


def _value(client: Any, op: str, **payload: Any) -> Any:
    return answered(ask(client, op, **payload))["value"]


class TaskStreamCalls:
    """``Client.get_task_stream`` (a mixin of :class:`~jupyter_refs.client.Client`)."""

    def get_task_stream(self, start: Any = None, stop: Any = None, count: int | None = None,
                        plot: Any = False, filename: str = "task-stream.html",
                        bokeh_resources: Any = None) -> list[dict[str, Any]]:
        """The task stream's records between ``start`` and ``stop`` (times, or durations
        ago as dask's strings), or the last ``count``."""
        import time

        from dask.utils import parse_timedelta

        _no_plot(plot)
        if isinstance(start, str):
            start = time.time() - parse_timedelta(start)
        if isinstance(stop, str):
            stop = time.time() - parse_timedelta(stop)
        return _value(self, m.GET_TASK_STREAM, start=start, stop=stop, count=count,
                    start_index=None)


class get_task_stream:  # noqa: N801 - dask's name
    """``with get_task_stream() as ts:`` — ``ts.data``: the records of the tasks that ended
    on the workers while the block ran."""

    def __init__(self, client: Any = None, plot: Any = False,
                 filename: str = "task-stream.html"):
        _no_plot(plot)
        self.data: list[dict[str, Any]] = []
        self.figure = None
        self.client = current_client(client)
        self._start_index: int | None = None

    def __enter__(self) -> get_task_stream:
        self._start_index = _value(self.client, m.GET_TASK_STREAM_INDEX)
        return self

    def __exit__(self, *exc: object) -> None:
        self.data.extend(_value(self.client, m.GET_TASK_STREAM, start=None, stop=None,
                              count=None, start_index=self._start_index))
