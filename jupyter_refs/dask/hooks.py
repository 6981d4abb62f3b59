"""Reversible hooks that can never break what they observe.

Every hook wraps an existing callable (a method on one *instance*, or an entry of a
handler table) with an observer that runs before and/or after it.  The wrapped call
itself always runs, and its result or exception passes through untouched; an
observer that raises is removed — the original callable is put back — and reported
once.  ``undo()`` puts every original back: nothing patched stays behind.

Wrappers keep the original's signature (``functools.wraps``) and its kind: dask
decides how to call a handler by asking ``iscoroutinefunction`` and
``has_keyword(handler, "comm")``, so a wrapper must answer as the original would.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, MutableMapping
from typing import Any

_MISSING = object()
#: What a ``before`` observer returns when the call is of no interest: its ``after`` is not
#: called (a report about a key out of focus, say: one call less on a per-task path).
SKIP = object()

Observer = Callable[..., Any]
#: ``skip(args, kwargs)``: true for a call every observer of the hook would ignore (one about
#: a key the focus has turned down, say), which then goes to the original alone.  A pre-check is
#: asked with the call's own argument tuple and dict, unpacked for no one: on a per-task
#: path that is most of what an observer costs.  It only ever saves work — the observers
#: judge for themselves whatever it lets through, and a pre-check that raises lets the call through.
Precheck = Callable[[tuple, dict], bool]


class Hooks:
    """A set of installed hooks; ``failed`` reports the observers removed after raising."""

    def __init__(self, on_failure: Callable[[str, BaseException], None]):
        self._on_failure = on_failure
        self._undo: dict[str, Callable[[], None]] = {}
        self.failed: dict[str, str] = {}

    # -- installing ----------------------------------------------------------------------

    def on_undo(self, label: str, undo: Callable[[], None]) -> None:
        """Run ``undo`` with the rest when the hooks come off: for a change made by hand (an
        attribute swapped for a proxy, an entry added to dask's list), so nothing is left."""
        self._undo[label] = undo

    def attr(self, obj: Any, name: str, before: Observer | None = None,
             after: Observer | None = None, label: str | None = None,
             skip: Precheck | None = None) -> None:
        """Wrap ``obj.name`` on this instance only (an instance attribute shadows the method)."""
        label = label or f"{type(obj).__name__}.{name}"
        saved = obj.__dict__.get(name, _MISSING)
        original = getattr(obj, name)

        def undo() -> None:
            if saved is _MISSING:
                obj.__dict__.pop(name, None)
            else:
                setattr(obj, name, saved)

        setattr(obj, name, self._wrap(label, original, before, after, skip))
        self._undo[label] = undo

    def item(self, table: MutableMapping[str, Any], name: str, before: Observer | None = None,
             after: Observer | None = None, label: str | None = None,
             skip: Precheck | None = None) -> None:
        """Wrap ``table[name]`` (a handler table); a missing entry is added, and removed on undo."""
        label = label or name
        saved = table.get(name, _MISSING)

        def undo() -> None:
            if saved is _MISSING:
                table.pop(name, None)
            else:
                table[name] = saved

        if saved is _MISSING:
            assert before is not None, "a new entry is its own handler"
            table[name] = before
        else:
            table[name] = self._wrap(label, saved, before, after, skip)
        self._undo[label] = undo

    def replace(self, table: MutableMapping[str, Any], name: str,
                make: Callable[[Callable[..., Any]], Callable[..., Any]], label: str) -> None:
        """Put ``make(table[name])`` in its place: a wrapper that may *defer* the call.

        For the holds (:mod:`.holds`), which decide when dask runs a handler; observers
        use :meth:`item`, whose wrapped call always runs at once.
        """
        saved = table[name]
        table[name] = make(saved)

        def undo() -> None:
            table[name] = saved

        self._undo[label] = undo

    def replace_attr(self, obj: Any, name: str,
                     make: Callable[[Callable[..., Any]], Callable[..., Any]], label: str) -> None:
        """Put ``make(obj.name)`` on this instance only: a wrapper around the call (one that
        sets a context for it, say), where :meth:`attr`'s observers only run beside it."""
        saved = obj.__dict__.get(name, _MISSING)
        setattr(obj, name, make(getattr(obj, name)))

        def undo() -> None:
            if saved is _MISSING:
                obj.__dict__.pop(name, None)
            else:
                setattr(obj, name, saved)

        self._undo[label] = undo

    def undo(self) -> None:
        for undo in reversed(list(self._undo.values())):
            undo()
        self._undo.clear()

    # -- the wrapper -----------------------------------------------------------------------

    def _fail(self, label: str, exc: BaseException) -> None:
        if label in self.failed:
            return
        self.failed[label] = f"{type(exc).__name__}: {exc}"
        undo = self._undo.pop(label, None)
        if undo is not None:
            undo()
        self._on_failure(label, exc)

    def _wrap(self, label: str, original: Callable[..., Any], before: Observer | None,
              after: Observer | None, skip: Precheck | None = None) -> Callable[..., Any]:
        # The observers are called inline (no helper in between): these wrappers sit on
        # dask's per-task paths, where one more call and one more copy of the arguments
        # per observer is a measurable share of what tracing costs.  The pre-check is
        # inline too: unfocused, it answers no and costs one call per wrapped call.
        failed, fail = self.failed, self._fail

        if inspect.iscoroutinefunction(original):
            @functools.wraps(original)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                if skip is not None:
                    try:
                        skipped = skip(args, kwargs)
                    except Exception:  # noqa: BLE001 - a pre-check in doubt lets the call through
                        skipped = False
                    if skipped:
                        return await original(*args, **kwargs)
                state = None
                if before is not None and label not in failed:
                    try:
                        state = before(*args, **kwargs)
                    except Exception as exc:  # noqa: BLE001 - must never break the call
                        fail(label, exc)
                result = await original(*args, **kwargs)
                if after is not None and state is not SKIP and label not in failed:
                    try:
                        after(state, result, *args, **kwargs)
                    except Exception as exc:  # noqa: BLE001
                        fail(label, exc)
                return result

            return async_wrapper

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if skip is not None:
                try:
                    skipped = skip(args, kwargs)
                except Exception:  # noqa: BLE001 - a pre-check in doubt lets the call through
                    skipped = False
                if skipped:
                    return original(*args, **kwargs)
            state = None
            if before is not None and label not in failed:
                try:
                    state = before(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001 - must never break the call
                    fail(label, exc)
            result = original(*args, **kwargs)
            if after is not None and state is not SKIP and label not in failed:
                try:
                    after(state, result, *args, **kwargs)
                except Exception as exc:  # noqa: BLE001
                    fail(label, exc)
            return result

        return wrapper

