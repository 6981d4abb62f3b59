"""Be the thread scheduler (lesson 3): pick where thread A is switched out of the id allocator.

Thread A submits a ``pure=False`` task; its id allocator (the protocol's,
``cluster.id_allocator``) runs line by line under a line tracer.  At the line the student picks,
A stops and thread B — a real thread — submits a task.  With a second switch point, B is
switched out in turn after a line of *its* allocation: A runs to the end of its submit, then B
finishes.  A collision needs both reads before either write: a switch inside A's
read-then-write wins when B reads before it is switched out (B's own write comes too late to
matter), and a switch before A's read wins when B is switched out between its read and its
write.  The game is won when the course's checks flag ``id_collision``: two futures handed the
same id.  Under ``racy-ids`` (Julia's read-then-write counter) some switch points win; under
``atomic-ids`` (Julia's fix: fetch-and-add in one step) or ``dask`` and ``fixed`` (no counter:
uuid4 keys) none does, and the game says so.

``SwitchGame(allocator=...)`` plays the game against an allocator of one's own (lesson 3's
exercise: a counter behind a ``threading.Lock``), on a ``racy-ids`` cluster whose allocator it
replaces.  A thread that reaches a lock the other holds waits: the game sees it stop inside the
allocator (no line runs for a while) and gives the other thread the CPU back, as a real
scheduler would, and the try says who waited.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any

__all__ = ["SwitchGame", "SwitchResult"]


def inc(v: int) -> int:
    """The task both threads submit (its keys print ``inc-1``, ``inc-2``)."""
    return v + 1


#: How long a thread may sit inside the allocator without running a line before the game takes
#: it to be waiting on a lock the other thread holds (seconds).
QUIET = 1.0


class Listing(str):
    """A table as text: a cell ending in it shows its lines, not a quoted string with ``\\n``
    escapes (review 4, lesson 3's ``game.tried()``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class SwitchResult:
    """One try: where A was switched out, the two keys, and whether the checks flagged it."""

    after_line: int
    keys: tuple[str, str]
    collision: bool
    explanation: str = ""
    #: Whether A's submit ran the allocator at all (``dask`` draws uuid4 keys without it).
    allocated: bool = True
    #: Where B was switched out in its own allocation (None: B ran its whole submit).
    b_after: int | None = None
    #: The thread that found the other holding a lock and waited for it ("A", "B" or None).
    waited: str | None = None

    def sentence(self) -> str:
        where = (f"after line {self.after_line}" if self.after_line else
                 "before line 1")
        if self.b_after is not None:
            where += (f", B switched out after its line {self.b_after}" if self.b_after else
                      ", B switched out before its line 1")
        head = f"switch {where}: thread A's key {self.keys[0]}, thread B's key {self.keys[1]}"
        if self.waited is not None:
            other = "A" if self.waited == "B" else "B"
            head += (f" ({self.waited} waited for {other}'s lock: {other} ran on and released "
                     f"it)")
        if self.collision:
            return f"{head} — WON: the checks flag id_collision. {self.explanation}"
        if not self.allocated:
            return (f"{head} — no id_collision: this protocol never ran the allocator (its "
                    f"pure=False keys come from uuid4), so B simply came second.")
        return f"{head} — no id_collision: try another line."


class SwitchGame:
    """The allocator's lines, numbered, and ``switch(a, b)``: one try on a fresh cluster.

    ``switch(0)`` switches to B before A's first line; ``switch(n)`` after A's line ``n`` has
    run (the last line is the ``return``: after it, B simply comes second), and B then submits
    its whole task.  ``switch(n, m)`` switches B out in turn after *its* line ``m``: A finishes
    its submit, then B finishes.  ``switch_after(n)`` is ``switch(n)``.  ``status`` reads how
    the game stands, ``tried()`` lists the tries, ``restart()`` starts again.
    """

    def __init__(self, protocol: str = "racy-ids", allocator: Any = None) -> None:
        """``allocator``: a class of one's own, made as ``allocator(record)`` and called with the
        actor for each id (as ``ids.RacyIds``), played on a ``racy-ids`` cluster in place of its
        allocator.  Its ``__call__`` is the code the game numbers and switches in."""
        from .cluster import Cluster

        if allocator is not None:
            if protocol not in ("racy-ids", "atomic-ids"):
                raise ValueError(f"{protocol!r} draws its keys from uuid4 and never calls an "
                                 "allocator: play your own on 'racy-ids'")
            # a class's own __call__ is a function; a class without one has type's
            if not inspect.isclass(allocator) or not inspect.isfunction(allocator.__call__):
                raise TypeError("allocator is a class with __init__(self, record) and "
                                "__call__(self, actor) -> int, as jupyter_refs.ids.RacyIds")
        self.protocol = protocol
        self.allocator = allocator
        self.tries: list[SwitchResult] = []
        with Cluster(protocol=protocol, workers=1, network="immediate") as probe:
            kind = allocator if allocator is not None else type(probe.id_allocator)
            self._code = kind.__call__.__code__
            source, first = inspect.getsourcelines(kind.__call__)
        # the body's lines: after the ``def`` line (and a docstring, if any)
        body = [(first + i, line.rstrip()) for i, line in enumerate(source)][1:]
        self.lines = [(n, text.strip()) for n, text in body if text.strip()
                      and not text.strip().startswith(('"""', "#"))]

    @property
    def won(self) -> bool:
        """Whether some try has made the checks flag id_collision."""
        return any(t.collision for t in self.tries)

    def listing(self) -> str:
        where = self.protocol if self.allocator is None else f"yours, on {self.protocol}"
        head = f"{self._code.co_qualname} ({where}): where does thread A lose the CPU?"
        rows = [f"  {i:>2}  {text}" for i, (_, text) in enumerate(self.lines, 1)]
        return "\n".join([head, *rows,
                          "play: game.switch(N) runs B's whole submit after A's line N "
                          "(0: before line 1);",
                          "      game.switch(N, M) also switches B out after B's line M: A "
                          "finishes, then B does"])

    def __repr__(self) -> str:
        return self.listing()

    def switch(self, a: int, b: int | None = None) -> None:
        """One try: A switched out after its line ``a`` (B after its line ``b``, if given);
        prints what happened."""
        result = self.play(a, b)
        print(result.sentence())
        if result.collision and sum(t.collision for t in self.tries) == 1:
            print(f"Won in {len(self.tries)} tr{'y' if len(self.tries) == 1 else 'ies'}.")
        if any(t.allocated for t in self.tries):
            print(self.goals())

    def switch_after(self, n: int) -> None:
        """One try: A switched out after its line ``n``, B submits its whole task."""
        self.switch(n)

    def tried(self) -> Listing:
        """The switch points tried so far, winners marked: what the student has mapped (a
        string that a cell's last line shows as the table, not as a quoted one-liner)."""
        rows = [f"  A after {t.after_line}, B " + ("whole" if t.b_after is None else
                                                   f"after {t.b_after}")
                + (": id_collision" if t.collision else ": -") for t in self.tries]
        return Listing("\n".join([self._count(), *rows]))

    def goals(self) -> str:
        """The game's three goals, each ticked once some tries show it (printed by ``switch``):

        1. a switch that makes the checks flag id_collision;
        2. a switch point of A that wins with one switch point of B and loses with another:
           A's switch alone does not decide it;
        3. a win with A switched out before its first line: before A has read anything.
        """
        won = [t for t in self.tries if t.collision]
        lost = {t.after_line for t in self.tries if not t.collision}
        done = [bool(won), any(t.after_line in lost for t in won),
                any(t.after_line == 0 for t in won)]
        names = ["1. make the checks flag id_collision",
                 "2. one switch point of A that wins with one point of B and loses with another",
                 "3. a win with A switched out before its line 1"]
        rows = [f"  [{'x' if d else ' '}] {n}" for d, n in zip(done, names, strict=True)]
        return "\n".join([f"goals: {sum(done)} of 3", *rows])

    @property
    def all_goals(self) -> bool:
        """Whether the tries so far meet the three goals of :meth:`goals`."""
        return self.goals().startswith("goals: 3 of 3")

    @property
    def status(self) -> Listing:
        """How the game stands, as the other games' ``status``: the tries so far and the goals
        (shown as text, not as a quoted string)."""
        return Listing(f"{self._count()}\n{self.goals()}")

    def _count(self) -> str:
        return (f"{len(self.tries)} tries, {sum(t.collision for t in self.tries)} "
                "with id_collision")

    def restart(self) -> None:
        """Start again: forget the tries (each already ran on a fresh cluster) and the goals
        they ticked, and print the fresh game."""
        self.tries.clear()
        print(self.listing())

    def _line(self, n: Any, who: str) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= len(self.lines):
            raise ValueError(f"pick a line from 0 to {len(self.lines)} for {who}, not {n!r}")

    def play(self, n: int, b_after: int | None = None) -> SwitchResult:
        """One try, returned rather than printed (the tests' scripted student)."""
        self._line(n, "A")
        if b_after is not None:
            self._line(b_after, "B")
        from .cluster import Cluster

        with Cluster(protocol=self.protocol, workers=1, network="immediate") as cluster:
            if self.allocator is not None:
                cluster.id_allocator = self.allocator(cluster.trace.record)
            client = cluster.client()
            b: list[Any] = []
            entered: list[bool] = []
            b_out, b_back = threading.Event(), threading.Event()  # B switched out; B's turn
            b_stop = self._stop_before(b_after) if b_after is not None else None
            # When each thread last ran a line or a call, and which thread it is: a thread
            # that sits inside the allocator and runs nothing waits on a lock the other holds.
            last = {"A": time.monotonic(), "B": time.monotonic()}
            idents: dict[str, int] = {"A": threading.get_ident()}
            waited: list[str] = []

            def blocked(who: str) -> bool:
                frame = sys._current_frames().get(idents.get(who, -1))
                return (frame is not None and frame.f_code is self._code
                        and time.monotonic() - last[who] > QUIET)

            def wait_for(event: threading.Event, other: str) -> None:
                """Wait for ``event``; if the other thread waits on our lock, it goes first."""
                deadline = time.monotonic() + 60
                while not event.wait(0.05) and time.monotonic() < deadline:
                    if blocked(other):
                        waited.append(other)
                        return

            def b_local(frame: FrameType, event: str, arg: Any) -> Any:
                last["B"] = time.monotonic()
                if b_out.is_set() or b_after is None:
                    return b_local
                if (event == "line" and frame.f_lineno == b_stop) or \
                        (event == "return" and b_stop is None):
                    b_out.set()  # B loses the CPU here; A runs until its submit is done
                    wait_for(b_back, "A")
                    last["B"] = time.monotonic()
                return b_local

            def b_trace(frame: FrameType, event: str, arg: Any) -> Any:
                last["B"] = time.monotonic()
                return b_local if frame.f_code is self._code else None

            def b_submit(traced: bool = True) -> None:
                idents["B"] = threading.get_ident()
                last["B"] = time.monotonic()
                if traced:
                    sys.settrace(b_trace)
                try:
                    b.append(client.submit(inc, 2, pure=False))
                finally:
                    if traced:
                        sys.settrace(None)
                    b_out.set()  # B is done (or never reached its switch point)

            threads: list[threading.Thread] = []

            def thread_b() -> None:
                t = threading.Thread(target=b_submit, name="thread-B")
                threads.append(t)
                t.start()
                wait_for(b_out, "B")  # B runs until it is switched out, waits, or ends
                last["A"] = time.monotonic()

            # the line A is about to run when B goes: line n + 1 (n = len: on A's return)
            stop_before = self._stop_before(n)

            def local(frame: FrameType, event: str, arg: Any) -> Any:
                last["A"] = time.monotonic()
                if threads:
                    return local
                if (event == "line" and frame.f_lineno == stop_before) or \
                        (event == "return" and stop_before is None):
                    thread_b()
                return local

            def trace(frame: FrameType, event: str, arg: Any) -> Any:
                last["A"] = time.monotonic()
                if frame.f_code is self._code and not threads:
                    entered.append(True)
                    return local
                return None

            previous = sys.gettrace()
            sys.settrace(trace)
            try:
                a = client.submit(inc, 1, pure=False)
            finally:
                sys.settrace(previous)
                b_back.set()  # A is done: B gets the CPU back and finishes
                for t in threads:
                    t.join(timeout=60)
            if not threads:  # the allocator never ran (no counter): B simply comes second
                b_submit(traced=False)
            cluster.run_until_idle(timeout=60)
            found = [v for v in cluster.violations if v.name == "id_collision"]
            result = SwitchResult(n, (a.key, b[0].key), bool(found),
                                  found[0].explanation if found else "", bool(entered), b_after,
                                  waited[0] if waited else None)
        self.tries.append(result)
        return result

    def _stop_before(self, n: int) -> int | None:
        """The source line a thread switched out after its line ``n`` is about to run (None:
        after its last line, on the allocator's return)."""
        return self.lines[n][0] if n < len(self.lines) else None
