"""Protocol variants as data.

The legacy and fixed protocols use the *same* channels (scatter is an RPC,
releases ride the batched client stream, frees ride the batched worker stream),
so any delivery order that can happen under one can happen under the other.
They differ only in what the messages carry and how a receiver treats a
message that arrives late:

``generations``
    The client numbers each *hold* of a key: the refcount going 0→1 starts a
    new generation.  Desires (scatter, update-graph) and releases carry it.
    The scheduler applies a scatter's desire when the request arrives, before
    the worker put, and drops a release whose generation is older than the
    newest desire it has seen from that client: such a release belongs to a
    hold that has already been superseded.  Reports to the client
    (key-in-memory, lost-data, cancelled-keys) carry the generation they are
    about, so the client ignores those meant for an earlier hold.  This closes
    #8576 variant A (the late release) and variant B (the release landing
    inside the scatter RPC).

``incarnations``
    Every copy of a key that the scheduler puts on a worker (a scatter put or a
    computed result) gets a fresh, increasing incarnation number.  A worker
    keeps each copy apart and ``free-keys`` deletes exactly the copy it names;
    the scheduler remembers which copy each worker holds, and ignores a
    ``release-worker-data`` about any other copy.  A scatter whose hold was
    released while its put travelled is not registered: its copy is freed.  A
    free for the previous life of a key can no longer delete the data of its
    next life, whatever order the batched free and the put RPC take.

Both are needed: the property tests find lost futures with either one alone.

``deserialized_claims`` (legacy only)
    A future deserialized inside a task's arguments on a worker claims its key
    for the worker's client: it sends ``client-desires-keys``, as dask did
    before PR 8827.  Under ``fixed`` such a future is *borrowed*: the task can
    read its key, but it neither counts as a reference nor tells the scheduler.

``desire_creates`` (legacy only)
    ``client-desires-keys`` for a key the scheduler does not know creates a
    task for it — in ``released``, with no run spec: a *ghost*, which the next
    transition that reaches it trips over.  Under ``fixed`` an unknown key is
    never created: the scheduler records a warning (``desire.unknown``) and
    reports the future cancelled, saying the key was unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ProtocolError


@dataclass(frozen=True, slots=True)
class ProtocolVariant:
    name: str
    generations: bool
    incarnations: bool
    summary: str
    #: Non-hashed keys from an atomic allocator (see ``jupyter_refs.ids``).
    atomic_ids: bool = True
    deserialized_claims: bool = False
    desire_creates: bool = False


LEGACY = ProtocolVariant(
    name="legacy",
    generations=False,
    incarnations=False,
    summary="dask's behaviour: a late client-releases-keys can forget a re-scattered key",
    atomic_ids=False,
    deserialized_claims=True,
    desire_creates=True,
)
FIXED = ProtocolVariant(
    name="fixed",
    generations=True,
    incarnations=True,
    summary="releases carry the hold's generation and frees the key's incarnation; "
    "stale ones are ignored; ids are atomic; an unknown key is never created",
)

VARIANTS = {v.name: v for v in (LEGACY, FIXED)}


def get_variant(protocol: str | ProtocolVariant) -> ProtocolVariant:
    if isinstance(protocol, ProtocolVariant):
        return protocol
    try:
        return VARIANTS[protocol]
    except KeyError:
        raise ProtocolError(
            f"unknown protocol {protocol!r}; choose one of {', '.join(VARIANTS)}"
        ) from None
