"""Be the thread scheduler (lesson 3): pick where thread A is switched out of the id allocator.

Thread A submits a ``pure=False`` task; its id allocator (the protocol's, ``cluster._ids``) runs
line by line under a line tracer.  At the line the student picks, A stops, thread B — a real
thread — submits a whole task, and only then A goes on.  The game is won when the course's
checks flag ``id_collision``: two futures handed the same id.  Under ``racy-ids`` (Julia's
read-then-write counter) some switch points win; under ``dask`` (no counter: uuid4 keys) or
``fixed`` (an atomic counter) none does, and the game says so.
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

    def sentence(self) -> str:
        where = (f"after line {self.after_line}" if self.after_line else
                 "before line 1")
        head = f"switch {where}: thread A's key {self.keys[0]}, thread B's key {self.keys[1]}"
        if self.collision:
            return f"{head} — WON: the checks flag id_collision. {self.explanation}"
        if not self.allocated:
            return (f"{head} — no id_collision: this protocol never ran the allocator (its "
                    f"pure=False keys come from uuid4), so B simply came second.")
        return f"{head} — no id_collision: try another line."


class SwitchGame:
    """The allocator's lines, numbered, and ``switch_after(n)``: one try on a fresh cluster.

    ``switch_after(0)`` switches to B before A's first line; ``switch_after(n)`` after A's
    line ``n`` has run (the last line is the ``return``: after it, B simply comes second).
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
        return "\n".join([head, *rows, "play: game.switch_after(N) runs B after A's line N "
                          "(0: before line 1)"])

    def __repr__(self) -> str:
        return self.listing()

    def switch_after(self, n: int) -> None:
        """One try: A switched out after its line ``n``; prints what happened."""
        result = self.play(n)
        print(result.sentence())
        if result.collision and sum(t.collision for t in self.tries) == 1:
            print(f"Won in {len(self.tries)} tr{'y' if len(self.tries) == 1 else 'ies'}.")

    def play(self, n: int) -> SwitchResult:
        """One try, returned rather than printed (the tests' scripted student)."""
        if not isinstance(n, int) or not 0 <= n <= len(self.lines):
            raise ValueError(f"pick a line from 0 to {len(self.lines)}, not {n!r}")
        from .cluster import Cluster

        with Cluster(protocol=self.protocol, workers=1, network="immediate") as cluster:
            client = cluster.client()
            b: list[Any] = []
            entered: list[bool] = []

            def thread_b() -> None:
                t = threading.Thread(target=lambda: b.append(client.submit(_inc, 2, pure=False)),
                                     name="thread-B")
                t.start()
                t.join()

            # the line A is about to run when B goes: line n + 1 (n = len: on A's return)
            stop_before = self.lines[n][0] if n < len(self.lines) else None

            def local(frame: FrameType, event: str, arg: Any) -> Any:
                if b:
                    return None
                if (event == "line" and frame.f_lineno == stop_before) or \
                        (event == "return" and stop_before is None):
                    thread_b()
                return local

            def trace(frame: FrameType, event: str, arg: Any) -> Any:
                if frame.f_code is self._code and not b:
                    entered.append(True)
                    return local
                return None

            previous = sys.gettrace()
            sys.settrace(trace)
            try:
                a = client.submit(_inc, 1, pure=False)
            finally:
                sys.settrace(previous)
            if not b:  # the allocator never ran (no counter): B simply comes second
                b.append(client.submit(_inc, 2, pure=False))
            cluster.run_until_idle(timeout=60)
            found = [v for v in cluster.violations if v.name == "id_collision"]
            result = SwitchResult(n, (a.key, b[0].key), bool(found),
                                  found[0].explanation if found else "", bool(entered))
        self.tries.append(result)
        return result
