"""The one table of known differences: program name -> why the model may differ from dask.

A key is a program name (the difference is accepted on every model network) or
``"name[network]"`` (on that network only).  Only real, deliberate, reasoned differences
belong here — never a program that fails because the model is not finished.
"""

KNOWN: dict[str, str] = {
    "client_has_what":
        "timing: the scatter's future is dropped at once, so its release (batched) races the "
        "has_what RPC.  The immediate network delivers in sending order (the release first); "
        "the live one draws latencies, so the RPC usually overtakes, as in dask",
}


#: Programs the model does not pass *yet*: not differences we accept, but work in progress,
#: each with what is missing.  They are reported as failing in docs/conformance.md and expected
#: to fail here; fix the model, then take the line out.
_SETTLE = ("the model's settle (run_until_idle) runs every task to its end — a gated one until "
           "its gate times out — while dask's settle returns with the task still processing")
_STEALING = ("issue 14: no work stealing or occupancy in the model's placement: a sub-task can be "
             "queued behind the task that waits for it on a worker whose only thread it holds "
             "(ThreadsExhaustedError); dask sends it to the idle worker")
PENDING: dict[str, str] = {
    "nested_get_client_map": _STEALING,
    **dict.fromkeys(["cancel_running", "pending_scheduler_processing",
                     "pending_dependent_waiting"], _SETTLE),
    "wait_first_completed": ("on the immediate network a waited task runs when its turn comes, in "
                             "sending order: the gated one first, until its gate times out"),
    "wait_fire_and_forget_holder": ("the leaked_key race: on the live network the first message "
                                    "after a quiet spell goes at once, so fire_and_forget's desire "
                                    "often lands after a fast task's result (dask: 1-3 times in 30)"),
    **dict.fromkeys(["varq_variable_get_timeout", "varq_queue_get_timeout"],
                    "a stepped (immediate) wait with nothing in flight raises HeldMessagesError "
                    "at once; dask waits out the timeout"),
    "opts_resources_not_seen": "worker resources are not modelled yet: NotModelledError",
}
