"""Processes a test learnt of (read from a file a command wrote, found under the CLI it
started) and may have to kill: held by a pidfd from the moment they are known.

A PID is only a number: once its process is gone and reaped (by init, for an orphan), the
system gives it to another, maybe a pytest worker or another test's command. A signal sent
by number later could reach that process. A pidfd names the process itself: a signal sent
through it reaches that process or none, and it tells when that process has exited.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time


class Held:
    """One process, by a pidfd opened when its PID was learnt (a process already gone by
    then is held as gone)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        try:
            self._fd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:
            self._fd = None

    def alive(self) -> bool:
        """Whether it has not exited (a zombie has: its parent may never reap it)."""
        if self._fd is None:
            return False
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        return not poller.poll(0)

    def kill(self) -> None:
        """SIGKILL it, if it is still there."""
        if self._fd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._fd, signal.SIGKILL)

    def kill_group(self) -> None:
        """SIGKILL the process group it leads (what it started there too), then it. Only
        while it lives, which keeps its number, the group's, from being anyone else's; and
        never this process's own group (a process started without a group of its own is in
        the test's, with pytest and its workers)."""
        if self.alive() and self.pid != os.getpgrp():
            with contextlib.suppress(OSError):
                if os.getpgid(self.pid) == self.pid:
                    os.killpg(self.pid, signal.SIGKILL)
        self.kill()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


def hold(pids: list[int]) -> list[Held]:
    return [Held(pid) for pid in pids]


def kill_all(held: list[Held]) -> None:
    """SIGKILL each of ``held`` still running."""
    for process in held:
        process.kill()


def still_alive(held: list[Held], within: float = 20.0) -> list[int]:
    """PIDs of ``held`` still running once they have all exited or ``within`` has passed:
    ``within`` only bounds a failure (processes killed a moment ago take a moment to go,
    longer on a loaded machine)."""
    deadline = time.monotonic() + within
    while (left := [h.pid for h in held if h.alive()]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left
