"""IPython magics: a thin layer over the library.

``%load_ext jupyter_refs`` registers them: ``%cluster``, ``%scatter``, ``%release``,
``%refs``, ``%%trace``, ``%timeline``, ``%step``, ``%hold``, ``%%explore``,
``%replay`` and ``%confirm``.  Each magic parses its arguments with IPython's
``magic_arguments`` (so ``%cluster?`` shows real help), calls the library, and
displays a view.  Bad input raises ``UsageError`` with one line, before anything
in the cluster or the trace is touched.  A trailing ``# comment`` is ignored, as
Python ignores one (users paste the README's blocks), and a line is split as a shell
splits one, so a key of any text is named quoted (``%refs --why 'my key'``).

The magics talk to the current cluster through :class:`~jupyter_refs.handle.ClusterHandle`
— the kernel-side ``Cluster`` and an attached dask cluster's ``DaskTracer`` both
implement it — and use only the library's public API, never an actor.
"""

from __future__ import annotations

import ast
import io
import re
import shlex
import sys
import weakref
from fnmatch import fnmatchcase
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from traitlets import Float, Int, Unicode

from .client import Future, check_serializable
from .cluster import Cluster
from .errors import ClusterClosedError, JupyterRefsError, ProtocolError
from .handle import ClusterHandle
from .network import POLICIES
from .protocol.variants import PROTOCOL_HELP, PROTOCOL_NAMES, ProtocolVariant, is_registered, protocol_type
from .userline import user_frame

_ASSIGN = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<expr>.+?)\s*$")
_SCATTER_OPTS = re.compile(r"(?:\s+(?:--no-hash|--client\s+\S+))+\s*$")
#: An RPC call's channel: its sender and the call's number.
_RPC = re.compile(r"rpc:(?P<sender>.+)#\d+")


def _given(args: Any, *names: str) -> list[str]:
    """The options among ``names`` the line set, as the user wrote them (``--workers``)."""
    return [f"--{n}" for n in names if getattr(args, n) is not None]


def _strip_comment(line: str) -> str:
    """``line`` without a trailing ``# comment``, as Python reads one.

    A ``#`` starts a comment at the start of the line or after whitespace, outside
    quotes: ``%scatter x = "a # b"  # note`` keeps ``x = "a # b"``, and
    ``--export race#1.html`` keeps its ``#``.
    """
    quote = None
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 1
            elif line.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif line.startswith(('"""', "'''"), i):
            quote = line[i:i + 3]
            i += 2
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
        i += 1
    return line


def _parse(magic: Any, line: str) -> Any:
    """The magic's arguments, its line split as a shell splits one: quotes group words and go,
    so a key of any text can be named (``%refs 'my key'``, ``--keys "('x', 0)"``).

    IPython's own splitting keeps the quotes in the word, and a quoted key then named no key.
    """
    try:
        words = shlex.split(_strip_comment(line))
    except ValueError as exc:  # "No closing quotation"
        raise UsageError(f"cannot read {line.strip()!r}: {str(exc).lower()}") from None
    return magic.parser.parse_args(words)


def _key(text: str) -> str:
    """A key as the trace names it: a tuple key written as Python writes it (``('x',0)``)
    becomes its ``str()``, as dask's keys are recorded; any other text is the key itself."""
    if text.startswith("("):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return text
        if isinstance(value, tuple):
            return str(value)
    return text


def _parse_why(magic: Any, line: str) -> Any:
    """``_parse`` for a magic that takes keys (``%refs``, ``%timeline``): each read by
    :func:`_key`, and ``--why KEY``'s any text: quoted, as a shell quotes (``--why 'my key'``),
    or as it stands, up to the magic's next option (``--why my key``, ``--why ('x', 0)``)."""
    line = _strip_comment(line)
    found = re.search(r"(?:^|\s)--why(?:=|\s+)", line)
    if found is None:
        args = _parse(magic, line)
        args.keys = [_key(k) for k in args.keys] if args.keys else args.keys
        return args
    before, rest = line[:found.start()], line[found.end():]
    if rest[:1] in ("'", '"'):
        lexer = shlex.shlex(io.StringIO(rest), posix=True)
        lexer.whitespace_split, lexer.commenters = True, ""
        try:
            key = lexer.get_token() or ""
        except ValueError as exc:
            raise UsageError(f"cannot read --why {rest.strip()}: {str(exc).lower()}") from None
        after = rest[lexer.instream.tell():]
    else:
        options = "|".join(re.escape(o) for o in magic.parser._option_string_actions)
        stop = re.search(rf"\s(?:{options})(?=[\s=]|$)", rest)
        key, after = (rest[:stop.start()], rest[stop.start():]) if stop else (rest, "")
        key = key.strip()
    args = _parse(magic, f"{before} {after}")
    if not key:
        raise UsageError("--why needs a KEY")
    args.why = _key(key)
    args.keys = [_key(k) for k in args.keys] if args.keys else args.keys
    return args


def _focus_of(args: Any) -> Any:
    """The focus ``--keys`` / ``--sample`` ask for (None: every key), refused with one line
    before anything changes."""
    if args.keys is None and args.sample is None:
        return None
    from .focus import Focus, FocusError

    try:
        return Focus.of(args.keys, 1 if args.sample is None else args.sample)
    except FocusError as exc:
        raise _usage(exc) from None


def _usage(exc: BaseException) -> UsageError:
    """One line: what went wrong, in the library's words."""
    return UsageError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


@magics_class
class RefsMagics(Magics):
    """``%cluster``, ``%scatter``, ``%refs``, ``%release``, ``%%trace``, ``%timeline``, ``%step``,
    ``%hold``, ``%%explore``, ``%replay``, ``%confirm`` — see each one's ``?`` help.  Defaults are
    configurable with ``%config``."""

    protocol = Unicode("dask", help=f"protocol of a new %cluster: {PROTOCOL_HELP}").tag(config=True)
    network = Unicode("live", help="network of a new %cluster").tag(config=True)
    workers = Int(1, help="workers of a new %cluster").tag(config=True)
    trace_capacity = Int(1_000_000, help="events the trace keeps before dropping the oldest").tag(
        config=True)
    live_rate = Float(6.0, help="live view updates per second").tag(config=True)
    client_name = Unicode("client", help="the name %cluster binds its client to").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any):
        super().__init__(shell, **kwargs)
        self._current: ClusterHandle | None = None
        self._explored: Any = None  # the last %%explore scenario, for %replay
        #: The ProtocolVariant of one's own that the last %%explore ran under, if it did.
        self._explored_protocol: ProtocolVariant | None = None
        #: Each %%explore's result (weakly, by id) with its scenario: ``%confirm --explored NAME``.
        self._explorations: dict[int, tuple[weakref.ref, Any]] = {}
        #: The JupyterLab sidebar's feed (``views/lab.py``), started by ``%load_ext``.
        self.lab: Any = None

    @property
    def current(self) -> ClusterHandle | None:
        """The current cluster (kernel-side, replayed, or a traced dask cluster)."""
        return self._current

    @current.setter
    def current(self, new: ClusterHandle | None) -> None:
        """Replacing the current cluster closes the old one and binds ``cluster`` to the new."""
        old, self._current = self._current, new
        if old is not None and old is not new:
            old.close()
        if new is not None:
            self.shell.user_ns["cluster"] = new
        if self.lab is not None:
            self.lab.follow(new)

    def after_cell(self, _result: Any = None) -> None:
        """The end of a cell is the cluster's safe point: futures the cell dropped are released.

        Then the live views are brought up to date, saved outputs included — again, if
        their own hook (``views/pump.py``) ran first: now they show the releases too.
        """
        if self._current is not None:
            self._current.apply_drops()
        pump = sys.modules.get("jupyter_refs.views.pump")  # loaded once a view was made
        if pump is not None:
            pump.at_cell_end()

    # -- helpers --------------------------------------------------------------------------

    def _need_cluster(self) -> ClusterHandle:
        self._adopt_default()
        if self.current is None:
            raise UsageError("no cluster yet: start one with %cluster (see %cluster?)")
        if self.current.closed:
            raise UsageError(f"{self.current.ended}: start another with %cluster (see %cluster?)")
        return self.current

    def _need_settled_cluster(self) -> ClusterHandle:
        """The cluster, with what a traced dask cluster has buffered brought into its trace."""
        cluster = self._need_cluster()
        cluster.sync()
        return cluster

    def _client(self, name: str | None) -> Any:
        self._need_cluster()
        value = self.shell.user_ns.get(name or self.client_name)
        if value is None or not hasattr(value, "scatter"):
            raise UsageError(f"{name or self.client_name!r} is not a client of the current cluster")
        return value

    def _describe(self) -> str:
        c = self.current
        if c is None:
            return "no cluster: start one with %cluster --protocol dask"
        if c.closed:
            return (f"{c.ended} ({len(c.trace)} events, its trace still readable): start "
                    "another with %cluster --protocol dask")
        held = f", holding {', '.join(sorted(c.held))}" if c.held else ""
        return (f"{c!r}: {len(c.trace)} events, {len(c.violations)} violations, "
                f"{len(c.in_flight)} messages in flight{held}")

    # -- %cluster ---------------------------------------------------------------------------

    @magic_arguments()
    @argument("--protocol", "-p", type=protocol_type, help=PROTOCOL_HELP)
    @argument("--workers", "-w", type=int, help="number of workers")
    @argument("--network", "-n", choices=[p for p in POLICIES],
              help="live (a thread, real latencies), random (seeded, simulated), "
                   "immediate (no overtaking) or manual (nothing moves until %%step)")
    @argument("--seed", "-s", type=int, help="seed of the latencies (live, random)")
    @argument("--threads", "-t", type=int,
              help="threads per worker (default: as dask's LocalCluster, the cores shared out)")
    @argument("--dask", metavar="ADDRESS",
              help="connect to a real dask scheduler (e.g. tcp://127.0.0.1:8786) and trace it")
    @argument("--attach", metavar="NAME", help="trace the dask Client bound to NAME")
    @argument("--ordered-scatter", action="store_true",
              help="with --dask / --attach: scatters wait behind queued releases (dask#8576 workaround)")
    @argument("--model", action="store_true",
              help="the switch: dask's own lines (Client(), LocalCluster(...), every name from "
                   "distributed) run on the kernel-side cluster until %%cluster --no-model")
    @argument("--no-model", action="store_true", help="turn the switch off: dask's own again")
    @argument("--keys", "-k", nargs="+", metavar="PATTERN",
              help="trace only keys matching a PATTERN (a glob such as inc-*, or a key prefix), "
                   "from the start; on a dask cluster the scheduler and workers leave the rest out")
    @argument("--sample", type=int, metavar="N",
              help="trace one key in N (of those matching --keys), the same keys on every process")
    @line_magic
    def cluster(self, line: str) -> None:
        """Start (or replace) the kernel-side cluster and bind a client.  Alone: show the current
        cluster (or the one closed last), or start one with the defaults (``%config RefsMagics``)
        if there has been none (a new kernel, or one restarted).

        With ``--dask ADDRESS`` or ``--attach NAME`` it traces a real dask.distributed
        cluster instead: ``cluster`` becomes the tracer (same trace, checks and views).
        ``--keys PATTERN … [--sample N]`` traces only those keys from the start
        (``cluster.focus()`` changes it later; ``%%trace --keys`` for one cell).
        """
        args = _parse(self.cluster, line)
        if not _strip_comment(line).strip() and self.current is not None:
            print(self._describe())  # closed, it says so and how to start another
            return
        args.focus = _focus_of(args)
        if args.model or args.no_model:
            self._switch(args)
            return
        if args.dask or args.attach:
            self._attach_dask(args)
            return
        if args.ordered_scatter:
            raise UsageError("--ordered-scatter applies to a real dask cluster (--dask or --attach)")
        if args.workers is not None and args.workers < 1:
            raise UsageError("--workers must be at least 1")
        if args.threads is not None and args.threads < 1:
            raise UsageError("--threads must be at least 1")
        try:
            new = Cluster(protocol=args.protocol or self.protocol,
                          workers=args.workers or self.workers,
                          network=args.network or self.network, seed=args.seed,
                          trace_capacity=self.trace_capacity, threads_per_worker=args.threads)
        except JupyterRefsError as exc:
            raise _usage(exc) from None
        if args.focus is not None:
            new.focus(args.focus)
        self.current = new
        self.shell.user_ns[self.client_name] = new.client()
        print(f"{self._describe()}; client bound to {self.client_name!r}")

    def _switch(self, args: Any) -> None:
        """``--model`` / ``--no-model``: the drop-in switch (:mod:`jupyter_refs.dropin`)."""
        from . import dropin

        if args.model and args.no_model:
            raise UsageError("use either --model or --no-model, not both")
        others = _given(args, "workers", "seed", "threads", "dask", "attach")
        if others:
            raise UsageError(f"{', '.join(others)} do not apply to the switch: dask's own "
                             "Client(...) or LocalCluster(...) shapes the cluster")
        if args.no_model:
            if not dropin.active():
                print("the model switch is off already")
                return
            while dropin.active():
                dropin.stop()
            print("the model switch is off: distributed's own names are back")
            return
        protocol, network = args.protocol or "dask", args.network or "live"
        try:
            dropin.start(protocol, network)
        except JupyterRefsError as exc:
            raise _usage(exc) from None
        print(f"the model switch is on (protocol={protocol} network={network}): Client(), "
              "LocalCluster(...) and every name imported from distributed or dask.distributed "
              "from now on run on the kernel-side cluster; %cluster --no-model restores dask")

    def _adopt_default(self) -> None:
        """Under the switch, the cluster the user's own ``Client(...)`` started is the current
        one: the views and ``%refs`` follow it."""
        from . import dropin
        from .client_parts import default_client

        if not dropin.active():
            return
        client = default_client()
        cluster = getattr(client, "cluster", None)
        if cluster is not None and not cluster.closed and cluster is not self.current:
            self.current = cluster

    def _dask_client(self, name: str) -> Any:
        """The ``distributed.Client`` the user bound to ``name`` in the notebook."""
        client = self.shell.user_ns.get(name)
        if not isinstance(client, _distributed("a dask client").Client):
            raise UsageError(f"{name!r} is not a dask distributed.Client")
        return client

    def _attach_dask(self, args: Any) -> None:
        if args.dask and args.attach:
            raise UsageError("use either --dask ADDRESS or --attach NAME, not both")
        kernel_only = _given(args, "protocol", "workers", "network", "seed", "threads")
        if kernel_only:
            raise UsageError(f"{', '.join(kernel_only)} only apply to the kernel-side cluster")
        distributed = _distributed("tracing dask")
        from .dask import attach

        if args.attach:
            client = self._dask_client(args.attach)
        else:
            try:
                client = distributed.Client(args.dask, timeout=10)
            except (OSError, TimeoutError, ValueError) as exc:
                raise UsageError(f"cannot connect to {args.dask}: {exc}".splitlines()[0]) from None
        # One tracer per dask cluster: the old one detaches before the new one attaches.
        self.current = None
        try:
            tracer = attach(client, max_events=self.trace_capacity, ordered_scatter=args.ordered_scatter,
                            keys=args.focus)
        except Exception as exc:  # noqa: BLE001 - plugin registration failed remotely
            raise UsageError(f"cannot trace {client.scheduler.address}: {type(exc).__name__}: "
                             f"{exc}".splitlines()[0]) from None
        self.current = tracer
        self.shell.user_ns[self.client_name] = client
        print(f"{self._describe()}; client bound to {self.client_name!r}")

    # -- %scatter / %release ----------------------------------------------------------------

    @magic_arguments()
    @argument("assignment", nargs="*", help="NAME = EXPR: the value to scatter and the name to bind")
    @argument("--no-hash", action="store_true", help="a fresh key instead of one derived from the value")
    @argument("--client", help="the client to use (a name in the namespace)")
    @line_magic
    def scatter(self, line: str) -> None:
        """Scatter EXPR and bind the future to NAME.

        If NAME already holds a future it is dropped first, exactly as ``del NAME``
        would: ``%scatter x = 123`` twice in a row is race #8576.
        """
        line = _strip_comment(line)
        opts = _SCATTER_OPTS.search(line)
        assignment = line[: opts.start()] if opts else line
        args = _parse(self.scatter, opts.group(0) if opts else "")
        match = _ASSIGN.match(assignment)
        if match is None:
            raise UsageError("usage: %scatter NAME = EXPR [--no-hash] [--client NAME]")
        client = self._client(args.client)
        name, expr = match["name"], match["expr"]
        try:
            value = self.shell.ev(expr)
        except Exception as exc:  # noqa: BLE001 - any failure of the user's expression
            raise UsageError(f"cannot evaluate {expr!r}: {type(exc).__name__}: {exc}") from None
        try:
            check_serializable(value)  # refuse before dropping anything
        except JupyterRefsError as exc:
            raise _usage(exc) from None
        old = self.shell.user_ns.pop(name, None)
        if _is_future(old):
            old.release()
        del old
        try:
            # One value, one future, even for a list (Client.scatter would split it).
            self.shell.user_ns[name] = client.scatter([value], hash=not args.no_hash)[0]
        except JupyterRefsError as exc:
            raise _usage(exc) from None

    @magic_arguments()
    @argument("name", help="the name that holds the future")
    @line_magic
    def release(self, line: str) -> None:
        """Drop the future held by NAME (as ``del NAME``) and say what that did to its key."""
        args = _parse(self.release, line)
        value = self.shell.user_ns.get(args.name)
        if not _is_future(value):
            raise UsageError(f"{args.name!r} does not hold a future")
        key, refcount = value.key, value.client.refcount
        before = refcount.get(key, 0)
        value.release()
        del self.shell.user_ns[args.name]
        # Ours is released at once; dask's Future.release defers its _dec_ref to the loop.
        after = refcount.get(key, 0) if isinstance(value, Future) else max(0, before - 1)
        print(f"released {args.name}: {key} refcount {before} → {after}"
              + ("; no future holds it now: the client sends client-releases-keys" if after == 0
                 else "; other futures still hold it"))

    # -- views ---------------------------------------------------------------------------

    def _why(self, cluster: ClusterHandle, key: str) -> Any:
        """The chain that lost ``key``; a UsageError if the trace never saw it."""
        from .why import why

        if not cluster.trace.events(key=key):
            raise UsageError(f"{key!r} is not a key of this cluster's trace (see %refs)")
        return why(cluster.trace, key)

    @magic_arguments()
    @argument("keys", nargs="*", help="only these keys")
    @argument("--text", action="store_true", help="plain text instead of the live table")
    @argument("--why", metavar="KEY",
              help="explain the loss of KEY: the causal chain from your line to the loss")
    @line_magic
    def refs(self, line: str) -> None:
        """Show the refs table: per key, every client's refcount and future, the scheduler, the verdict.

        With ``--why KEY``: the chain of events, from the line of yours that started it to
        the loss of KEY (what a FutureCancelledError's last line points to).
        """
        args = _parse_why(self.refs, line)
        cluster = self._need_settled_cluster()
        if args.why:
            if args.keys or args.text:
                raise UsageError("--why KEY takes no other keys or --text")
            print(self._why(cluster, args.why))
            return
        from .views.refs import RefsTable

        table = RefsTable(cluster, keys=args.keys or None, live=not args.text,
                          rate=self.live_rate)
        if args.text:
            print(table.to_text())
            table.close()
        else:
            display(table)

    @magic_arguments()
    @argument("--keys", "-k", nargs="+", metavar="PATTERN",
              help="trace only keys matching a PATTERN while the cell runs: a glob (inc-*) or "
                   "a key prefix; other keys are not recorded anywhere (scheduler, workers, "
                   "client), so a huge computation can be traced one key at a time")
    @argument("--sample", "-s", type=int, metavar="N",
              help="trace one key in N (of those matching --keys), the same keys on every "
                   "process: a first look at an unknown workload")
    @argument("--live", action="store_true", help="show the timeline first and update it while the cell runs")
    @cell_magic
    def trace(self, line: str, cell: str) -> None:
        """Run the cell and show the timeline of the events it caused.

        With ``--keys PATTERN …`` / ``--sample N`` the trace follows only those keys while
        the cell runs (``cluster.focus``), then what it followed before.
        """
        args = _parse(self.trace, line)
        cluster = self._need_cluster()
        focused = args.keys is not None or args.sample is not None
        focus = _focus_of(args)
        from .views.timeline import Timeline

        since = cluster.trace.next_seq
        previous = cluster.focused
        if focused:
            cluster.focus(focus)
        timeline = None
        if args.live:
            timeline = Timeline(cluster, since=since, rate=self.live_rate)
            display(timeline)
        try:
            self.shell.run_cell(cell, store_history=False)
        finally:
            if focused:
                cluster.sync()  # the cell's events, merged under the cell's focus
            if timeline is None:
                display(Timeline(cluster, since=since, live=False))
            else:
                timeline.update()
            if focused:
                cluster.focus(previous)

    @magic_arguments()
    @argument("--keys", "-k", nargs="+", help="only these keys")
    @argument("--export", "-e", metavar="PATH", help="write the trace: .jsonl, .json (Chrome) or .html")
    @argument("--why", metavar="KEY",
              help="highlight the causal chain of KEY's loss (as %%refs --why KEY prints it)")
    @line_magic
    def timeline(self, line: str) -> None:
        """Show the timeline of the whole trace (live), or export it by file suffix.

        ``--why KEY`` draws only KEY and highlights the events of its loss's causal chain.
        """
        args = _parse_why(self.timeline, line)
        cluster = self._need_settled_cluster()
        if args.why:
            if args.export or args.keys:
                raise UsageError("--why KEY takes no --keys or --export")
            chain = self._why(cluster, args.why)
            print(chain)
            from .views.timeline import Timeline

            display(Timeline(cluster, keys=[args.why, *([chain.via] if chain.via else [])],
                             live=False, highlight=chain.seqs))
            return
        if args.export:
            from .views.export import SUFFIXES, export

            if not args.export.endswith(SUFFIXES):
                raise UsageError(f"--export: the file name must end in {', '.join(SUFFIXES)}")
            try:
                what = export(cluster, args.export, keys=args.keys)
            except OSError as exc:
                raise _usage(exc) from None
            print(f"wrote {args.export}: {what}")
            return
        from .views.timeline import Timeline

        display(Timeline(cluster, keys=args.keys, rate=self.live_rate))

    # -- exploring message orders ------------------------------------------------------------

    @magic_arguments()
    @argument("--protocol", "-p", metavar="PROTOCOL",
              help=PROTOCOL_HELP + "; or the name of a ProtocolVariant in the notebook")
    @argument("--max", "-m", type=int, default=2000, help="schedules to run at most (default 2000)")
    @argument("--bound", "-b", type=int, default=2,
              help="messages that may be delayed behind younger ones (default 2)")
    @argument("--seed", "-s", type=int, default=0, help="seed of the random runs past the bound")
    @argument("--processes", "-j", type=int,
              help="processes sharing the random runs and a large last pass of the bounded "
                   "search (default: one per core; 1: only this kernel)")
    @argument("--client", "-c", metavar="NAME",
              help="a distributed.Client in the notebook: its workers share the random runs "
                   "and the bounded search's last pass")
    @cell_magic
    def explore(self, line: str, cell: str) -> None:
        """Run the cell under many message orders and report the distinct failures.

        The cell is the scenario: it uses ``client`` (a fresh one each run).  Shows a
        progress bar, a summary, the smallest failing schedule explained, and its
        timeline; ``%replay SCHEDULE`` reruns any schedule it reports.  With ``--client
        NAME`` (a ``distributed.Client`` of worker processes) the random runs, and the
        bounded search's last pass, are shared by its workers (a task each), with the same
        result; the cell and the names it reads travel there by cloudpickle.
        """
        args = _parse(self.explore, line)
        if args.max < 1 or args.bound < 0:
            raise UsageError("--max must be at least 1 and --bound at least 0")
        if not cell.strip():
            raise UsageError("%%explore needs a cell: the operations to explore, using `client`")
        from .explore import ScenarioError, cell_scenario, explore, short_list, short_schedule
        from .views.timeline import Timeline

        try:
            scenario = cell_scenario(cell, self.shell.user_ns, self.client_name, **self._cell_body())
        except SyntaxError as exc:
            raise UsageError(f"the cell does not compile: {exc}") from None
        protocol = self._protocol(args.protocol or self.protocol)
        if args.processes is not None and args.processes < 1:
            raise UsageError("--processes must be at least 1")
        client = self._dask_client(args.client) if args.client is not None else None
        bar = _progress(args.max)
        try:
            result = explore(scenario, protocol=protocol, max_schedules=args.max, bound=args.bound,
                             seed=args.seed, progress=bar.update, processes=args.processes,
                             client=client)
        except (ScenarioError, ValueError, ClusterClosedError) as exc:
            if isinstance(exc, ScenarioError):
                # bound all the same, so that a cell reading `explored` says what happened
                # rather than fail on a NameError (or read the result of an earlier cell)
                self.shell.user_ns["explored"] = exc
            raise _usage(exc) from None
        finally:
            bar.close()
        self._explored = scenario
        self._explored_protocol = protocol if isinstance(protocol, ProtocolVariant) else None
        self.shell.user_ns["explored"] = result
        self._explorations = {i: e for i, e in self._explorations.items() if e[0]() is not None}
        self._explorations[id(result)] = (weakref.ref(result), scenario)
        print(result.summary())
        for failure in result.failures[:5]:
            print(f"  {short_schedule(failure.schedule)}  {', '.join(failure.names)}  "
                  f"×{failure.count}: "
                  f"{'; '.join(short_list(failure.overtakes, 5)) or 'in the default order'}")
        if result.failures:
            print("  (%confirm SCHEDULE runs one on a real in-process dask cluster)")
        if result.failures:
            first = result.failures[0]
            print()
            print(first.explain())
            display(Timeline(first.run.trace, live=False))

    def _cell_body(self) -> dict[str, Any]:
        """Where the running cell magic's body is: its cell's file, from the line after the
        magic's (nothing outside a notebook cell: the body then has a file of its own)."""
        frame = user_frame(sys._getframe(1))
        cells = getattr(self.shell.compile, "_filename_map", {})
        if frame is None or frame.f_code.co_filename not in cells:
            return {}
        filename = frame.f_code.co_filename
        # The body runs from a file of its own (see cell_scenario), the same cell to the reader.
        cells[f"{filename}:%%explore"] = cells[filename]
        return {"filename": filename, "first_line": frame.f_lineno + 1}

    def _protocol(self, name: str) -> str | ProtocolVariant:
        """A registered protocol's name, or the :class:`ProtocolVariant` the notebook binds it to
        (a variant of one's own, built from the flags, for ``%%explore``)."""
        try:
            if is_registered(name):
                return name
        except ProtocolError as exc:  # a release outside the range modelled
            raise UsageError(str(exc)) from None
        variant = self.shell.user_ns.get(name)
        if isinstance(variant, ProtocolVariant):
            return variant
        raise UsageError(f"unknown protocol {name!r}: choose one of {', '.join(PROTOCOL_NAMES)}, "
                         "dask-<release>, or name a ProtocolVariant defined in the notebook")

    @magic_arguments()
    @argument("schedule", help="a schedule string printed by %%explore, e.g. dask@3f9a1c:4>1")
    @line_magic
    def replay(self, line: str) -> None:
        """Replay a schedule of the last %%explore: it becomes the current cluster, timeline shown."""
        args = _parse(self.replay, line)
        scenario = getattr(self, "_explored", None)
        if scenario is None:
            raise UsageError("nothing to replay yet: run a %%explore cell first")
        from .explore import judge_as_explored, replay
        from .views.timeline import Timeline

        try:
            run = replay(scenario, args.schedule, keep_open=True,
                         protocol=self._explored_protocol)
            judge_as_explored(scenario, run, self._explored_protocol)
        except JupyterRefsError as exc:
            raise _usage(exc) from None
        self.current = run.cluster
        verdict = ", ".join(v.brief for v in run.violations) or "no violation"
        print(f"replayed {run.schedule}: {verdict}; the replayed cluster is now `cluster`")
        display(Timeline(run.cluster, live=False))

    # -- delivering by hand -------------------------------------------------------------------

    @magic_arguments()
    @argument("n", nargs="?", type=int, default=1, help="how many messages to deliver (default 1)")
    @argument("--deliver", "-d", type=int, metavar="MSG_ID", help="deliver this in-flight message")
    @argument("--all", "-a", action="store_true", help="deliver everything in flight")
    @line_magic
    def step(self, line: str) -> None:
        """Deliver in-flight messages (held ones too) and show what changed."""
        args = _parse(self.step, line)
        cluster = self._need_cluster()
        if args.n < 1:
            raise UsageError("N must be at least 1")
        since = cluster.trace.next_seq
        try:
            if args.deliver is not None:
                delivered = [cluster.deliver(args.deliver)]
            elif args.all:
                delivered = []
                while cluster.in_flight:
                    delivered += cluster.step(len(cluster.in_flight))
            else:
                delivered = cluster.step(args.n)
        except JupyterRefsError as exc:
            raise _usage(exc) from None
        from .views.text import format_events

        print("delivered: " + (", ".join(str(m) for m in delivered) or "nothing (nothing in flight)"))
        changes = [e for e in cluster.trace.events(since=since)
                   if e.kind not in ("msg.sent", "msg.received", "network.drained")]
        if changes:
            print(format_events(changes))
        left = cluster.in_flight
        print(f"in flight: {', '.join(str(m) for m in left) if left else 'nothing'}")

    @magic_arguments()
    @argument("channel", nargs="?", help="a channel name or glob, e.g. client:1->scheduler")
    @argument("--off", action="store_true", help="stop holding; held messages flow again")
    @line_magic
    def hold(self, line: str) -> None:
        """Hold a channel's messages so a race can be forced by hand (see %step)."""
        args = _parse(self.hold, line)
        cluster = self._need_cluster()
        if args.off == bool(args.channel):
            raise UsageError("usage: %hold CHANNEL  or  %hold --off")
        if args.off:
            released = cluster.release_holds()
            print(f"no longer holding {', '.join(sorted(released)) or 'anything'}")
            return
        _check_channel(cluster, args.channel)
        try:
            cluster.hold(args.channel)
        except JupyterRefsError as exc:  # e.g. on dask, a channel whose receiver is elsewhere
            raise _usage(exc) from None
        print(f"holding {args.channel} ({cluster.title}): its messages wait for %step or "
              "%hold --off")


    @magic_arguments()
    @argument("schedule", help="a schedule string printed by %%explore, e.g. dask@3f9a1c:4>1")
    @argument("--client", "-c", metavar="NAME",
              help="the dask Client to run on (default: the attached cluster's, or `client`)")
    @argument("--ordered-scatter", action="store_true",
              help="run under the dask#8576 workaround (scatters wait behind queued releases)")
    @argument("--orders", choices=["auto", "delays", "every"], default="auto",
              help="enforce the schedule's overtakes only (delays), every choice it made "
                   "(every), or the first then the second (auto, the default)")
    @argument("--explored", "-e", metavar="NAME",
              help="an exploration kept under NAME (found = explored, after its %%explore "
                   "cell): confirm a schedule of that cell's (default: the last %%explore)")
    @line_magic
    def confirm(self, line: str) -> None:
        """Run the last %%explore cell on a real in-process dask cluster under SCHEDULE's
        overtakes, and say whether real dask fails the same way (same check, same key; or
        the same outcome, when the failure is what the scenario returned or raised).  A check
        judged only once the channels drain (hung_future, leaked_key, …) cannot be: a dask
        trace has no drain, and a failure with nothing else is refused.

        Each message the schedule delays is held in dask until the messages that overtook
        it have been delivered.  The real trace becomes ``confirmed`` (``.trace``).
        ``--explored NAME`` confirms a schedule of an earlier ``%%explore`` cell, its result
        kept under NAME, rather than of the last one.
        """
        args = _parse(self.confirm, line)
        if args.explored:
            explored = self.shell.user_ns.get(args.explored)
            kept = self._explorations.get(id(explored))
            if explored is None or kept is None or kept[0]() is not explored:
                raise UsageError(f"--explored {args.explored}: not the result of a %%explore cell "
                                 f"of this kernel; keep one after its cell ({args.explored} = "
                                 "explored)")
            scenario = kept[1]
        else:
            explored = self.shell.user_ns.get("explored")
            scenario = getattr(self, "_explored", None)
        if scenario is None:
            raise UsageError("nothing to confirm yet: run a %%explore cell first")
        distributed = _distributed("confirming")
        from .dask import DaskTracer, confirm

        if args.client:
            client = self._dask_client(args.client)
        elif isinstance(self.current, DaskTracer) and not self.current.closed:
            client = self.current
        else:
            client = self.shell.user_ns.get(self.client_name)
            if not isinstance(client, distributed.Client):
                raise UsageError("no dask client: attach one (%cluster --attach NAME) or pass --client NAME")
        failure = next((f for f in getattr(explored, "failures", ())
                        if f.schedule == args.schedule.strip()), None)
        try:
            result = confirm(scenario, failure or args.schedule, client,
                             ordered_scatter=args.ordered_scatter, orders=args.orders)
        except JupyterRefsError as exc:
            raise _usage(exc) from None
        self.shell.user_ns["confirmed"] = result
        print(result)


def _distributed(purpose: str) -> Any:
    """The ``distributed`` module, or a UsageError saying ``purpose`` needs it."""
    try:
        import distributed
    except ImportError:
        raise UsageError(f"{purpose} needs distributed: pip install 'jupyter_refs[dask]'") from None
    return distributed


class _progress:
    """An ipywidgets progress bar for long runs (text in a terminal)."""

    def __init__(self, total: int):
        import ipywidgets as w

        self.total = total
        self.bar = w.IntProgress(value=0, max=total, description="exploring")
        self.label = w.HTML("")
        self.box = w.HBox([self.bar, self.label])
        display(self.box)

    def update(self, done: int, total: int, failures: int) -> None:
        self.bar.value = done
        self.label.value = f"{done:,} / {total:,} schedules, {failures} distinct failure(s)"

    def close(self) -> None:
        self.bar.bar_style = "success"
        self.box.close()


def _is_future(obj: Any) -> bool:
    """Ours, or dask's (``distributed.Future``): both have a key and ``release()``."""
    return isinstance(obj, Future) or (
        type(obj).__module__.startswith("distributed") and hasattr(obj, "key")
        and callable(getattr(obj, "release", None)))


def _check_channel(cluster: ClusterHandle, pattern: str) -> None:
    """Refuse a ``%hold`` that names no channel of ``cluster``, listing those it has.

    A channel may be held before it carries a message (the README holds
    ``client:1->scheduler`` right after a scatter), so the channels it could have count:
    every stream runs between the scheduler and another actor, and every actor makes RPC
    calls (``rpc:SENDER#N``).  A glob must match one of them.
    """
    actors = cluster.actors
    others = actors - {"scheduler"}
    streams = ({m.channel for m in cluster.in_flight} | cluster.channels()
               | {f"{a}->scheduler" for a in others} | {f"scheduler->{a}" for a in others})
    streams = {c for c in streams if not c.startswith("rpc:")}
    rpc = _RPC.fullmatch(pattern)
    if (rpc is not None and rpc["sender"] in actors) or any(
            fnmatchcase(c, pattern) for c in streams | {f"rpc:{a}#1" for a in actors}):
        return
    raise UsageError(f"{pattern!r} is not a channel of this cluster: its streams are "
                     f"{', '.join(sorted(streams))}, "
                     "and each sender's RPC calls are rpc:SENDER#N (e.g. rpc:client:1#*)")


def load(shell: Any) -> RefsMagics:
    from .views.lab import LabChannel

    magics = RefsMagics(shell)
    shell.register_magics(magics)
    shell.configurables.append(magics)
    magics.lab = LabChannel()
    shell.events.register("post_run_cell", magics.after_cell)
    from .course import load_magics

    load_magics(shell)  # the lessons' %%solution
    return magics
