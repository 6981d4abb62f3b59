"""dask's ``performance_report``: ``with performance_report(filename="report.html"):`` writes a
static HTML page of what ran in the block (``distributed/client.py`` and
``Scheduler.performance_report``).

As dask 2026.8.0's, drawn from the model's own records with dask's own pieces: entering
installs the scheduler's task stream (``protocol/task_stream.py``); leaving writes, through
``fsspec`` as dask does, a bokeh page in dask's template with dask's tabs — the summary
(duration, the number of tasks and the time spent per action, the scheduler's address,
workers, threads and memory, the versions, the calling code), the task stream
(``task_stream_figure`` filled by ``rectangles`` of the block's records), the scheduler's
logs since the block began (``protocol/logs.py``) and the workers' compute profile
(``profiler.py``).  What the model does not measure — the workers' administrative and the
scheduler's own profiles, bandwidth, the system monitor — is a tab that says so.  The
asynchronous form (``async with``) is not modelled.
"""

from __future__ import annotations

import time
from typing import Any

from .errors import NotModelledError

#: dask's tabs the model has no data for, and what each would show.
NOT_MEASURED = {
    "Worker Profile (compute)": "the workers' profile on a stepped network (no clock)",
    "System": "the system monitor (CPU, memory, network of the scheduler's process)",
    "Worker Profile (administrative)": "the workers' event-loop profile",
    "Scheduler Profile (administrative)": "the scheduler's own profile",
    "Bandwidth (Workers)": "the bandwidth between workers",
    "Bandwidth (Types)": "the bandwidth by data type",
}


class _SchedulerLog:
    """What dask's ``SchedulerLogs`` reads of a scheduler: ``get_logs``."""

    def __init__(self, cluster: Any):
        self._cluster = cluster

    def get_logs(self, start: float = 0, n: int | None = None,
                 timestamps: bool = False) -> list[tuple[Any, ...]]:
        with self._cluster.locked():
            return self._cluster.scheduler.log.get(start=start or 0, n=n, timestamps=timestamps)


class performance_report:  # noqa: N801 - dask's name
    """``with performance_report(filename=...):`` — see the module's doc."""

    def __init__(self, filename: str = "dask-report.html", stacklevel: int = 1,
                 mode: str | None = None, storage_options: dict[str, Any] | None = None):
        self.filename = filename
        self._stacklevel = stacklevel if stacklevel > 0 else 1
        self.mode = mode
        self.storage_options = storage_options or {}

    def __enter__(self) -> None:
        from .client_parts import current_client
        from .task_stream import get_task_stream

        self.start = time.time()
        self._stream = get_task_stream(current_client())  # the block's records, as dask's
        self._stream.__enter__()

    def __exit__(self, *exc: object) -> None:
        import fsspec

        from .computation_code import code_at

        code = code_at(self._stacklevel)
        self._stream.__exit__(*exc)
        data = report(self._stream.client, self.start, self._stream.data, code, self.mode)
        with fsspec.open(self.filename, mode="w", compression="infer",
                         **self.storage_options) as f:
            f.write(data)

    async def __aenter__(self) -> None:
        raise NotModelledError("async with performance_report(...)",
                               "the kernel-side cluster has no event loop to await on")

    async def __aexit__(self, *exc: object) -> None:  # pragma: no cover - never entered
        return None


def report(client: Any, start: float, records: list[dict[str, Any]], code: str,
           mode: str | None = None) -> str:
    """The page dask's ``Scheduler.performance_report`` makes, from the model's records."""
    import os
    from collections import defaultdict

    import dask
    import distributed
    from bokeh.core.templates import get_env
    from bokeh.models import Div, TabPanel, Tabs
    from bokeh.plotting import output_file, save
    from dask.utils import format_bytes, format_time, tmpfile
    from distributed import profile
    from distributed.dashboard.components.scheduler import (
        _STYLES,
        SchedulerLogs,
        task_stream_figure,
    )
    from distributed.diagnostics.task_stream import rectangles

    stop = time.time()
    cluster = client.cluster
    timespent: defaultdict[str, float] = defaultdict(float)
    for record in records:
        for x in record["startstops"]:
            timespent[x["action"]] += x["stop"] - x["start"]
    timings = "".join(f"\n<li> {k} time: {format_time(timespent[k])} </li>"
                      for k in sorted(timespent))
    with cluster.locked():
        workers = list(cluster.scheduler.workers)
        threads = sum(cluster.scheduler.nthreads.get(w, 0) for w in workers)
    summary = f"""
        <h1> Dask Performance Report </h1>

        <i> Select different tabs on the top for additional information </i>

        <h2> Duration: {format_time(stop - start)} </h2>
        <h2> Tasks Information </h2>
        <ul>
         <li> number of tasks: {len(records)} </li>
         {timings}
        </ul>

        <h2> Scheduler Information </h2>
        <ul>
          <li> Address: {cluster.scheduler_address} </li>
          <li> Workers: {len(workers)} </li>
          <li> Threads: {threads} </li>
          <li> Memory: {format_bytes(0)} </li>
          <li> Dask Version: {dask.__version__} </li>
          <li> Dask.Distributed Version: {distributed.__version__} </li>
        </ul>

        <h2> Calling Code </h2>
        <pre>
{code}
        </pre>
        """

    def not_measured(title: str) -> TabPanel:
        text = (f"<p>Not modelled: {NOT_MEASURED[title]}.  The kernel-side cluster "
                "(jupyter_refs) does not measure it.</p>")
        return TabPanel(child=Div(text=text, styles=_STYLES), title=title)

    source, stream = task_stream_figure(sizing_mode="stretch_both")
    source.data.update(rectangles(records))
    try:
        compute_profile = client.profile(start=start)
    except NotModelledError:  # a stepped network samples nothing: the tab says so
        compute_tab = not_measured("Worker Profile (compute)")
    else:
        compute, _ = profile.plot_figure(profile.plot_data(compute_profile),
                                         sizing_mode="stretch_both")
        compute_tab = TabPanel(child=compute, title="Worker Profile (compute)")
    logs = SchedulerLogs(_SchedulerLog(cluster), start=start)

    tabs = Tabs(tabs=[
        TabPanel(child=Div(text=summary, styles=_STYLES), title="Summary"),
        TabPanel(child=stream, title="Task Stream"),
        not_measured("System"),
        TabPanel(child=logs.root, title="Scheduler Logs"),
        compute_tab,
        not_measured("Worker Profile (administrative)"),
        not_measured("Scheduler Profile (administrative)"),
        not_measured("Bandwidth (Workers)"),
        not_measured("Bandwidth (Types)"),
    ], sizing_mode="stretch_both")
    with tmpfile(extension=".html") as fn:
        output_file(filename=fn, title="Dask Performance Report", mode=mode)
        env = get_env()
        env.loader.searchpath.append(os.path.join(os.path.dirname(distributed.__file__),
                                                  "dashboard", "templates"))
        save(tabs, filename=fn, template=env.get_template("performance_report.html"))
        with open(fn) as f:
            return f.read()
