"""Backends, the program registry, normalisation and the runner of the conformance suite.

A *program* is ``def prog(b) -> observation``; ``b`` is a backend (real dask or the
kernel-side model) with the same small surface, see :class:`Backend`.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Program name prefix -> area (the order is the report's).
AREAS = {
    "args": "argument packing",
    "opts": "scheduling options",
    "keys": "key naming",
    "scatter": "scatter",
    "gather": "gather",
    "future": "Future API",
    "exc": "exceptions",
    "client": "Client API",
    "life": "reference lifecycle",
    "varq": "Variable and Queue",
    "nested": "nested submission",
    "wait": "waiting",
    "cancel": "cancellation",
    "pending": "timeouts and pending states",
}

#: Names a program may use from ``b.ns`` (dask's spelling).
NS_NAMES = ["Client", "Future", "wait", "as_completed", "fire_and_forget", "Variable", "Queue",
            "get_client", "worker_client", "secede", "rejoin", "FutureCancelledError"]


@dataclass(frozen=True)
class Program:
    name: str
    area: str
    func: Callable[[Backend], Any]
    #: Also run on multi-process dask (needs no in-process gates; its functions are importable).
    remote: bool = False

    @property
    def doc(self) -> str:
        return (self.func.__doc__ or "").strip().splitlines()[0] if self.func.__doc__ else ""


PROGRAMS: dict[str, Program] = {}


def program(func: Callable | None = None, *, remote: bool = False):
    """Register ``func`` as a program; its name's prefix (before ``_``) is its area."""

    def register(f: Callable) -> Callable:
        prefix = f.__name__.split("_", 1)[0]
        if prefix not in AREAS:
            raise ValueError(f"{f.__name__}: unknown area prefix {prefix!r}")
        if f.__name__ in PROGRAMS:
            raise ValueError(f"{f.__name__} registered twice")
        PROGRAMS[f.__name__] = Program(f.__name__, prefix, f, remote)
        return f

    return register(func) if func is not None else register


# -- gates: tasks that wait until the program lets them go (in-process backends only) --------

GATES: dict[str, tuple[threading.Event, float]] = {}
_gate_ids = iter(range(1 << 62))


def gate_wait(name: str, value: Any = None) -> Any:
    """A task body: block until the gate ``name`` opens (or its backend's gate timeout passes)."""
    event, timeout = GATES[name]
    event.wait(timeout)
    return value


# -- normalisation --------------------------------------------------------------------------

_CLIENT_ID = re.compile(r"Client-(?:worker-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX32 = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def normalise(obj: Any, names: dict[str, str]) -> Any:
    """Plain, comparable data: known ids by role, tokens and uuids by placeholders,
    sets as sorted lists, other objects by their type name."""
    if isinstance(obj, str):
        for raw, role in names.items():
            if raw in obj:
                obj = obj.replace(raw, role)
        obj = _CLIENT_ID.sub("W", obj)
        obj = _UUID.sub("<uuid>", obj)
        obj = _ADDRESS.sub(" at 0x…", obj)
        return _HEX32.sub("<hex32>", obj)
    if obj is None or isinstance(obj, bool | int | float):
        return obj
    if isinstance(obj, tuple):
        return tuple(normalise(x, names) for x in obj)
    if isinstance(obj, list):
        return [normalise(x, names) for x in obj]
    if isinstance(obj, set | frozenset):
        return sorted((normalise(x, names) for x in obj), key=repr)
    if isinstance(obj, dict):
        return {normalise(k, names): normalise(v, names) for k, v in obj.items()}
    return f"<object {type(obj).__name__}>"


def exc_info(e: BaseException) -> tuple[str, str]:
    """What a user sees of an exception: its type's name and its message."""
    return (type(e).__name__, str(e))


# -- backends ---------------------------------------------------------------------------------


class Backend:
    """What a program sees.  Subclasses fill in the cluster-specific parts."""

    #: A program still running after this long is reported as hung.
    run_timeout = 30.0

    kind = "?"
    client: Any
    cluster: Any
    ns: types.SimpleNamespace
    #: Worker identifiers to pass to ``workers=`` (index order; normalised to w0, w1, ...).
    workers: list[str]

    def __init__(self) -> None:
        self._clients: list[Any] = []
        self._gates: list[str] = []

    # identity ------------------------------------------------------------------------------
    def client_id(self, client: Any) -> str:
        raise NotImplementedError

    def names(self) -> dict[str, str]:
        out = {self.client_id(c): f"C{i + 1}" for i, c in enumerate(self._clients)}
        out.update((w, f"w{i}") for i, w in enumerate(self.workers))
        return out

    def role(self, client_id: str) -> str:
        return normalise(client_id, self.names())

    # helpers for programs ------------------------------------------------------------------
    #: How long a gated task waits at most.  Dask's programs always open their gates; on the
    #: model a task may run inside ``submit`` (the immediate network) or block the network
    #: thread, so there the gate gives up sooner and the program goes on (and differs).
    gate_timeout = 10.0

    def gate(self) -> str:
        name = f"gate-{next(_gate_ids)}"
        GATES[name] = (threading.Event(), self.gate_timeout)
        self._gates.append(name)
        return name

    def open(self, name: str) -> None:
        GATES[name][0].set()

    def _open_all(self) -> None:
        for name in self._gates:
            GATES.pop(name)[0].set()

    def settle(self) -> None:
        raise NotImplementedError

    def new_client(self) -> Any:
        raise NotImplementedError

    def tasks(self) -> dict[str, tuple[str, list[str]]]:
        raise NotImplementedError

    def state(self, key: str) -> str | None:
        """The scheduler's state of ``key`` (None once forgotten)."""
        t = self.tasks().get(key)
        return t[0] if t else None

    def holders(self, key: str) -> int:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


def _quiet_dask_logs() -> None:
    for name in ("distributed", "distributed.scheduler", "distributed.worker", "distributed.core",
                 "distributed.client", "distributed.worker.state_machine", "distributed.batched",
                 "tornado.application", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _dask_ns() -> types.SimpleNamespace:
    import dask
    import distributed
    from distributed.client import FutureCancelledError

    ns = types.SimpleNamespace(**{n: getattr(distributed, n) for n in NS_NAMES[:-1]})
    ns.FutureCancelledError = FutureCancelledError
    ns.delayed = dask.delayed
    ns.CancelledError = concurrent.futures.CancelledError
    return ns


class _DaskBase(Backend):
    def __init__(self) -> None:
        super().__init__()
        _quiet_dask_logs()
        self.ns = _dask_ns()

    def client_id(self, client: Any) -> str:
        return client.id

    def new_client(self) -> Any:
        from distributed import Client

        c = Client(self._address(), set_as_default=True)
        self._clients.append(c)
        return c

    def _snapshot(self) -> Any:
        return (self.tasks(), tuple(sorted(self._data().items())))

    def settle(self, quiet_polls: int = 3, interval: float = 0.02, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        last, same = None, 0
        while time.monotonic() < deadline:
            snap = self._snapshot()
            if snap == last and self._flushed():
                same += 1
                if same >= quiet_polls:
                    return
            else:
                same = 0
            last = snap
            time.sleep(interval)
        raise TimeoutError("dask did not settle")

    def _flushed(self) -> bool:
        return all(not c.scheduler_comm.buffer for c in self._clients if c.scheduler_comm is not None)


class DaskInproc(_DaskBase):
    """A fresh ``LocalCluster(n_workers=2, processes=False)`` per program: 1 thread per worker,
    what dask gives on 2 cores (``threads_per_worker = cores // n_workers``)."""

    kind = "dask"

    def __init__(self) -> None:
        super().__init__()
        from distributed import LocalCluster

        with warnings.catch_warnings():  # its HTTP server falls back to a free port: fine
            warnings.filterwarnings("ignore", "Port .* is already in use")
            self.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                        dashboard_address=None)
        self.workers = [self.cluster.workers[i].address for i in sorted(self.cluster.workers)]
        self.client = self.new_client()

    def _address(self) -> Any:
        return self.cluster

    def tasks(self) -> dict[str, tuple[str, list[str]]]:
        s = self.cluster.scheduler
        names = self.names()
        return {k: (ts.state, sorted(normalise(cs.client_key, names) for cs in ts.who_wants))
                for k, ts in list(s.tasks.items())}

    def _data(self) -> dict[str, tuple[str, ...]]:
        return {w.address: tuple(sorted(map(str, w.data))) for w in self.cluster.workers.values()}

    def _flushed(self) -> bool:
        s = self.cluster.scheduler
        return (super()._flushed()
                and all(not bs.buffer for bs in list(s.stream_comms.values()))
                and all(w.batched_stream is None or not w.batched_stream.buffer
                        for w in self.cluster.workers.values()))

    def holders(self, key: str) -> int:
        return sum(key in w.data for w in self.cluster.workers.values())

    def close(self) -> None:
        self._open_all()
        for c in self._clients:
            c.close()
        self.cluster.close()


class DaskRemote(_DaskBase):
    """A client of a long-lived multi-process cluster (one per session and kind).  Each program
    gets fresh clients; ``close`` waits until the scheduler holds no task again."""

    def __init__(self, kind: str, address: str) -> None:
        super().__init__()
        self.kind = kind
        self.address = address
        self.cluster = address
        self.client = self.new_client()
        self.workers = sorted(self.client.scheduler_info()["workers"])

    def _address(self) -> Any:
        return self.address

    def tasks(self) -> dict[str, tuple[str, list[str]]]:
        raw = self.client.run_on_scheduler(_remote_tasks)
        names = self.names()
        return {k: (st, sorted(normalise(c, names) for c in who)) for k, (st, who) in raw.items()}

    def _data(self) -> dict[str, tuple[str, ...]]:
        return self.client.run(_remote_data)

    def holders(self, key: str) -> int:
        return sum(key in keys for keys in self._data().values())

    def close(self) -> None:
        for c in self._clients:
            c.close()
        deadline = time.monotonic() + 20
        from distributed import Client

        with Client(self.address, set_as_default=False) as c:
            while c.run_on_scheduler(_remote_tasks) and time.monotonic() < deadline:
                time.sleep(0.05)


def _remote_tasks(dask_scheduler) -> dict[str, tuple[str, list[str]]]:
    return {k: (ts.state, [cs.client_key for cs in ts.who_wants]) for k, ts in dask_scheduler.tasks.items()}


def _remote_data(dask_worker) -> tuple[str, ...]:
    return tuple(sorted(map(str, dask_worker.data)))


class RemoteClusters:
    """The session's multi-process dask clusters, started on first use, stopped at the end."""

    def __init__(self) -> None:
        self._clusters: dict[str, Any] = {}
        self._procs: list[subprocess.Popen] = []
        self._tmp: str | None = None

    def _env(self) -> dict[str, str]:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
        root = os.path.dirname(here)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([here, root, env.get("PYTHONPATH", "")])
        return env

    def address(self, kind: str) -> str:
        if kind in self._clusters:
            return self._clusters[kind]
        if kind == "dask-processes":
            from distributed import LocalCluster

            old = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = self._env()["PYTHONPATH"]
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", "Port .* is already in use")
                    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, host="127.0.0.1")
            finally:
                if old is None:
                    del os.environ["PYTHONPATH"]
                else:
                    os.environ["PYTHONPATH"] = old
            self._clusters[kind] = cluster.scheduler_address
            self._local = cluster
        elif kind == "dask-cli":
            self._tmp = tempfile.mkdtemp(prefix="conformance-")
            sched_file = os.path.join(self._tmp, "scheduler.json")
            port = _free_port()
            env = self._env()
            self._procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                 "--port", str(port), "--dashboard-address", ":0", "--scheduler-file", sched_file],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
            address = f"tcp://127.0.0.1:{port}"
            for i in range(2):  # two worker processes (no nanny: twice as quick to start)
                self._procs.append(subprocess.Popen(
                    [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1",
                     "--nthreads", "1", "--no-nanny", "--name", f"w{i}", "--dashboard-address", ":0"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
            from distributed import Client

            with Client(address, timeout=60, set_as_default=False) as c:
                c.wait_for_workers(2, timeout=60)
            self._clusters[kind] = address
        else:
            raise ValueError(kind)
        return self._clusters[kind]

    def close(self) -> None:
        local = getattr(self, "_local", None)
        if local is not None:
            local.close()
        for p in reversed(self._procs):
            p.terminate()
        for p in self._procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the model ----------------------------------------------------------------------------------


def model_protocol() -> str:
    """``"dask"`` once the model knows it; ``"legacy"`` (its former name) until then."""
    from jupyter_refs.protocol.variants import VARIANTS

    return "dask" if "dask" in VARIANTS else "legacy"


class _NotInModel:
    """Stands for a name ``jupyter_refs`` does not have: any use raises AttributeError."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _fail(self, *a: Any, **k: Any) -> Any:
        raise AttributeError(f"module 'jupyter_refs' has no attribute {self._name!r}")

    __call__ = _fail

    def __getattr__(self, attr: str) -> Any:
        self._fail()


def _model_ns() -> types.SimpleNamespace:
    import dask

    import jupyter_refs

    ns = types.SimpleNamespace()
    for n in NS_NAMES:
        setattr(ns, n, getattr(jupyter_refs, n, None) or _NotInModel(n))
    ns.delayed = dask.delayed
    ns.CancelledError = concurrent.futures.CancelledError
    return ns


class Model(Backend):
    """``jupyter_refs.Cluster(protocol="dask", workers=2, network=...)``."""

    gate_timeout = 1.0
    run_timeout = 10.0

    def __init__(self, network: str) -> None:
        super().__init__()
        import jupyter_refs

        self.kind = f"model-{network}"
        self.cluster = jupyter_refs.Cluster(protocol=model_protocol(), workers=2, network=network)
        self.ns = _model_ns()
        self.workers = list(self.cluster.workers)
        self.client = self.new_client()

    def client_id(self, client: Any) -> str:
        return getattr(client, "id", None) or client.name

    def names(self) -> dict[str, str]:
        out = super().names()
        out.update((f"client:{w}", "W") for w in self.workers)
        return out

    def new_client(self) -> Any:
        import jupyter_refs

        try:
            c = jupyter_refs.Client(self.cluster)
        except TypeError:  # the model before ``Client(cluster)``
            c = self.cluster.client()
        self._clients.append(c)
        return c

    def settle(self) -> None:
        import gc

        gc.collect()
        # As dask's settle: until nothing moves; a task still running (a gated one) stays
        # processing rather than being waited for.
        self.cluster.run_until_idle(quiet=0.1)

    def tasks(self) -> dict[str, tuple[str, list[str]]]:
        names = self.names()
        return {k: (ts.state, sorted(normalise(c, names) for c in ts.who_wants))
                for k, ts in list(self.cluster.scheduler.tasks.items())}

    def holders(self, key: str) -> int:
        return sum(key in w.data for w in self.cluster.workers.values())

    def close(self) -> None:
        self._open_all()
        self.cluster.close()


# -- running ---------------------------------------------------------------------------------

def run(make: Callable[[], Backend], prog: Program, timeout: float | None = None) -> Any:
    """Run ``prog`` on a fresh backend (in a thread, so a hang is reported, not suffered);
    returns its normalised observation, or ``("raised", type, message)``, or ``("hung",)``."""
    box: dict[str, Any] = {}

    def body() -> None:
        b = None
        try:
            b = make()
            try:
                obs = prog.func(b)
            except Exception as e:  # noqa: BLE001 - what the program raised is its observation
                obs = ("raised", *exc_info(e))
            box["obs"] = normalise(obs, b.names())
        except Exception as e:  # noqa: BLE001 - a backend that cannot start
            box["obs"] = ("backend failed", *exc_info(e))
        finally:
            if b is not None:
                try:
                    b.close()
                except Exception:  # noqa: BLE001 - closing is not observed
                    pass

    t = threading.Thread(target=body, name=f"conformance-{prog.name}", daemon=True)
    t.start()
    timeout = timeout or getattr(make, "run_timeout", Backend.run_timeout)
    t.join(timeout)
    if t.is_alive():
        return ("hung", f"no answer within {timeout:.0f} s")
    return box["obs"]


def backend_factory(kind: str, remote: RemoteClusters | None = None) -> Callable[[], Backend]:
    if kind == "dask":
        return DaskInproc
    if kind.startswith("model-"):
        make = lambda: Model(kind.removeprefix("model-"))  # noqa: E731
        make.run_timeout = Model.run_timeout
        return make
    assert remote is not None
    return lambda: DaskRemote(kind, remote.address(kind))


def dask_version() -> str:
    import distributed

    return distributed.__version__
