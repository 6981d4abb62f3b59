"""The dask-like API on the kernel-side cluster: results, keys, refcounts, errors."""

from __future__ import annotations

import gc
import sys
import threading

import pytest
from helpers import CyclingModule, inc

from jupyter_refs import (
    Cluster,
    ClusterClosedError,
    FutureCancelledError,
    HeldMessagesError,
    NotDeliverableError,
    SerializationError,
    UnknownMessageError,
)
from jupyter_refs.errors import ProtocolError


@pytest.fixture
def cluster():
    with Cluster(protocol="legacy", workers=2, network="immediate") as c:
        yield c


def test_scatter_keys_are_deterministic(cluster):
    client = cluster.client()
    a, b = client.scatter(123), client.scatter(123)
    assert a.key == b.key and a.key.startswith("int-")
    assert client.refcount[a.key] == 2
    c = client.scatter(123, hash=False)
    assert c.key != a.key and c.key.startswith("int-")
    assert client.scatter({"x": 1})["x"].key == "x"
    assert [f.result() for f in client.scatter([1, 2, 3])] == [1, 2, 3]


def test_submit_pure_and_non_pure_keys(cluster):
    client = cluster.client()
    assert client.submit(inc, 1).key == client.submit(inc, 1).key
    assert client.submit(inc, 1, pure=False).key != client.submit(inc, 1, pure=False).key
    assert client.submit(inc, 1, key="mine").key == "mine"


def echo(value):
    return value


def test_map_keys_are_dasks(cluster):
    """Each key of a pure ``map`` is ``funcname-tokenize(tokenize(func, kwargs), args)``, as
    distributed's ``map`` makes it: plain arguments (hashed without a pass) and the rest."""
    from dask.base import tokenize

    client = cluster.client()
    values = [1, "x", 2.5, -0.0, 0.0, None, True, b"y", [1, 2], (3, "z")]
    futures = client.map(echo, values)
    tok = tokenize(echo, {})
    assert [f.key for f in futures] == [f"echo-{tokenize(tok, (v,))}" for v in values]
    assert client.gather(futures) == values


def _made_by_a_cell(source: str, **names: object):
    """The function ``add`` a notebook cell's ``source`` defines, made anew as each run of the
    cell makes it: in a namespace of its own whose ``__name__`` is ``__main__``."""
    namespace = {"__name__": "__main__", **names}
    exec(source, namespace)
    return namespace["add"]


def test_a_cells_function_made_anew_keys_as_dask_tokenizes_it(cluster, monkeypatch):
    """A function a cell defines is a new object each time the cell runs (every run of an
    explored cell): its token is kept by its cloudpickle, which is what dask hashes.  Each
    key is dask's; a function that pickles otherwise — another value of a global it reads,
    another default, a ``__dask_tokenize__`` of its own — keys otherwise, as dask says."""
    from dask.base import tokenize

    import jupyter_refs.client as client_module
    from jupyter_refs.protocol.serialize import dumps

    normalized = []
    real = client_module.normalize_token
    monkeypatch.setattr(client_module, "normalize_token",
                        lambda obj: normalized.append(obj) or real(obj))
    client = cluster.client()
    source = "def add(x, y=1):\n    return x + y + bias\n"
    own = _made_by_a_cell(source, bias=0)
    own.__dask_tokenize__ = lambda: "mine"
    made = [_made_by_a_cell(source, bias=0), _made_by_a_cell(source, bias=0),
            _made_by_a_cell(source, bias=5), _made_by_a_cell(source.replace("y=1", "y=2"), bias=0),
            own]
    keys = [client.submit(f, 1).key for f in made]
    assert keys == [f"add-{tokenize(f, {}, 1)}" for f in made]
    assert keys[0] == keys[1] and len(set(keys[1:])) == 4
    assert [client.submit(f, 1).result() for f in made] == [2, 2, 7, 3, 2]
    assert made[1] not in normalized  # its token was the first one's, by their bytes
    assert client_module._FUNCTIONS[made[1]][0] == dumps(made[1])  # its blob, as dumps makes it


def test_a_bounded_cache_lets_its_oldest_entries_go():
    """The client's caches (functions, tokens) keep their newest entries below their limit,
    whichever thread adds one: room is made by letting the oldest go."""
    from jupyter_refs.client import _room

    table = dict.fromkeys(range(5))
    _room(table, 5)
    assert list(table) == [1, 2, 3, 4]
    _room(table, 2)
    assert list(table) == [4]
    _room(table, 2)
    assert list(table) == [4]


def test_submit_map_gather(cluster):
    client = cluster.client()
    x = client.scatter(10)
    y = client.submit(inc, x)
    z = client.submit(lambda a, b: a * b, y, x)
    assert z.result() == 110
    futures = client.map(inc, range(100))
    assert client.gather(futures) == list(range(1, 101))
    assert client.gather({"a": x, "b": y}) == {"a": 10, "b": 11}
    assert cluster.violations == []


def test_dependencies_across_workers(cluster):
    client = cluster.client()
    a = client.scatter(1, workers=["worker:0"])
    b = client.scatter(2, workers=["worker:1"])
    assert client.submit(lambda p, q: p + q, a, b).result() == 3


def test_task_error_is_raised(cluster):
    client = cluster.client()

    def boom(x):
        raise ValueError(f"bad {x}")

    f = client.submit(boom, 1)
    with pytest.raises(ValueError, match="bad 1"):
        f.result()
    assert f.status == "error"
    g = client.submit(inc, f)  # a dependent of a failed task fails too
    with pytest.raises(ValueError, match="bad 1"):
        g.result()


def test_release_and_garbage_collection_drop_the_refcount(cluster):
    client = cluster.client()
    x = client.scatter(5)
    key = x.key
    y = client.scatter(5)
    assert client.refcount[key] == 2
    x.release()
    assert client.refcount[key] == 1 and x.status == "finished"  # y still holds the key
    del y
    gc.collect()
    cluster.run_until_idle()
    assert client.refcount[key] == 0
    assert cluster.scheduler_state(key) == "forgotten"
    decs = [e for e in cluster.trace.events(key=key, kind="refcount.dec")]
    assert [(e.get("before"), e.get("after")) for e in decs] == [(2, 1), (1, 0)]


def test_events_carry_the_users_source_line(cluster):
    client = cluster.client()
    x = client.scatter(7)  # this line
    created = cluster.trace.events(key=x.key, kind="future.created")[0]
    assert created.cell.endswith(f"test_api.py:{created.cell.rsplit(':', 1)[1]}")
    assert "test_api.py" in created.cell
    received = cluster.trace.events(key=x.key, kind="msg.received")[0]
    assert received.cell is None  # what the network did was not the user's line


# -- bad input: a clear error, and the cluster and trace stay usable ------------------


def test_unpicklable_data_is_refused_and_nothing_changes(cluster):
    import threading

    client = cluster.client()
    before = (len(cluster.trace), len(cluster.in_flight), dict(client._state.refcount))
    with pytest.raises(SerializationError, match="_thread.lock"):
        client.scatter(threading.Lock())
    with pytest.raises(SerializationError, match="_thread.lock"):
        client.scatter([1, threading.Lock()])
    # submit fails as dask's does (its one-task graph cannot be serialized), the cause named
    with pytest.raises(TypeError, match="Could not serialize object of type LLGExpr") as info:
        client.submit(inc, threading.Lock())
    assert "_thread.lock" in str(info.value.__cause__)
    assert (len(cluster.trace), len(cluster.in_flight), dict(client._state.refcount)) == before
    assert client.scatter(1).result() == 1


def test_unknown_and_queued_msg_ids():
    with Cluster(network="manual") as cluster:
        client = cluster.client()
        x = client.scatter(1)
        with pytest.raises(UnknownMessageError, match="999 is not in flight"):
            cluster.deliver(999)
        cluster.run_until_idle()
        del x
        f = client.submit(inc, 1)
        stream = [m for m in cluster.in_flight if m.batched]
        assert len(stream) == 2  # release, then update-graph, on one FIFO stream
        with pytest.raises(NotDeliverableError, match=f"behind #{stream[0].msg_id}"):
            cluster.deliver(stream[1].msg_id)
        n = len(cluster.trace)
        cluster.deliver(stream[0].msg_id)
        assert len(cluster.trace) > n
        cluster.run_until_idle()
        assert f.status == "finished"


def test_result_on_a_held_message_names_it():
    with Cluster(network="manual") as cluster:
        client = cluster.client()
        x = client.scatter(1)
        assert x.status == "pending"
        with pytest.raises(HeldMessagesError, match=r"#1 scatter"):
            x.result()
        with pytest.raises(HeldMessagesError, match="scatter"):
            client.submit(inc, x)
        cluster.run_until_idle()
        assert x.status == "finished"


@pytest.mark.parametrize("network", ["live", "immediate", "random"])
def test_result_behind_a_hold_names_the_hold_and_how_to_lift_it(network):
    """Issue 46.4: after the README's %hold, a result on a live (or immediate) network blamed
    "the manual network" and said nothing of the hold."""
    with Cluster(protocol="dask", network=network, seed=1) as cluster:
        client = cluster.client()
        x = client.scatter(1)
        cluster.hold("client:1->scheduler")
        with pytest.raises(HeldMessagesError) as caught:
            client.submit(inc, x).result(timeout=30)
        text = str(caught.value)
        assert "manual" not in text
        assert "the hold on client:1->scheduler keeps #" in text and "update-graph" in text
        assert "%hold --off (cluster.release_holds())" in text
        assert caught.value.holds == ["client:1->scheduler"]
        cluster.release_holds()
        assert client.submit(inc, x).result(timeout=30) == 2


def test_result_on_a_released_future(cluster):
    client = cluster.client()
    x = client.scatter(1)
    x.release()
    assert x.status == "cancelled"  # as dask: the last reference released cancels the key
    with pytest.raises(FutureCancelledError, match="cancelled for reason: unknown"):
        x.result()
    with pytest.raises(FutureCancelledError, match="lost dependencies"):
        client.submit(inc, x).result()
    assert client.scatter(2).result() == 2


def test_calls_after_close():
    cluster = Cluster(network="immediate")
    client = cluster.client()
    x = client.scatter(1)
    cluster.close()
    cluster.close()  # twice is harmless
    for call in (lambda: client.scatter(2), lambda: x.result(), lambda: cluster.step(),
                 lambda: cluster.client(), lambda: client.submit(inc, 1)):
        with pytest.raises(ClusterClosedError, match="closed"):
            call()
    x.release()  # dropping a future after close is silent
    assert len(cluster.trace) > 0 and cluster.trace.to_jsonl()


def test_unknown_protocol_and_network():
    with pytest.raises(ProtocolError, match="unknown protocol 'nope'"):
        Cluster(protocol="nope")
    with pytest.raises(ProtocolError, match="unknown network 'nope'"):
        Cluster(network="nope")


def test_gather_takes_futures(cluster):
    client = cluster.client()
    assert client.gather([1, (2,)]) == [1, (2,)]  # as dask: anything else passes through
    other = cluster.client()
    with pytest.raises(ValueError, match="belongs to client:1"):
        other.gather(client.scatter(1))


def test_random_network_is_reproducible_from_its_seed():
    def order(seed):
        with Cluster(network="random", seed=seed) as cluster:
            client = cluster.client()
            for _ in range(20):
                x = client.scatter(123)
                del x
            cluster.run_until_idle()
            return [(e.kind, e.msg_id, e.t_ns) for e in cluster.trace.events()]

    assert order(3) == order(3)
    assert order(3) != order(4)


def test_the_collectors_thresholds_are_raised_only_while_a_call_is_served():
    def observe(*_):
        return gc.get_threshold()  # inside a task: the call that runs it is being served

    before = gc.get_threshold()
    with Cluster(network="immediate") as cluster:
        client = cluster.client()
        assert client.submit(observe).result() == tuple(t * 3 for t in before)
        assert gc.get_threshold() == before
        with pytest.raises(TypeError):
            client.submit(observe, 1, x=2).result()  # an error in the call restores them too
    assert gc.get_threshold() == before


def test_a_block_that_holds_full_collections_back_defers_them_and_loses_none():
    """``gcscope.scope(full=False)`` (the dask tracer's merge): no full collection starts in
    it however much it allocates, nested in a served call or not; the one that fell due
    starts at the first young collection after it."""
    from jupyter_refs import gcscope

    started: list[tuple[str, int]] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            held = gc.get_threshold()[2] == gcscope.NEVER
            started.append(("held" if held else "after", info["generation"]))

    before = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(seen)
    kept: list = []
    try:
        with gcscope.scope(), gcscope.scope(full=False):
            assert gc.get_threshold()[2] == gcscope.NEVER
            for _ in range(40 * before[0] * before[1] * before[2]):
                kept.append([])  # long-lived, as the merge's state: full collections fall due
        assert gc.get_threshold() == before
        for _ in range(2 * before[0] * before[1]):
            kept.append([])
    finally:
        gc.callbacks.remove(seen)
    assert ("held", 1) in started  # young and middle collections went on
    assert ("held", 2) not in started
    assert ("after", 2) in started


def test_a_dropped_future_is_released_though_a_librarys_cycle_held_the_calls_frames(monkeypatch):
    """A function with no module (defined by ``exec`` without ``__name__``) makes pickle look
    for it in every module: the shadow module's cycle then held ``submit``'s frames, and the
    future they returned, until the collector next ran — in an idle kernel, maybe never, so
    ``del future`` did not let the key go (dask's event loop allocates all the time, and its
    collector runs within moments: CI met it in dask's docs' ``del future`` example)."""
    monkeypatch.setitem(sys.modules, "shadow_like_cython", CyclingModule("shadow_like_cython"))
    env: dict = {}
    exec("def inc(x):\n    return x + 1\n", env)  # noqa: S102 - a function with no module
    assert env["inc"].__module__ is None
    before = gc.get_threshold()
    gc.collect()
    gc.set_threshold(10**6)  # the collector does not run on its own meanwhile
    try:
        with Cluster(network="immediate") as cluster:
            client = cluster.client()
            future = client.submit(env["inc"], 1)
            assert future.result() == 2
            key = future.key
            del future
            assert key not in client.futures
    finally:
        gc.set_threshold(*before)


def test_a_scheduler_handler_that_raises_answers_its_caller_and_the_cluster_goes_on(monkeypatch):
    """A bug (or an input nobody foresaw) in an extension's handler used to kill the live
    network's thread; dask's RPC handlers send the exception back to the caller instead."""
    from jupyter_refs.errors import SchedulerHandlerError
    from jupyter_refs.protocol import messages as m
    from jupyter_refs.protocol.extensions import Extensions

    def broken(self, msg, out, stimulus):
        raise ZeroDivisionError("a handler's own bug")

    monkeypatch.setitem(Extensions._handlers, m.PROCESSING_QUERY, broken)
    with Cluster(protocol="dask", network="live") as cluster:
        client = cluster.client()
        with pytest.raises(SchedulerHandlerError, match="processing handler raised "
                                                        "ZeroDivisionError: a handler's own bug"):
            client.processing()
        assert client.submit(len, "abc").result() == 3  # the network thread is alive


def test_done_callbacks_run_on_one_thread_for_the_process(cluster):
    """As dask's ``Future._cb_executor``: every client's callbacks on one thread, in the order
    their futures were done, and no thread left behind per closed client (there was one)."""
    ran: list[tuple[int, threading.Thread]] = []
    for i in range(3):
        client = cluster.client()
        done = threading.Event()
        future = client.submit(inc, i)
        future.add_done_callback(
            lambda f, done=done: (ran.append((f.result(), threading.current_thread())), done.set()))
        assert future.result() == i + 1  # immediate: the cluster moves while a call waits
        assert done.wait(10)
        client.close()
    assert [value for value, _ in ran] == [1, 2, 3]
    assert len({thread for _, thread in ran}) == 1
    assert ran[0][1] is not threading.current_thread()
    assert [t.name for t in threading.enumerate() if t.name.endswith("-callbacks")] == [
        "jupyter-refs-callbacks"]

