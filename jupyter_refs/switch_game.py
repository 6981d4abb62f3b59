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
"""

from __future__ import annotations

import inspect
import sys
import threading
from dataclasses import dataclass
from types import FrameType
from typing import Any

__all__ = ["SwitchGame", "SwitchResult"]


def _inc(v: int) -> int:
    return v + 1


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

    def sentence(self) -> str:
        where = (f"after line {self.after_line}" if self.after_line else
                 "before line 1")
        if self.b_after is not None:
            where += (f", B switched out after its line {self.b_after}" if self.b_after else
                      ", B switched out before its line 1")
        head = f"switch {where}: thread A's key {self.keys[0]}, thread B's key {self.keys[1]}"
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
    its submit, then B finishes.  ``switch_after(n)`` is ``switch(n)``.
    """

    def __init__(self, protocol: str = "racy-ids") -> None:
        from .cluster import Cluster

        self.protocol = protocol
        self.tries: list[SwitchResult] = []
        with Cluster(protocol=protocol, workers=1, network="immediate") as probe:
            self._code = type(probe.id_allocator).__call__.__code__
            source, first = inspect.getsourcelines(type(probe.id_allocator).__call__)
        # the body's lines: after the ``def`` line (and a docstring, if any)
        body = [(first + i, line.rstrip()) for i, line in enumerate(source)][1:]
        self.lines = [(n, text.strip()) for n, text in body if text.strip()
                      and not text.strip().startswith(('"""', "#"))]

    @property
    def won(self) -> bool:
        """Whether some try has made the checks flag id_collision."""
        return any(t.collision for t in self.tries)

    def listing(self) -> str:
        head = f"{self._code.co_qualname} ({self.protocol}): where does thread A lose the CPU?"
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

    def tried(self) -> str:
        """The switch points tried so far, winners marked: what the student has mapped."""
        rows = [f"  A after {t.after_line}, B " + ("whole" if t.b_after is None else
                                                   f"after {t.b_after}")
                + (": id_collision" if t.collision else ": -") for t in self.tries]
        return "\n".join([f"{len(self.tries)} tries, {sum(t.collision for t in self.tries)} "
                          "with id_collision", *rows])

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
            client = cluster.client()
            b: list[Any] = []
            entered: list[bool] = []
            b_out, b_back = threading.Event(), threading.Event()  # B switched out; B's turn
            b_stop = self._stop_before(b_after) if b_after is not None else None

            def b_local(frame: FrameType, event: str, arg: Any) -> Any:
                if b_out.is_set():
                    return None
                if (event == "line" and frame.f_lineno == b_stop) or \
                        (event == "return" and b_stop is None):
                    b_out.set()  # B loses the CPU here; A runs until its submit is done
                    b_back.wait(timeout=60)
                    return None
                return b_local

            def b_trace(frame: FrameType, event: str, arg: Any) -> Any:
                return b_local if frame.f_code is self._code and not b_out.is_set() else None

            def b_submit() -> None:
                if b_after is not None:
                    sys.settrace(b_trace)
                try:
                    b.append(client.submit(_inc, 2, pure=False))
                finally:
                    sys.settrace(None)
                    b_out.set()  # B is done (or never reached its switch point)

            threads: list[threading.Thread] = []

            def thread_b() -> None:
                t = threading.Thread(target=b_submit, name="thread-B")
                threads.append(t)
                t.start()
                b_out.wait(timeout=60)  # B runs until it is switched out, or to its end

            # the line A is about to run when B goes: line n + 1 (n = len: on A's return)
            stop_before = self._stop_before(n)

            def local(frame: FrameType, event: str, arg: Any) -> Any:
                if threads:
                    return None
                if (event == "line" and frame.f_lineno == stop_before) or \
                        (event == "return" and stop_before is None):
                    thread_b()
                return local

            def trace(frame: FrameType, event: str, arg: Any) -> Any:
                if frame.f_code is self._code and not threads:
                    entered.append(True)
                    return local
                return None

            previous = sys.gettrace()
            sys.settrace(trace)
            try:
                a = client.submit(_inc, 1, pure=False)
            finally:
                sys.settrace(previous)
                b_back.set()  # A is done: B gets the CPU back and finishes
                for t in threads:
                    t.join(timeout=60)
            if not threads:  # the allocator never ran (no counter): B simply comes second
                b_submit()
            cluster.run_until_idle(timeout=60)
            found = [v for v in cluster.violations if v.name == "id_collision"]
            result = SwitchResult(n, (a.key, b[0].key), bool(found),
                                  found[0].explanation if found else "", bool(entered), b_after)
        self.tries.append(result)
        return result

    def _stop_before(self, n: int) -> int | None:
        """The source line a thread switched out after its line ``n`` is about to run (None:
        after its last line, on the allocator's return)."""
        return self.lines[n][0] if n < len(self.lines) else None
