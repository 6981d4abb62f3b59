"""Interrupts (a notebook's ■, Ctrl-C) held off while a cluster changes its state.

Python raises ``KeyboardInterrupt`` in the main thread wherever it happens to be.
On dask that is harmless: the client's state changes run on the event loop's
thread, so an interrupt only ever ends the user's *wait*.  The kernel-side
cluster changes its state in the caller's thread, under the lock the live
network's thread needs; an interrupt landing in the middle left the lock held
(the live thread then waited for ever, and ``close()`` with it) or a message
half sent (the live thread died on it).  An interrupt landing in a future's
``__del__`` was worse still: Python ignores exceptions there, so the cell went
on running and the future's release was lost.

So a change of state is *shielded*: an interrupt that arrives during it is noted
and raised when the change is whole — when the outermost shielded section ends,
when a call starts to wait (waiting is what a user interrupts; :func:`opened`),
or between two deliveries of a long stepped wait (:func:`check`).  User code the
cluster runs (a task run inline) is open to interrupts too.  One that lands in a
future's finalizer lets it finish and lands again just after; so does one that lands in any
other place where Python ignores exceptions (a weak reference's callback, a ``__del__`` not
marked here): Python's hook for ignored exceptions sends it again.

Only the main thread receives interrupts, so everything here is for it alone (no
lock): another thread's calls are not shielded.  The handler wraps whatever
handler was installed (ipykernel installs Python's own for each cell) and is
installed at the first shielded call that finds it missing.
"""

from __future__ import annotations

import _signal  # signal's C functions: signal.signal / getsignal convert enums, at 2 µs a call
import _thread
import signal
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

_MAIN = threading.main_thread().ident
_get_ident = _thread.get_ident
_getsignal = _signal.getsignal
_SIGINT = signal.SIGINT.value

#: Shielded sections the main thread is in.
_depth = 0
#: Whether an interrupt may be raised where it lands (a wait, user code), inside a section.
_open = False
#: An interrupt arrived inside a section and waits to be raised.  Public so that the
#: driver's loops test it before calling :func:`check` (a flag read, not a call, per
#: delivery); only this module sets it.
pending = False
#: The handler ours wraps (Python's ``default_int_handler`` in a kernel's cell).
_previous: Callable[[int, Any], Any] | None = None
#: Code that Python runs as a finalizer: an exception raised there is ignored, not raised.
_FINALIZERS: set[CodeType] = set()


def _handler(signum: int, frame: FrameType | None) -> None:
    """SIGINT: raise it now (the previous handler), or note it for when the state is whole."""
    global pending, _open
    if _depth and not _open:
        pending = True
        return
    if frame is not None and (frame.f_lineno is None or (
            not _depth and _FINALIZERS and _in_finalizer(frame))):
        # Land again, sent from another thread: sent from here it would land here at once.
        # On an instruction without a line (CPython 3.11 gives a loop's jump back none when
        # the loop ends in an ``if``), raised here, it would leave a traceback IPython
        # cannot show ("Unexpected exception formatting exception", not KeyboardInterrupt).
        _thread.start_new_thread(_send_again, ())
        return
    if _depth:
        _open = False  # raised here: a second interrupt waits until the first has unwound
    previous = _previous
    if previous is not None:
        previous(signum, frame)


def _send_again() -> None:
    """SIGINT to the main thread, a real one: it also ends a wait the main thread is blocked in
    (``interrupt_main`` only sets a flag, read when the wait is over)."""
    if callable(_getsignal(_SIGINT)):  # not if it is now ignored (a kernel between cells)
        signal.pthread_kill(_MAIN, _SIGINT)


def _unraisable(unraisable: Any) -> None:
    """``sys.unraisablehook``: an interrupt Python ignored where it landed — in a weak
    reference's callback, a ``__del__``, a collector callback — lands again just after, sent
    from another thread; else the cell ran on as if ■ had not been pressed (an interrupted
    ``%%explore`` went on until its helper failed).  Any other ignored exception goes to the
    hook found here."""
    if (unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt)
            and _get_ident() == _MAIN):
        _thread.start_new_thread(_send_again, ())
        return
    _previous_unraisable(unraisable)


#: The hook ours wraps (Python's own, unless someone set another).
_previous_unraisable: Callable[[Any], Any] = sys.unraisablehook


def _in_finalizer(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code in _FINALIZERS:
            return True
        frame = frame.f_back
    return False


def finalizer(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``function`` (a ``__del__``) as one whose interrupts are raised after it returns."""
    _FINALIZERS.add(function.__code__)
    return function


def enter() -> int:
    """Begin a shielded section; returns the token :func:`leave` needs (-1: not shielded).

    Call it *before* taking the cluster's lock: an interrupt that lands before it
    leaves nothing half done.
    """
    global _depth, _open, _previous, _previous_unraisable
    if _get_ident() != _MAIN:
        return -1
    current = _getsignal(_SIGINT)
    if current is not _handler:
        if not callable(current):  # ignored, default or not set from Python: nothing raises
            return -1
        _previous = current
        _signal.signal(_SIGINT, _handler)
        # (Here, with the handler: ipykernel sets Python's own handler for each cell, so this
        # runs at each cell's first call, and costs the calls after it nothing.)
        if sys.unraisablehook is not _unraisable:
            _previous_unraisable = sys.unraisablehook
            sys.unraisablehook = _unraisable
    was_open = _open
    _open = False
    _depth += 1
    return int(was_open)


def leave(token: int) -> None:
    """End a shielded section: an interrupt noted in it is raised now, if the state is whole
    (no section left, or the one around is open to interrupts)."""
    global _depth, _open, pending
    if token < 0:
        return
    _depth -= 1
    _open = bool(token)
    if pending and (_open or not _depth):
        pending = False
        _raise()


def opened() -> int:
    """Open the current section to interrupts (a wait, user code); returns the token
    :func:`close` needs.  One that arrived before is raised here, the state being whole."""
    global _open, pending
    if _get_ident() != _MAIN:
        return -1
    if pending:
        pending = False
        _raise()
    was_open = _open
    _open = True
    return int(was_open)


def close(token: int) -> None:
    """End what :func:`opened` began."""
    global _open
    if token >= 0:
        _open = bool(token)


def check() -> None:
    """Raise an interrupt noted so far (the caller's state is whole: between two deliveries)."""
    global pending
    if pending and _get_ident() == _MAIN:
        pending = False
        _raise()


def defer() -> None:
    """Note an interrupt to raise when the current section ends (one that reached a task run
    inline, which fails with it meanwhile)."""
    global pending
    if not _depth:
        raise KeyboardInterrupt
    pending = True


def _raise() -> None:
    """The noted interrupt, as the handler we wrap would have raised it where it landed."""
    previous = _previous
    if previous is None:
        raise KeyboardInterrupt
    previous(_SIGINT, None)
