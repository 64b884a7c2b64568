"""What bash left running dies with reefline, however reefline dies (SIGKILL included).

Each command runs in a process group of its own; a cancelled or timed-out command has its
group killed by the bash tool. If reefline itself is killed, nothing would be left to do
that: a one-line shell loop would go on forever. So a small watchdog process, started on the
first command and not part of any terminal's process group, keeps the list of running groups
(reefline tells it ``+ pgid start`` / ``- pgid`` on a pipe only reefline holds) and, when
that pipe closes — reefline exited or died — kills every group still listed whose leader has
not been replaced by another process under the same number (numbers are reused). A
sandbox (:mod:`tools.jail`) is one such group for as long as it lives, led by its bwrap:
killing it kills the sandbox's PID 1, so everything inside.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading

_WATCHDOG = """
import os, signal, sys
def started(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None
groups = {}
for line in sys.stdin:
    op, _, rest = line.strip().partition(" ")
    pgid, _, start = rest.partition(" ")
    if pgid.isdigit():
        if op == "+":
            groups[int(pgid)] = start
        else:
            groups.pop(int(pgid), None)
for pgid, start in groups.items():
    now = started(pgid)
    if now is not None and now != start:
        # Another process has the number: ours is gone with all its group (a group's number
        # is not given out while a member lives). With no start time known (the leader had
        # gone before it was tracked) a live process under the number is such a one too.
        continue
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


class Reaper:
    """The watchdog for this process's command groups (one per process: :data:`REAPER`)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def track(self, pgid: int) -> None:
        """``pgid`` is running: kill it if reefline dies. Its leader's start time goes
        along, so a number the system has since given to another process is left alone."""
        self._send(f"+ {pgid} {_start_time(pgid) or ''}\n")

    def untrack(self, pgid: int) -> None:
        """``pgid`` is done (or was killed): forget it."""
        self._send(f"- {pgid}\n")

    def _send(self, line: str) -> None:
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                try:
                    proc = self._proc = subprocess.Popen(
                        [sys.executable, "-I", "-S", "-c", _WATCHDOG],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,  # Ctrl+C in the terminal does not reach it
                    )
                except OSError:
                    return  # no watchdog: commands are still killed on cancel and timeout
            assert proc.stdin is not None
            with contextlib.suppress(OSError):
                proc.stdin.write(line.encode())
                proc.stdin.flush()


REAPER = Reaper()


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, /proc/PID/stat field 22)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None
