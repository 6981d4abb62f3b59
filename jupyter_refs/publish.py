"""Published datasets on the kernel-side cluster: dask's ``Client.publish_dataset`` and kin.

Signatures and behaviour are dask 2026.8.0's (``distributed/client.py``,
``distributed/publish.py``): ``publish_dataset(*args, name=None, override=False,
**kwargs)`` takes ``(value, name=…)``, ``name=value`` keywords or one
``{name: value}`` dict; ``get_dataset(name, default=…)`` and
``unpublish_dataset(name)`` take a name or a list of names; ``list_datasets()``;
``client.datasets``, a mapping over them.

The messages are dask's too, on dask's channels (``protocol/extensions.py``):
every call is an RPC; the futures a reader gets are announced on its batched
stream (``client-desires-keys``), and the put — since PR 8577 (2024.4.2) — and the
delete — since PR 9217 (2026.6.0) — first send the marker ``publish_flush_batched_send``
on the stream and wait for it on the scheduler.  Before PR 9217 (``unpublish_unordered``)
the delete went at once, and the put waited by a ``publish_wait_flush`` RPC per name;
before PR 8577 (``publish_unordered``) the put went at once too.

A dataset travels pickled, as over dask's network, so a reader's futures are new
objects with a reference each (in-process dask hands back the very objects published,
since its in-process comms do not serialize).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from .client_parts import ClientLike, FutureBase, actor, adopt, ask, check_open
from .coordination import futures_of
from .protocol import messages as m
from .protocol.serialize import dumps, loads
from .userline import user_cell

#: ``get_dataset``'s default when none is given (dask's ``no_default``).
no_default = "__no_default__"


def _marker(client: ClientLike) -> str:
    """Send the marker on the client's stream; the uid the scheduler waits for."""
    uid = uuid.uuid4().hex
    with client.cluster.call(user_cell()) as user_call:
        user_call.send(actor(client).send(m.PUBLISH_FLUSH, uid=uid))
    return uid


def _raise(reply: dict[str, Any]) -> None:
    if reply.get("error") == "KeyError":
        raise KeyError(reply["text"])


def publish_dataset(client: ClientLike, *args: Any, name: Any = None, override: bool = False,
                    **kwargs: Any) -> None:
    check_open(client, m.PUBLISH_PUT)
    names, data = list(kwargs), list(kwargs.values())
    if name:
        if not args:
            raise ValueError("If name is provided, expecting call signature like"
                             " publish_dataset(df, name='ds')")
        names.append(name)
        data.append(args[0] if len(args) == 1 else args)
    elif args:
        if len(args) != 1 or not isinstance(args[0], Mapping):
            raise ValueError("If name is omitted, positional argument must be "
                             "a {name: value} dict")
        names.extend(args[0])
        data.extend(args[0].values())
    keys = [tuple(f.key for f in futures_of(d)) for d in data]
    blobs = [dumps(d) for d in data]
    if client.cluster.variant.publish_unordered:
        # Until PR 8577: a put per name, at once (it may overtake the graph on the stream).
        for name_i, keys_i, blob in zip(names, keys, blobs, strict=True):
            _raise(ask(client, m.PUBLISH_PUT, keys_i, names=[name_i], holds=[keys_i],
                               data=[blob], override=override))
        return
    uid = _marker(client)
    if client.cluster.variant.unpublish_unordered:
        # Until PR 9217: per name, an RPC that waits for the marker, then the put.
        for name_i, keys_i, blob in zip(names, keys, blobs, strict=True):
            ask(client, m.PUBLISH_WAIT_FLUSH, uid=uid)
            _raise(ask(client, m.PUBLISH_PUT, keys_i, names=[name_i], holds=[keys_i],
                               data=[blob], override=override))
        return
    _raise(ask(client, m.PUBLISH_PUT, tuple(k for ks in keys for k in ks), names=names,
                       holds=keys, data=blobs, override=override, uid=uid))


def get_dataset(client: ClientLike, name: Any, default: Any = no_default) -> Any:
    names = name if isinstance(name, list) else [name]
    reply = ask(client, m.PUBLISH_GET, names=names)
    outs = []
    with client.cluster.call(user_cell()) as user_call:
        for record in reply["datasets"]:
            if record is None:
                if default is no_default:
                    raise KeyError(f"Dataset '{name}' not found")
                outs.append(default)
                continue
            value = loads(record["data"])  # its futures unbound, as dask's until bound here
            for f in futures_of(value):
                if isinstance(f, FutureBase) and f.client is None:
                    # dask's ``bind_client``: a reference of this client's, announced on its
                    # stream (``_inform_scheduler_of_futures``).
                    user_call.send(adopt(f, client))
            outs.append(value)
        if "token" in reply:  # fixed: after our desires on the stream, let the get's hold go
            user_call.send(actor(client).send(m.PUBLISH_GET_CONFIRM, token=reply["token"]))
    return outs if isinstance(name, list) else outs[0]


def unpublish_dataset(client: ClientLike, name: Any) -> None:
    names = name if isinstance(name, list) else [name]
    if client.cluster.variant.unpublish_unordered:
        ask(client, m.PUBLISH_DELETE, names=names)  # until PR 9217: at once
        return
    uid = _marker(client)
    ask(client, m.PUBLISH_DELETE, names=names, uid=uid)


def list_datasets(client: ClientLike) -> list[Any]:
    return ask(client, m.PUBLISH_LIST)["names"]


class Datasets(MutableMapping):
    """``client.datasets``: the published datasets as a mapping (dask's ``Datasets``)."""

    __slots__ = ("_client",)

    def __init__(self, client: ClientLike):
        self._client = client

    def __getitem__(self, key: Any) -> Any:
        return self._client.get_dataset(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._client.publish_dataset(value, name=key)

    def __delitem__(self, key: Any) -> None:
        self._client.unpublish_dataset(key)

    def __iter__(self) -> Iterator[Any]:
        yield from self._client.list_datasets()

    def __aiter__(self) -> Any:
        """dask's answer to ``async for`` on a synchronous client (the model has no other)."""
        raise TypeError("Can't invoke 'async for' on client.datasets when client is "
                        "synchronous; use iter() or 'for' instead")

    def __len__(self) -> int:
        return len(self._client.list_datasets())
