"""Reference solutions of the labs and the capstone — for teachers and the tests.

The notebooks never import this module: a student who runs every cell meets the graders with
their own code.  The tests fill the notebooks' student cells with :data:`CELLS` (cell tag ->
source) and check that the graders then pass.
"""

from __future__ import annotations

import inspect
import textwrap

from jupyter_refs.checks import KeyRefs
from jupyter_refs.protocol.variants import Arrival

# -- lab 07: write the fix ----------------------------------------------------------------------


def release_applies(arrival: Arrival) -> bool:
    """A release applies only to the hold it ends: the newest the scheduler has applied.

    An older generation means the client has taken the key again since it sent this release
    (the second scatter overtook it): dropping it keeps the new hold.  A release for a key the
    client no longer wants (``held`` None) changes nothing either way: the scheduler's handler
    does nothing for a client it does not count among ``who_wants`` (dask's
    ``_client_releases_keys`` too), so True and False are both safe there; it must only not
    raise on None.
    """
    return arrival.held is None or arrival.gen >= arrival.held


# Wrong fixes the tests show failing, each with a schedule.


def never_forget_memory(arrival: Arrival) -> bool:
    """Naive: keep any key in memory.  Every dropped key then leaks (``leaked_key``)."""
    return arrival.state != "memory"


def newer_only(arrival: Arrival) -> bool:
    """Off by one: a release must be *newer* than the hold — so no release ever applies."""
    return arrival.held is not None and arrival.gen > arrival.held


def dask_today(arrival: Arrival) -> bool:
    """Doing nothing: every release applies, as in dask."""
    return True


# -- lab 07, part 3: the worker hop -------------------------------------------------------------


def copy_applies(arrival: Arrival) -> bool:
    """A free-keys (on a worker) or a release-worker-data (on the scheduler) applies only to
    the copy the receiver has now: one about another copy is late — dropping it keeps the
    fresh copy (on the worker) and the worker that holds it (in the scheduler's who_has)."""
    return arrival.gen == arrival.held


# Wrong worker-hop rules the tests show failing.


def scheduler_side_only(arrival: Arrival) -> bool:
    """Half right: the scheduler ignores a release-worker-data about another copy, but every
    free-keys applies — a late free deletes the fresh copy (form B)."""
    return arrival.op == "free-keys" or arrival.gen == arrival.held


def drop_every_copy_message(arrival: Arrival) -> bool:
    """Too careful: every free and every release-worker-data is dropped — no fresh copy is
    ever lost, and no copy is ever freed either."""
    return False


# -- lab 08: write an invariant ---------------------------------------------------------------


def lost_reference(key: KeyRefs) -> str | None:
    """A client holds a finished future, but the key is gone: forgotten by the scheduler, or
    in memory there with no worker holding its data."""
    for client, (refcount, state) in key.clients.items():
        if state != "finished":
            continue
        if key.scheduler == "forgotten":
            return (f"{client} holds a finished future for {key.key} (refcount {refcount}), "
                    "but the scheduler has forgotten it")
        if key.scheduler == "memory" and not key.on_workers:
            return (f"{client} holds a finished future for {key.key} (refcount {refcount}), "
                    "but no worker holds its data")
    return None


def forgotten_only(key: KeyRefs) -> str | None:
    """Half right: misses the order where the scheduler keeps the key but the data is gone."""
    for client, (_refcount, state) in key.clients.items():
        if state == "finished" and key.scheduler == "forgotten":
            return f"{client} holds {key.key}, forgotten"
    return None


def held_but_unknown(key: KeyRefs) -> str | None:
    """Too eager: a future is held before the scheduler hears of it — a false alarm."""
    if key.clients and key.scheduler == "forgotten":
        return f"{key.key} is held but unknown to the scheduler"
    return None


def silent(key: KeyRefs) -> str | None:
    """Doing nothing: never flags."""
    return None


def cancelled_behind_its_back(key: KeyRefs) -> str | None:
    """Part 4: a client holds a cancelled future, and it is not among the clients that asked
    for the cancel (``cancel_requested``)."""
    for client, (refcount, state) in key.clients.items():
        if state == "cancelled" and client not in key.cancel_requested:
            return (f"{client} holds a cancelled future for {key.key} (refcount {refcount}) "
                    "that it never cancelled")
    return None


def any_cancelled(key: KeyRefs) -> str | None:
    """Too eager: every cancelled future — the one the program cancels itself too."""
    for client, (_refcount, state) in key.clients.items():
        if state == "cancelled":
            return f"{client}'s future for {key.key} is cancelled"
    return None


def not_finished(key: KeyRefs) -> str | None:
    """Too eager: any held future that is not finished — pending is a normal moment."""
    for client, (_refcount, state) in key.clients.items():
        if state != "finished":
            return f"{client}'s future for {key.key} is {state}"
    return None


def lost_only(key: KeyRefs) -> str | None:
    """Half right: ``lost`` comes before ``cancelled`` for the scattered key only; the
    computation on it goes from pending to cancelled directly."""
    for client, (_refcount, state) in key.clients.items():
        if state == "lost":
            return f"{client}'s future for {key.key} is lost"
    return None


# -- lab 09: the capstone, dask#8215 ------------------------------------------------------------


def cancel_then_resubmit(client):
    """The scenario from the report: cancel a future, submit the same key again at once."""
    f = client.submit(inc, 1, key="k")
    client.cancel([f])
    g = client.submit(inc, 1, key="k")
    return g.result()


def inc(x: int) -> int:
    return x + 1


def report_applies(arrival: Arrival) -> bool:
    """A report applies only to the hold it is about: the future the client has now."""
    return arrival.held is None or arrival.gen >= arrival.held


#: The reports the capstone's rule must judge: the cancel, and the first run's result.
REPORT_OPS = ("cancelled-keys", "key-in-memory")

# The capstone's fix, on the user's side (``labs.grade_restart``): nothing in dask changes.


def restart(client, old, fn, *args):
    """Stop ``old`` and start its computation again under the same key: the new future.

    ``cancel`` queues ``cancel-keys`` on the client's batched stream; the scheduler's answer,
    ``cancelled-keys``, names only the key, and comes back on *its* stream to the client.  A
    future made before that answer has arrived is cancelled by it.  So wait for a message that
    the scheduler sends on the same stream *after* it: the result of a trivial task submitted
    after the cancel (the client's stream is in order, so the scheduler handles the cancel
    first; its stream to the client is in order, so the task's ``key-in-memory`` comes after
    the ``cancelled-keys``).  A reply to an RPC (``who_has``) comes on a channel of its own and
    can pass the answer.  (``old.release()`` in place of ``cancel`` passes too: a release is
    not answered.)
    """
    client.cancel([old])
    client.submit(fn, 0, pure=False).result()  # a round trip on the scheduler's stream
    return client.submit(fn, *args, key=old.key)


# Wrong restarts the tests show failing.


def restart_at_once(client, old, fn, *args):
    """The report's steps: fails in order."""
    client.cancel([old])
    return client.submit(fn, *args, key=old.key)


def restart_after_an_rpc(client, old, fn, *args):
    """A round trip on the wrong channel: the RPC's reply overtakes the cancel's answer."""
    client.cancel([old])
    client.who_has()
    return client.submit(fn, *args, key=old.key)


def restart_with_a_fresh_key(client, old, fn, *args):
    """Works, but not what the user asked: their keys name their computations."""
    client.cancel([old])
    return client.submit(fn, *args, key=f"{old.key}-again")


def _source(fn, name: str | None = None) -> str:
    """``fn``'s source, its ``def`` renamed to the notebook's ``name``."""
    source = textwrap.dedent(inspect.getsource(fn))
    return source if name is None else source.replace(f"def {fn.__name__}(", f"def {name}(", 1)


#: The notebooks' student cells (by tag), filled in: what the tests run.
CELLS = {
    "student-rule": _source(release_applies),
    "student-copy-rule": _source(copy_applies),
    "student-check": _source(lost_reference, "my_invariant"),
    "student-check-2": _source(cancelled_behind_its_back, "never_cancelled"),
    "student-check-8215": ("from jupyter_refs.checks import KeyRefs  # what lesson 8's cell used"
                           "\n\n\n" + _source(cancelled_behind_its_back, "never_cancelled")),
    "student-scenario": ("%%explore --protocol numbered --max 60\n"
                         "f = client.submit(inc, 1, key=\"k\")\n"
                         "client.cancel([f])\n"
                         "g = client.submit(inc, 1, key=\"k\")\n"
                         "g.result()\n"),
    "student-restart": _source(restart),
}
