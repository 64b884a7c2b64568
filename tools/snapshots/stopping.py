"""Stopping reefline's own long work on the workspace (a snapshot's git calls, hashing) when
the step that asked for it is cancelled (Ctrl+C, SIGTERM).

The work runs in a thread (it never holds up the event loop), and a thread cannot be
cancelled: the awaiting side sets a :class:`Stop`, which kills the git processes started
under it and makes the hashing loop give up at its next chunk, so the thread ends within
moments and the process can exit. The thread names its :class:`Stop` once
(:func:`stoppable`); the git and hashing code asks :func:`current` rather than passing it
through every call.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Iterator


class Stopped(Exception):
    """The work was stopped on request; whatever it was doing is left undone (not an error
    to report: the step that wanted it was cancelled)."""


class Stop:
    """A request to stop, set from any thread; thread-safe."""

    def __init__(self) -> None:
        self._set = threading.Event()
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._gentle: set[subprocess.Popen[bytes]] = set()

    def set(self) -> None:
        """Stop now: kill every process started under this stop that still runs."""
        with self._lock:
            self._set.set()
            running = list(self._running)
        for proc in running:
            _end(proc, proc in self._gentle)

    def is_set(self) -> bool:
        return self._set.is_set()

    def check(self) -> None:
        """Raises :class:`Stopped` when set."""
        if self._set.is_set():
            raise Stopped("stopped on request")

    def adopt(self, proc: subprocess.Popen[bytes], *, gentle: bool = False) -> None:
        """Kill ``proc`` on :meth:`set` (at once when already set) until :meth:`release`;
        ``gentle``: ask it to end (SIGTERM) instead, for a process of ours that then cleans
        up after itself."""
        with self._lock:
            if not self._set.is_set():
                self._running.add(proc)
                if gentle:
                    self._gentle.add(proc)
                return
        _end(proc, gentle)

    def release(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._running.discard(proc)
            self._gentle.discard(proc)


def _end(proc: subprocess.Popen[bytes], gentle: bool) -> None:
    with contextlib.suppress(OSError):
        if gentle:
            proc.terminate()
        else:
            proc.kill()


_here = threading.local()


@contextlib.contextmanager
def stoppable(stop: Stop) -> Iterator[None]:
    """Run the enclosed work of this thread under ``stop``."""
    previous: Stop | None = getattr(_here, "stop", None)
    _here.stop = stop
    try:
        yield
    finally:
        _here.stop = previous


def current() -> Stop | None:
    """The stop this thread's work runs under (None: it cannot be stopped)."""
    stop: Stop | None = getattr(_here, "stop", None)
    return stop
