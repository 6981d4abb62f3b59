"""The one table of known differences: program name -> why the model may differ from dask.

A key is a program name (the difference is accepted on every model network) or
``"name[network]"`` (on that network only).  Only real, deliberate, reasoned differences
belong here — never a program that fails because the model is not finished.
"""

_IMMEDIATE_RUNS_TASKS = (
    "timing only: the immediate network drains before each call returns, so submit returns "
    "after the task has run; a pending state cannot be observed (it is on the live network)")

KNOWN: dict[str, str] = {
    f"{name}[immediate]": _IMMEDIATE_RUNS_TASKS
    for name in [
        "future_done_pending",
        "future_repr_pending",
        "future_result_timeout",
        "pending_after_submit",
        "pending_map_statuses",
        "pending_result_timeout_keeps_pending",
        "pending_sleep",
    ]
}
