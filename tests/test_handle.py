"""Both clusters the magics and views drive implement ClusterHandle, member for member.

The magics and views call a handle's members without asking which cluster they have
(no ``getattr`` probing), so a member missing from one implementation, or returning
another type, would only show when a user reached that line on that cluster.  Here
every declared member is looked up on a real kernel-side ``Cluster`` and on a real
``DaskTracer`` attached to an in-process dask cluster: present, of the declared type
(attributes and properties by value; methods by signature and by what a call returns).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing

import pytest

from jupyter_refs import Cluster
from jupyter_refs.handle import ClusterHandle, InFlight
from jupyter_refs.protocol.messages import Message

HINTS = typing.get_type_hints(ClusterHandle)
MEMBERS = {name: value for name, value in vars(ClusterHandle).items()
           if not name.startswith("_") and (callable(value) or isinstance(value, property))}
PROPERTIES = {name: typing.get_type_hints(p.fget)["return"] for name, p in MEMBERS.items()
              if isinstance(p, property)}
METHODS = {name: f for name, f in MEMBERS.items() if not isinstance(f, property)}
IN_FLIGHT = typing.get_type_hints(InFlight)


def test_the_protocol_declares_what_the_magics_and_views_use():
    assert {"trace", "checks", "closed"} <= set(HINTS)
    assert {"title", "violations", "in_flight", "held", "can_hold", "steppable",
            "focused", "ended", "actors"} <= set(PROPERTIES)
    assert {"channels", "hold", "release_holds", "deliver", "step", "run_until_idle",
            "apply_drops", "sync", "why", "scheduler_state", "close", "focus"} <= set(METHODS)


def _conforms(value: object, hint: object) -> bool:
    """``value`` is of type ``hint`` (unions, ``list[...]`` / ``set[...]``, InFlight)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is InFlight:
        return all(hasattr(value, name) for name in IN_FLIGHT)
    if origin in (list, set):
        (item,) = typing.get_args(hint)
        return isinstance(value, origin) and all(_conforms(v, item) for v in value)
    return isinstance(value, origin or hint)


def _check_members(impl: object) -> None:
    for name, hint in HINTS.items():
        assert _conforms(getattr(impl, name), hint), f"{type(impl).__name__}.{name}: not {hint}"
    for name, hint in PROPERTIES.items():
        assert _conforms(getattr(impl, name), hint), f"{type(impl).__name__}.{name}: not {hint}"
    for name, declared in METHODS.items():
        method = getattr(impl, name)
        assert callable(method), f"{type(impl).__name__}.{name} is not a method"
        want = list(inspect.signature(declared).parameters.values())[1:]  # without self
        have = inspect.signature(method).parameters
        for p in want:
            assert p.name in have, f"{type(impl).__name__}.{name} takes no {p.name!r}"
            assert (p.default is inspect.Parameter.empty
                    or have[p.name].default is not inspect.Parameter.empty), (
                f"{type(impl).__name__}.{name}: {p.name!r} needs a default, as declared")
        extra = [p for n, p in have.items() if n not in {q.name for q in want}
                 and p.default is inspect.Parameter.empty
                 and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        assert not extra, f"{type(impl).__name__}.{name} needs more than declared: {extra}"


def _returns(impl: object, key: str) -> None:
    """What each method returns, called on a cluster that has seen ``key``."""
    returns = {name: typing.get_type_hints(f)["return"] for name, f in METHODS.items()}
    calls = {"channels": (), "sync": (), "apply_drops": (), "step": (1,), "run_until_idle": (),
             "release_holds": (), "scheduler_state": (key,), "why": (key,), "focus": ()}
    for name, args in calls.items():
        value = getattr(impl, name)(*args)
        assert _conforms(value, returns[name]), f"{type(impl).__name__}.{name}() gave {value!r}"


def test_the_kernel_side_cluster_is_a_handle():
    with Cluster(protocol="legacy", network="manual") as cluster:
        client = cluster.client()
        x = client.scatter(1)  # pending: its messages wait by hand
        assert cluster.in_flight and cluster.steppable and cluster.can_hold
        assert {m.channel for m in cluster.in_flight} <= cluster.channels()
        _check_members(cluster)
        assert _conforms(cluster.deliver(cluster.in_flight[0].msg_id), InFlight)
        _returns(cluster, x.key)
        assert cluster.title == "protocol=dask network=manual"  # legacy is today's dask
    assert cluster.closed and not cluster.can_hold


def test_the_dask_tracer_is_a_handle(inproc):
    from jupyter_refs.dask import attach
    from jupyter_refs.dask.holds import HeldMessage

    with attach(inproc) as tracer:
        x = inproc.scatter(7)
        assert x.result() == 7
        tracer.sync()
        _check_members(tracer)
        _returns(tracer, x.key)
        assert tracer.can_hold and tracer.steppable  # the scheduler runs in this process
        assert any(c.startswith("rpc:client:1#") for c in tracer.channels()), tracer.channels()
        assert tracer.title.startswith("dask ")
    assert tracer.closed and not tracer.can_hold
    # What the tracer's in_flight lists, and deliver / step return.
    for cls in (Message, HeldMessage):
        fields = {f.name for f in dataclasses.fields(cls)}
        assert set(IN_FLIGHT) <= fields, cls


#: Names the magics and views give the current cluster.
_HANDLE_NAMES = {"cluster", "current", "_current", "handle", "_handle", "source", "c"}


@pytest.mark.parametrize("module", ["jupyter_refs.magics", "jupyter_refs.views.timeline",
                                    "jupyter_refs.views.lab", "jupyter_refs.views.refs"])
def test_nothing_probes_the_handle_with_getattr(module):
    import ast
    import importlib

    tree = ast.parse(inspect.getsource(importlib.import_module(module)))
    probes = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr") and node.args):
            target = node.args[0]
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if name in _HANDLE_NAMES:
                probes.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert probes == []
