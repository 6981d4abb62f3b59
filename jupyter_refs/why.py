"""Why was a key lost?  The causal chain from the user's line to the loss.

dask's ``Client.story(key)`` is a flat list of transitions.  The trace holds more —
client refcounts, every message sent and received, the overtakes — and
:func:`why` walks it along *happens-before*: a message's receipt follows its
send, and an actor's events follow one another.  From the event that broke an
invariant it goes back to the user's line (``del x``, ``scatter``), takes in the
messages that raced it (sent later, delivered first, or concurrent and delivered
first), and forward to what the user sees (the future still says finished, or is
cancelled).  Only events about the key, and only those on these paths, are kept:

    cell 5, line 2: `del x` → refcount 1→0 → `client-releases-keys` sent on
    client:1->scheduler (msg 12, batched) → cell 6, line 1: `scatter` RPC (msg 13)
    → scheduler received `scatter` (msg 13) first → … → memory → forgotten →
    `free-keys` sent … → your future still says finished

It reads nothing but the trace, so it works on the kernel-side cluster, on a
replayed schedule, on an attached dask cluster and on a trace loaded from JSON
Lines (``Trace.from_jsonl``).
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from typing import Any

from . import arguments
from .promises import RANKED
from .trace import Event, Trace, trace_source

#: Violations that mean a loss, most telling first (refcount_mismatch only restates one).
_LOSSES = RANKED  # the most telling loss first (promises.py)
#: Events that change what some side believes about a key: the ones a chain shows.
_CHANGES = {"release.applied", "desire.applied", "transition", "scatter.registered",
            "scatter.worker_put", "worker.put", "worker.free", "future.state", "refcount.inc",
            "refcount.dec", "future.created", "future.put_rejected", "scheduler.assertion",
            "who_has.removed", "graph.lost_data", "graph.annotations_dropped", "id.alloc",
            "release.stale", "scatter.stale"}


@dataclass(frozen=True)
class Step:
    """One link of a chain: an event, and what it means in words."""

    seq: int
    actor: str
    kind: str
    text: str
    cell: str | None = None

    def __str__(self) -> str:
        return self.text


@dataclass
class Chain:
    """The causal chain of one key's loss (empty when the trace shows no loss of it)."""

    key: str
    client: str | None
    loss: str | None  # the violation (or event) the chain ends at, in words
    steps: list[Step] = field(default_factory=list)
    #: The key whose loss caused this one's (a task cancelled for lost dependencies).
    via: str | None = None

    @property
    def seqs(self) -> list[int]:
        """The chain's events (for a timeline to highlight)."""
        return [s.seq for s in self.steps if s.seq >= 0]

    @property
    def kinds(self) -> list[str]:
        return [s.kind for s in self.steps]

    def __bool__(self) -> bool:
        return bool(self.steps)

    def __str__(self) -> str:
        if not self.steps:
            return f"{self.key}: the trace shows no loss of this key"
        head = f"why {self.key}" + (f" (for {self.client})" if self.client else "")
        head += f": {self.loss}" if self.loss else ""
        return head + "\n  " + "\n  → ".join(s.text for s in self.steps)

    def _repr_markdown_(self) -> str:
        return "```\n" + str(self) + "\n```"


def why(source: Any, key: str, client: str | None = None) -> Chain:
    """The causal chain that lost ``key`` (for ``client``, if given), from a trace or a cluster."""
    trace_source(source)
    key = arguments.key(key)
    arguments.text(client, "client", none=True)
    trace = source if isinstance(source, Trace) else source.trace
    return _Walk(trace.events(), key, client).chain()


# -- cells ---------------------------------------------------------------------------------


def cell_label(cell: str | None) -> str:
    """``cell 5, line 2`` in a notebook (IPython's cell number), else ``file.py:12``."""
    if not cell:
        return ""
    filename, _, line = cell.rpartition(":")
    number = _cell_number(filename)
    if number is not None:
        return f"cell {number}, line {line}"
    return f"{os.path.basename(filename) or filename}:{line}"


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    return get_ipython()


def _cell_number(filename: str) -> int | None:
    names = getattr(getattr(_shell(), "compile", None), "_filename_map", None)
    return names.get(filename) if isinstance(names, dict) else None


def _source(cell: str) -> str:
    filename, _, line = cell.rpartition(":")
    try:
        number = int(line)
        typed = _typed_line(filename, number)
        return (typed if typed is not None else linecache.getline(filename, number)).strip()
    except (ValueError, OSError):
        return ""


def _typed_line(filename: str, number: int) -> str | None:
    """A notebook cell's line as the user typed it, or None (not a cell, or not known).

    IPython's line cache holds a cell as it ran, transformed: ``%scatter x = 1`` reads
    ``get_ipython().run_line_magic('scatter', 'x = 1')`` there, and a ``%%explore`` cell is
    one line.  The cell as typed is in the history, under the cell's number; it is used
    only if it transforms into exactly what ran in that file (a cell run without storing
    its history leaves another cell under that number).
    """
    count = _cell_number(filename)
    shell = _shell()
    typed = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if count is None or not typed or not 0 < count < len(typed):
        return None
    raw = typed[count]
    try:
        ran = shell.transform_cell(raw)
    except Exception:  # noqa: BLE001 - a cell IPython cannot transform again: not ours to read
        return None
    if ran.splitlines() != [x.rstrip("\n") for x in linecache.getlines(filename)]:
        return None
    lines = raw.splitlines()
    return lines[number - 1] if 0 < number <= len(lines) else None


def _where(cell: str | None) -> str:
    if not cell:
        return ""
    source = _source(cell).split("  #")[0].rstrip()  # without a trailing comment
    return f"{cell_label(cell)}: `{source}`" if source else cell_label(cell)


# -- the walk ------------------------------------------------------------------------------


class _Walk:
    def __init__(self, events: list[Event], key: str, client: str | None):
        self.events = events
        self.key = key
        self.client = client
        self.index = {e.seq: i for i, e in enumerate(events)}
        self.sent: dict[int, Event] = {}
        self.received: dict[int, Event] = {}
        for e in events:
            if e.kind == "msg.sent":
                self.sent[e.msg_id] = e
            elif e.kind == "msg.received":
                self.received[e.msg_id] = e
        self.overtakers: set[int] = set()  # receipts delivered ahead of an older message
        self.late: set[int] = set()
        self._clocks: dict[int, dict[str, int]] | None = None
        self.root: Event | None = None  # where the chain begins (the user's line, if any)

    def _clock(self, seq: int) -> dict[str, int]:
        """The vector clock of event ``seq`` (computed once, over the whole trace)."""
        if self._clocks is None:
            clocks: dict[int, dict[str, int]] = {}
            current: dict[str, dict[str, int]] = {}
            at_send: dict[int, dict[str, int]] = {}
            for e in self.events:
                mine = current.setdefault(e.actor, {})
                if e.kind == "msg.received" and e.msg_id in at_send:
                    for actor, n in at_send[e.msg_id].items():
                        if mine.get(actor, 0) < n:
                            mine[actor] = n
                mine[e.actor] = mine.get(e.actor, 0) + 1
                if e.kind == "msg.sent":
                    at_send[e.msg_id] = dict(mine)
                if e.kind in ("msg.sent", "msg.received") or self._about(e):
                    clocks[e.seq] = dict(mine)
            self._clocks = clocks
        return self._clocks.get(seq, {})

    def _before(self, a: Event, b: Event) -> bool:
        """Whether ``a`` happens before ``b`` (a path of sends, receipts and actor order)."""
        ca, cb = self._clock(a.seq), self._clock(b.seq)
        return ca.get(a.actor, 0) <= cb.get(a.actor, 0) and a.seq < b.seq

    # -- what was lost -----------------------------------------------------------------

    def _loss(self) -> tuple[Event | None, str | None, str | None]:
        """The event that broke an invariant about the key, its words, and the client."""
        found = [e for e in self.events if e.kind == "violation" and e.key == self.key
                 and (self.client is None or e.get("client") in (self.client, None))]
        found.sort(key=lambda e: (_LOSSES.index(e.get("name")) if e.get("name") in _LOSSES
                                  else len(_LOSSES), e.seq))
        for v in found:
            first = self._at(v.get("first_seq"))
            if first is not None:
                return first, f"{v.get('name')} — {_short(v.get('explanation'))}", v.get("client")
        # No violation: the last time a client's future on it closed, or the key was forgotten.
        for e in reversed(self.events):
            if e.key != self.key:
                continue
            if e.kind == "future.state" and e.get("to") in ("cancelled", "lost", "error") and (
                    self.client is None or e.actor == self.client):
                return e, f"{e.actor}'s future became {e.get('to')}", e.actor
        return None, None, None

    def _damage(self, loss: Event) -> Event | None:
        """For a loss seen where the key is believed to exist — a client's future finishing,
        the scheduler registering a scatter — the event that had already destroyed it: the
        scheduler's last forgetting of the key, or a worker's freeing of it, before the loss.
        Its own chain (the late release that caused it) is the other half of the story."""
        if loss.kind not in ("future.state", "scatter.registered"):
            return None
        for i in range(self.index[loss.seq] - 1, -1, -1):
            e = self.events[i]
            if e.key == self.key and (e.kind == "worker.free" or (
                    e.kind == "transition" and e.get("finish") == "forgotten")):
                return e
        return None

    def _at(self, seq: Any) -> Event | None:
        i = self.index.get(seq) if isinstance(seq, int) else None
        return self.events[i] if i is not None else None

    # -- happens-before ----------------------------------------------------------------

    def _receipt_before(self, e: Event, actor: str | None = None) -> Event | None:
        """The message whose handling ``e`` is part of: the actor's last receipt before it.

        An RPC's reply is sent by the handler of an RPC message (the request, or a reply
        it awaited): real dask's handlers are coroutines, and a batched message handled
        while one awaited (a release landing inside a scatter) did not send its reply.
        """
        actor = actor or e.actor
        reply = e.kind == "msg.sent" and (e.op or "").endswith("-reply")
        for i in range(self.index[e.seq] - 1, -1, -1):
            other = self.events[i]
            if other.actor == actor and other.kind == "msg.received" and (
                    not reply or (other.channel or "").startswith("rpc:")):
                return other
            if other.actor == actor and other.cell and e.cell == other.cell and e.kind == "msg.sent":
                return None  # a user call, not a handler
        return None

    def _user_line(self, e: Event) -> Event | None:
        """For a client's send inside a user call: the event of that call that concerns the key."""
        for i in range(self.index[e.seq] - 1, -1, -1):
            other = self.events[i]
            if other.actor != e.actor:
                continue
            if other.cell != e.cell or other.kind == "msg.received":
                return None
            if other.kind in ("refcount.dec", "refcount.inc", "future.created", "id.alloc") and (
                    self._about(other)):
                return other
        return None

    def _about(self, e: Event) -> bool:
        if e.key == self.key:
            return True
        keys = e.get("keys") if e.kind in ("msg.sent", "msg.received") else None
        if keys and self.key in keys:
            return True
        return e.kind == "id.alloc" and self.key.endswith(f"-{e.get('value')}")

    def _cause(self, e: Event) -> Event | None:
        """The event ``e`` happened because of (one step back along happens-before)."""
        if e.kind == "msg.received":
            return self.sent.get(e.msg_id)
        if e.cell and e.actor.startswith("client") or e.kind == "id.alloc":
            if e.kind == "msg.sent":
                return self._user_line(e)
            return None  # the user's own line: a root
        cause = self._receipt_before(e)
        if cause is None and e.actor.startswith("client:"):
            # A worker's own client acts while its worker runs a task.
            cause = self._receipt_before(e, e.actor.removeprefix("client:"))
        return cause

    def _activation(self, receipt: Event) -> list[Event]:
        """What the receiver did about the key while handling ``receipt`` (until its next
        receipt, or the next of the user's lines on it)."""
        out = []
        for i in range(self.index[receipt.seq] + 1, len(self.events)):
            e = self.events[i]
            if e.actor == receipt.actor and (e.kind == "msg.received" or e.cell):
                break  # the next receipt, or a line of the user's: a new stimulus either way
            if e.actor == receipt.actor and self._about(e) and (
                    e.kind in _CHANGES or e.kind == "msg.sent"):
                out.append(e)
        return out

    def _earlier_receipt(self, receipt: Event) -> Event | None:
        """The receiver's last earlier receipt about the key that changed something and raced
        this one: its message was not sent before this one's (concurrent, or sent after it
        and delivered first)."""
        root = self.root
        for i in range(self.index[receipt.seq] - 1, -1, -1):
            e = self.events[i]
            if e.actor == receipt.actor and e.kind == "msg.received" and self._about(e):
                other = self.sent.get(e.msg_id)
                if root is not None and other is not None and self._before(other, root):
                    continue  # sent before the chain began: history, not a race
                if any(a.kind in _CHANGES for a in self._activation(e)):
                    return e
        return None

    def _back(self, start: Event, keep: dict[int, Event], depth: int = 0) -> None:
        """Walk back from ``start`` to a root, keeping the path, each receipt's effects and,
        once per receipt, the earlier receipt it raced with (walked back in turn)."""
        e: Event | None = start
        while e is not None and e.seq not in keep:
            keep[e.seq] = e
            if e.kind == "msg.received":
                for effect in self._activation(e):
                    if effect.kind != "msg.sent" or effect.seq in self._sends_on_path(keep):
                        keep.setdefault(effect.seq, effect)
                if depth < 3:
                    other = self._earlier_receipt(e)
                    if other is not None and other.seq not in keep:
                        sent, other_sent = self.sent.get(e.msg_id), self.sent.get(other.msg_id)
                        if sent is not None and other_sent is not None and other_sent.seq > sent.seq:
                            self.overtakers.add(other.seq)
                            self.late.add(e.seq)
                        self._back(other, keep, depth + 1)
                        for effect in self._activation(other):
                            if effect.kind in _CHANGES:
                                keep.setdefault(effect.seq, effect)
            e = self._cause(e)

    def _sends_on_path(self, keep: dict[int, Event]) -> set[int]:
        return {e.seq for e in keep.values() if e.kind == "msg.sent"}

    def _forward(self, loss: Event, keep: dict[int, Event], client: str | None) -> list[Step]:
        """From the loss to what the user sees: what the loss's handler sent, one hop on,
        and the client's future at the end."""
        # A line of the user's after the loss is a new stimulus, not a consequence: the chain
        # stops before it (a `replay(...)` that drops the run's futures is no cause of the loss).
        cut = next((e.seq for e in self.events if e.seq > loss.seq and e.cell
                    and e.key == self.key), None)

        def before_cut(e: Event) -> bool:
            return cut is None or e.seq < cut

        receipt = loss if loss.kind == "msg.received" else self._receipt_before(loss)
        effects = self._activation(receipt) if receipt is not None else []
        for effect in effects:
            if effect.seq < loss.seq or not before_cut(effect):
                continue
            keep.setdefault(effect.seq, effect)
            if effect.kind == "msg.sent":
                got = self.received.get(effect.msg_id)
                if got is not None and before_cut(got):
                    keep.setdefault(got.seq, got)
                    for after in self._activation(got):
                        if after.kind in _CHANGES and before_cut(after):
                            keep.setdefault(after.seq, after)
        if client is None:
            return []
        last = None
        for e in self.events:
            if e.actor == client and e.key == self.key and e.kind in ("future.state",
                                                                       "refcount.dec",
                                                                       "refcount.inc") \
                    and before_cut(e):
                last = e
        if last is None:
            return []
        if last.kind == "future.state":
            state = last.get("to")
            if last.seq > loss.seq:
                keep.setdefault(last.seq, last)
        else:
            state = next((e.get("to") for e in reversed(self.events) if e.actor == client
                          and e.key == self.key and e.kind == "future.state"
                          and before_cut(e)), "pending")
        if last.kind == "refcount.dec" and last.get("after") == 0:
            return [Step(-1, client, "end", f"{client} holds no future for it any more")]
        words = {"finished": f"your future still says finished ({client})",
                 "cancelled": f"your future is cancelled ({client})",
                 "lost": f"your future is lost ({client})",
                 "pending": f"your future waits for ever ({client})"}
        return [Step(-1, client, "end", words.get(state, f"your future is {state} ({client})"))]

    # -- the chain -----------------------------------------------------------------------

    def chain(self) -> Chain:
        loss, words, client = self._loss()
        if loss is None or (words or "").startswith("scenario_raised"):
            # A task cancelled because its dependency was lost: that loss is the story.
            lost_via = next((e for e in self.events if e.kind == "graph.lost_data"
                             and e.key == self.key), None)
            if lost_via is not None:
                return self._via(lost_via)
        if loss is None:
            return Chain(self.key, self.client, None)
        client = self.client or client
        damage = self._damage(loss) if (words or "").startswith("dangling_future") else None
        starts = [loss] if damage is None else [damage, loss]
        roots = []
        for start in starts:
            path: list[Event] = []
            e: Event | None = start
            while e is not None and e not in path:
                path.append(e)
                e = self._cause(e)
            roots.append(path[-1])
        self.root = min(roots, key=lambda e: e.seq)
        keep: dict[int, Event] = {}
        for start in starts:
            self._back(start, keep)
        for e in self.events:  # the ids a counter handed out for this key (race 3)
            if e.kind == "id.alloc" and self._about(e) and e.seq < loss.seq:
                keep.setdefault(e.seq, e)
        if damage is not None:
            self._forward(damage, keep, None)
        end = self._forward(loss, keep, client)
        return Chain(self.key, client, words, self._steps(keep) + end)

    def _steps(self, keep: dict[int, Event]) -> list[Step]:
        """The kept events in order, in words: a send shows only where its receipt does not
        (or where it is the user's, or the late message's), each user line once."""
        events = sorted(keep.values(), key=lambda e: e.seq)
        received = {e.msg_id for e in events if e.kind == "msg.received"}
        late = {e.msg_id for e in events if e.seq in self.late}
        steps, last_cell = [], None
        for e in events:
            if (e.kind == "msg.sent" and e.msg_id in received and not e.cell
                    and e.msg_id not in late):
                continue
            step = self._step(e, show_cell=e.cell != last_cell)
            if step is not None:
                steps.append(step)
                if e.cell:
                    last_cell = e.cell
        return steps

    def _via(self, lost: Event) -> Chain:
        """A task cancelled because a dependency was lost: that dependency's chain, then this."""
        dep = lost.get("dependency")
        inner = _Walk(self.events, dep, self.client).chain()
        steps = list(inner.steps)
        if steps and steps[-1].kind == "end":
            steps.pop()
        graph = self._receipt_before(lost)
        if graph is not None:
            sent = self.sent.get(graph.msg_id)
            if sent is not None:
                steps.append(self._step(sent) or Step(sent.seq, sent.actor, sent.kind, sent.op))
        steps.append(Step(lost.seq, lost.actor, lost.kind,
                          f"the scheduler cancelled {self.key}: its dependency {dep} was lost "
                          "(\"User asked for computation on lost data\")"))
        client = self.client or (sent.actor if graph is not None and sent is not None else None)
        steps.append(Step(-1, client or "?", "end", f"your future for {self.key} is cancelled"))
        return Chain(self.key, client, f"cancelled: its dependency {dep} was lost", steps, via=dep)

    def _step(self, e: Event, show_cell: bool = True) -> Step | None:
        text = _words(e, e.seq in self.overtakers, e.seq in self.late)
        if text is None:
            return None
        where = _where(e.cell) if show_cell and e.cell and e.kind in (
            "refcount.dec", "refcount.inc", "future.created", "msg.sent", "id.alloc") else ""
        return Step(e.seq, e.actor, e.kind, f"{where} → {text}" if where else text, e.cell)


def _short(text: Any, limit: int = 160) -> str:
    text = str(text or "")
    first = text.split(". ")[0]
    return first if len(first) <= limit else first[:limit - 1] + "…"


def _words(e: Event, first: bool, late: bool) -> str | None:
    """An event in words (None: not worth a link of its own)."""
    kind, f = e.kind, e.fields
    if kind in ("refcount.dec", "refcount.inc"):
        return f"{e.actor} refcount {f['before']}→{f['after']}"
    if kind == "future.created":
        return f"{e.actor} made a future ({f['origin']})"
    if kind == "msg.sent":
        if e.op == "execute":
            return f"{e.actor} starts the task"
        how = (f"sent on {e.channel} (msg {e.msg_id}, batched)" if "->" in (e.channel or "")
               else f"RPC (msg {e.msg_id})")
        return f"`{e.op}` {how}"
    if kind == "msg.received":
        if e.op == "execute":
            return f"{e.actor} runs the task"
        tail = " first, ahead of an older message" if first else (
            ", late: a younger message overtook it" if late else "")
        return f"{e.actor} received `{e.op}` (msg {e.msg_id}){tail}"
    if kind == "release.applied":
        return f"scheduler applied {f['client']}'s release: who_wants {_set(f['who_wants_after'])}"
    if kind == "desire.applied":
        if f["created_task"]:
            return (f"scheduler created a ghost task for {e.key} (no run_spec) for {f['client']}: "
                    f"who_wants {_set(f['who_wants_after'])}")
        return f"scheduler applied {f['client']}'s desire: who_wants {_set(f['who_wants_after'])}"
    if kind == "transition":
        return f"{f['start']} → {f['finish']}"
    if kind == "scatter.registered":
        return f"scheduler registered the scatter: memory on {', '.join(f['who_has']) or 'no worker'}"
    if kind == "scatter.worker_put":
        return None  # worker.put says it
    if kind == "worker.put":
        return f"{e.actor} stored a copy (#{f['incarnation']})"
    if kind == "worker.free":
        return f"{e.actor} deleted its copy (#{f['incarnation']})"
    if kind == "who_has.removed":
        return f"scheduler forgot that {f['worker']} holds it: who_has {_set(f['who_has_after'])}"
    if kind == "future.state":
        return f"{e.actor}'s future: {f['from']} → {f['to']}"
    if kind == "id.alloc":
        return f"{e.actor} (thread {e.thread}) drew id {f['value']}"
    if kind == "future.put_rejected":
        return f"scheduler refused a second value for {e.key}: {f['reason']}"
    if kind == "scheduler.assertion":
        return f"scheduler assertion: {f['message']}; it drops the sender's connection"
    if kind in ("release.stale", "scatter.stale"):
        return f"scheduler ignored a stale {kind.split('.')[0]} from {f['client']}"
    if kind == "graph.lost_data":
        return f"the scheduler cancelled {e.key}: its dependency {f['dependency']} was lost"
    return None


def _set(items: Any) -> str:
    return "{" + ", ".join(items or ()) + "}"
