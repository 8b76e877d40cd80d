"""Sync after writes: with ``sync_after_writes`` set, ``serve`` sends a burst of writes to
the git remote once the vault has been quiet that many seconds (one sync per burst, not
one per write).

Every change the service reports (a tool's write, a person's edit the watcher committed)
restarts the countdown; the changes a sync itself brings in do not (that would sync
forever). A failed sync is logged and the next write tries again; the scheduled sync
(``sync_interval``) still runs beside it for changes that arrive from the remote alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from . import syncing
from .errors import MemvaultError
from .models import ChangeEvent

if TYPE_CHECKING:
    from .service import MemoryService

log = logging.getLogger(__name__)


class Timer(Protocol):
    def start(self) -> None: ...
    def cancel(self) -> None: ...


TimerFactory = Callable[[float, Callable[[], None]], Timer]


def _thread_timer(delay: float, fire: Callable[[], None]) -> Timer:
    timer = threading.Timer(delay, fire)
    timer.daemon = True
    timer.name = "memvault-sync-after-writes"
    return timer


class AfterWrites:
    """Debounced sync of the vault's writes; ``stop`` cancels a pending one."""

    def __init__(
        self,
        service: MemoryService,
        delay: float,
        sync: Callable[[MemoryService], Any] = syncing.sync,
        timer: TimerFactory = _thread_timer,
    ) -> None:
        self.service, self.delay = service, delay
        self._sync, self._timer_factory = sync, timer
        self._pending: Timer | None = None
        self._running: threading.Thread | None = None  # the thread of a sync under way
        self._lock = threading.Lock()
        self._stopped = False
        service.listeners.append(self.changed)

    def changed(self, event: ChangeEvent) -> None:
        """A change listener: (re)start the countdown unless a sync brought this change."""
        if syncing.running() or not (event.changed or event.added or event.removed):
            return
        with self._lock:
            if self._stopped:
                return
            if self._pending is not None:
                self._pending.cancel()
            self._pending = self._timer_factory(self.delay, self._fire)
            self._pending.start()

    def _fire(self) -> None:
        with self._lock:
            self._pending = None
            if self._stopped:
                return
            self._running = threading.current_thread()
        try:
            result = self._sync(self.service)
            log.info("sync after writes: %s", getattr(result, "error", None) or "done")
        except MemvaultError as exc:  # no remote yet, a merge to finish by hand
            log.warning("sync after writes failed (tried again after the next write): %s", exc)
        except Exception:  # the server must outlive any sync
            log.exception("sync after writes failed")
        finally:
            with self._lock:
                self._running = None

    def stop(self, timeout: float = 60.0) -> None:
        """No new countdown; a pending one is cancelled; a sync under way is waited for
        (so the server never exits in the middle of a rebase or merge)."""
        with self._lock:
            self._stopped = True
            if self._pending is not None:
                self._pending.cancel()
                self._pending = None
            running = self._running
        if self.changed in self.service.listeners:
            self.service.listeners.remove(self.changed)
        if running is not None and running is not threading.current_thread():
            running.join(timeout)
