"""A throttled worker thread shared by the live views.

Views subscribe to the trace with a callback that only wakes the pump; the
pump calls its owner's ``_apply_pending()`` at most ``rate`` times a second,
counting the update's own time.  It holds its owner weakly, so a view nobody
references goes away with its thread; an owner whose update raises is told
once (``_failed``) and the pump stops — a broken view never breaks the cluster.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any


class Pump:
    def __init__(self, owner: Any, rate: float, name: str):
        self.owner = weakref.ref(owner)
        self.interval = 1.0 / rate
        self.wake = threading.Event()
        self.stop_event = threading.Event()
        self.updates = 0
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            if self.stop_event.is_set():
                return
            owner = self.owner()
            if owner is None:
                return
            started = time.perf_counter()
            try:
                owner._apply_pending()
            except Exception as exc:  # noqa: BLE001 - reported once; the cluster goes on
                owner._failed(exc)
                return
            self.updates += 1
            del owner
            if self.stop_event.wait(max(0.0, self.interval - (time.perf_counter() - started))):
                return

    def stop(self) -> None:
        self.stop_event.set()
        self.wake.set()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=10)
