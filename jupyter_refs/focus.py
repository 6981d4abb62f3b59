"""Which keys a trace follows: ``attach(client, keys="inc-*", sample=1000)``.

A :class:`Focus` is asked about every event that names a key, on every process that
records: the dask scheduler and each worker (``dask/remote.py``), the client's hooks
(``dask/tracer.py``) and the kernel-side trace (``trace.py``).  What it leaves out is
never buffered or sent, so a one-key trace of a million-task map costs a million
cheap questions, not a million events.

Sampling picks one key in ``sample`` by a *stable* hash of the key's text (CRC-32),
not Python's ``hash()``, which is salted per process: the scheduler, every worker and
the client must pick the same keys, or a key's story would have holes in it.

A focus travels to dask's worker processes inside the plugins (pickled, or
cloudpickled for a predicate), so it holds nothing that cannot be pickled; its
answers are cached per process, and shared by the copies of one focus there.  This
module needs only the standard library.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from .errors import JupyterRefsError

#: Answers kept per process before the cache starts over (a key is asked about ~17 times).
_CACHE = 100_000
#: The answers of every pattern focus in this process, by ``(patterns, sample)``: an
#: in-process cluster's scheduler, its workers and the client each hold a copy of the focus
#: (a plugin travels pickled), and one decision per key serves them all.  A predicate's
#: answers stay with its focus: two processes may give one label to different functions.
_SHARED: dict[tuple[tuple[str, ...], int], dict[str, bool]] = {}
_GLOB = re.compile(r"[*?\[]")

#: Predicates made in this process, by label: a trace names a predicate focus by its label
#: (``focus.changed``), and the checks here find the function again to judge by it.
_PREDICATES: dict[str, Callable[[str], bool]] = {}
_labels = itertools.count(1)


class FocusError(JupyterRefsError, ValueError):
    """``keys=`` or ``sample=`` cannot say which keys to trace."""


class Focus:
    """The keys a trace follows: glob patterns or key prefixes, or a predicate, and a sample.

    ``Focus(keys, sample)``: ``keys`` is a glob (``"inc-*"``), a plain string (a key
    prefix), a list of those, or a callable ``key -> bool`` (the key as the trace names
    it: a tuple key such as ``('x', 0)`` is asked about as ``"('x', 0)"``); ``sample=N``
    keeps one key in N of those.  ``wants(key)`` answers; ``keep(keys)`` filters a tuple.
    """

    __slots__ = ("patterns", "label", "sample", "_match", "_predicate", "_cache")

    def __init__(self, keys: str | Iterable[str] | Callable[[str], bool] | None = None,
                 sample: int = 1):
        if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
            raise FocusError(f"sample must be a whole number of keys, 1 or more (one key in N), "
                             f"not {sample!r}")
        self.sample = sample
        self.label: str | None = None
        self._predicate: Callable[[str], bool] | None = None
        if keys is None:
            self.patterns: tuple[str, ...] = ()
        elif callable(keys):
            self.patterns = ()
            self._predicate = keys
            name = getattr(keys, "__name__", type(keys).__name__)
            self.label = f"{name}#{next(_labels)}"
            _PREDICATES[self.label] = keys
        else:
            self.patterns = _patterns(keys)
        self._match = _compile(self.patterns)
        self._cache = self._answers_here()

    @classmethod
    def of(cls, keys: Any = None, sample: int = 1) -> Focus | None:
        """The focus ``keys`` and ``sample`` ask for (``keys`` may be a focus already), or
        None for every key."""
        if isinstance(keys, Focus) and sample == 1:
            return keys
        focus = cls(keys, sample)
        return None if focus.everything else focus

    @property
    def everything(self) -> bool:
        return not self.patterns and self._predicate is None and self.sample == 1

    # -- asking (every recorder, on its hot path once focused) ---------------------------

    def wants(self, key: str) -> bool:
        cache = self._cache
        answer = cache.get(key)
        if answer is None:
            if len(cache) >= _CACHE:
                cache.clear()
            answer = cache[key] = self._decide(key)
        return answer

    __contains__ = wants

    def _answers_here(self) -> dict[str, bool]:
        if self._predicate is not None:
            return {}
        return _SHARED.setdefault((self.patterns, self.sample), {})

    @property
    def answers(self) -> dict[str, bool]:
        """The answers given so far, key -> wanted: a recorder on a per-task path looks here
        first and asks :meth:`wants` only for a key it has not asked about (one call less
        per question, a dozen questions per task)."""
        return self._cache

    def keep(self, keys: tuple) -> tuple:
        """The keys of a message that are in focus (all of them, or fewer, or none)."""
        wants = self.wants
        if len(keys) == 1:  # most messages name one key: no generator
            return keys if wants(keys[0]) else ()
        return tuple(k for k in keys if wants(k))

    def _decide(self, key: str) -> bool:
        if self._predicate is not None:
            try:
                if not self._predicate(key):
                    return False
            except Exception:  # noqa: BLE001 - a predicate that raises wants nothing
                return False
        elif self._match is not None and self._match(key) is None:
            return False
        return self.sample == 1 or zlib.crc32(key.encode()) % self.sample == 0

    # -- saying what it is ----------------------------------------------------------------

    @property
    def fields(self) -> tuple[tuple[str, ...], int]:
        """``(keys, sample)`` as a ``focus.changed`` event records them: the patterns, or the
        predicate's label as ``("predicate:<label>",)``."""
        keys = (f"predicate:{self.label}",) if self._predicate is not None else self.patterns
        return keys, self.sample

    @classmethod
    def from_fields(cls, keys: Iterable[str], sample: int) -> Focus | None:
        """The focus a ``focus.changed`` event names; a predicate is found by its label in this
        process (None for every key — also for a predicate made in another process, which a
        trace read from a file cannot run)."""
        keys = tuple(keys)
        if keys and keys[0].startswith("predicate:"):
            predicate = _PREDICATES.get(keys[0].removeprefix("predicate:"))
            if predicate is None:
                return None
            return _rebuild((), predicate, keys[0].removeprefix("predicate:"), sample)
        return cls.of(keys or None, sample)

    def __str__(self) -> str:
        return describe(*self.fields)

    def __repr__(self) -> str:
        return f"Focus({self})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Focus) and self.fields == other.fields

    def __hash__(self) -> int:
        return hash(self.fields)

    def __reduce__(self) -> tuple:
        # The cache stays behind; a predicate travels as itself (dask cloudpickles plugins).
        return _rebuild, (self.patterns, self._predicate, self.label, self.sample)


def _rebuild(patterns: tuple[str, ...], predicate: Callable | None, label: str | None,
             sample: int) -> Focus:
    focus = Focus(None, sample)
    focus.patterns, focus._match = patterns, _compile(patterns)
    focus._predicate, focus.label = predicate, label
    focus._cache = focus._answers_here()
    return focus


def filter_while_focused(obj: Any, focus: Focus | None, **filtering: str) -> None:
    """Point ``obj``'s recording methods at their filtering twins only while ``focus`` is set.

    ``filtering`` maps a method to its twin's name (``record="_record_focused"``).  The twin
    is set as an instance attribute, which shadows the class's method; unfocused, the
    attribute goes and the plain method answers again — so a recorder on a hot path pays
    nothing for a focus nobody set.  Every recorder (dask's scheduler and workers, the
    tracer's client hooks, the kernel-side trace) switches this one way.
    """
    for name, twin in filtering.items():
        obj.__dict__.pop(name, None)
        if focus is not None:
            setattr(obj, name, getattr(obj, twin))


def exactly(key: str) -> str:
    """A glob that matches ``key`` and nothing else (a plain string would be a prefix): each
    glob character in a class of its own, and the first character too if there is none."""
    escaped = "".join(f"[{c}]" if c in "*?[" else c for c in key)
    return escaped if escaped != key else f"[{key[:1]}]{key[1:]}"


_EXACT = re.compile(r"(?:[^*?\[]|\[[^\]]\])*")


def _shown(pattern: str) -> str:
    """A pattern as the views show it: a glob as it is, a prefix ``p`` as the glob ``p*`` it
    means, an :func:`exactly` glob as its key, a predicate by its name."""
    if pattern.startswith("predicate:"):
        return pattern.removeprefix("predicate:").partition("#")[0] + "(key)"
    if not _GLOB.search(pattern):
        return pattern + "*"
    if _EXACT.fullmatch(pattern):
        return re.sub(r"\[(.)\]", r"\1", pattern)
    return pattern


def describe(keys: Iterable[str], sample: int) -> str:
    """What a focus follows, in the views' words: ``keys inc-*, x-1* · one key in 10``."""
    keys = tuple(keys)
    parts = []
    if keys:
        parts.append("keys " + ", ".join(map(_shown, keys)))
    if sample > 1:
        parts.append(f"one key in {sample}")
    return " · ".join(parts) or "every key"


def _patterns(keys: str | Iterable[str]) -> tuple[str, ...]:
    items = [keys] if isinstance(keys, str) else keys
    try:
        items = list(items)
    except TypeError:
        raise FocusError(f"keys must be a glob, a key prefix, a list of those or a function "
                         f"key -> bool, not {type(keys).__name__}") from None
    if not items:
        raise FocusError("keys=[] would trace no key at all; leave keys out to trace every key")
    for item in items:
        if not isinstance(item, str):
            raise FocusError(f"keys: {item!r} is not a string (a glob or a key prefix)")
        if not item:
            raise FocusError("keys: an empty pattern would match every key; leave keys out "
                             "to trace every key")
    return tuple(dict.fromkeys(items))


def _compile(patterns: tuple[str, ...]) -> Callable[[str], Any] | None:
    """One regex for every pattern: a glob matches the whole key, a plain string its start."""
    if not patterns:
        return None
    parts = [fnmatch.translate(p) if _GLOB.search(p) else re.escape(p) for p in patterns]
    return re.compile("|".join(f"(?:{p})" for p in parts)).match
