"""The bash process as asyncio sees it: its output piped into the capture, its exit
signalled, and everything it started killed.

:class:`Running` is what the bash tool drives; :class:`Spawned` is an unconfined command
(bash in a process group of its own), :class:`tools.jail.JailCommand` a sandboxed one."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import select
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from tools.capture import Capture, sanitize
from tools.reaper import REAPER

DRAIN_GRACE_S = 0.5
"""How long output may keep flowing after bash exits (background jobs holding the pipe)."""
TERM_GRACE_S = 0.5
"""How long a cancelled command gets to exit on SIGTERM before the group is SIGKILLed."""
REAP_WAIT_S = 2.0
LIVE_INTERVAL_S = 0.1
"""Output reaches a live listener at most this often."""


class LiveOutput:
    """A command's output for a person watching it run: decoded, cleaned and handed on at
    most every :data:`LIVE_INTERVAL_S`, never more than ``cap`` characters at a time (the
    rest of a burst is skipped with a marker; the result keeps it all)."""

    def __init__(
        self, listener: Callable[[str], None], loop: asyncio.AbstractEventLoop, cap: int
    ) -> None:
        self.listener = listener
        self.loop = loop
        self.cap = cap
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = bytearray()
        self._skipped = 0
        self._timer: asyncio.TimerHandle | None = None

    def feed(self, data: bytes) -> None:
        self._pending += data
        if len(self._pending) > 8 * self.cap:  # a flood: keep only what can be shown
            drop = len(self._pending) - 4 * self.cap
            del self._pending[:drop]
            self._skipped += drop
        if self._timer is None:
            self._timer = self.loop.call_later(LIVE_INTERVAL_S, self.flush)

    def flush(self) -> None:
        """Hand on what came since the last time (also called once the command ends)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        raw, self._pending = bytes(self._pending), bytearray()
        skipped, self._skipped = self._skipped, 0
        text = sanitize(self._decoder.decode(raw).encode())
        if len(text) > self.cap:
            skipped += len(text) - self.cap
            text = text[-self.cap :]
        if skipped:
            text = f"[… {skipped} bytes of output not shown …]\n" + text
        if text:
            self.listener(text)


class BashProcess(asyncio.SubprocessProtocol):
    """Feeds output chunks to the capture as they arrive and signals exit and end of output.

    The low-level protocol is used because ``Process.wait()`` also waits for the pipe to
    close, which a background job can hold open long after bash has exited.
    """

    def __init__(
        self, capture: Capture, loop: asyncio.AbstractEventLoop, live: LiveOutput | None = None
    ) -> None:
        self.capture = capture
        self.live = live
        self.exited: asyncio.Future[None] = loop.create_future()
        self.drained: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.capture.feed(data)
        if self.live is not None:
            self.live.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.drained.done():
            self.drained.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class OutputPipe(asyncio.Protocol):
    """The read end of a command's output pipe: chunks to the capture (and a live
    listener) as they come; :attr:`drained` once every writer closed it."""

    def __init__(
        self, capture: Capture, loop: asyncio.AbstractEventLoop, live: LiveOutput | None
    ) -> None:
        self.capture = capture
        self.live = live
        self.drained: asyncio.Future[None] = loop.create_future()

    def data_received(self, data: bytes) -> None:
        self.capture.feed(data)
        if self.live is not None:
            self.live.feed(data)

    def eof_received(self) -> bool | None:
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.drained.done():
            self.drained.set_result(None)


class Running(Protocol):
    """A started command. ``exited``: its process ended (or was killed); ``drained``:
    nothing holds its output pipe any more."""

    exited: asyncio.Future[None]
    drained: asyncio.Future[None]

    @property
    def returncode(self) -> int | None:
        """Exit code, -N when signal N killed it; None when unknown (killed with others)."""
        ...

    @property
    def lost(self) -> str | None:
        """Why the command's end is unknown when something other than the tool killed it
        (the model is told); None normally."""
        ...

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the command's process group."""
        ...

    def kill(self) -> None:
        """SIGKILL everything the command started."""
        ...

    def close(self) -> None:
        """Let go of its pipes (after a kill or its end)."""
        ...


class Spawned:
    """An unconfined command: bash leading a process group of its own, tracked by the
    watchdog while it runs."""

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: BashProcess) -> None:
        self._transport = transport
        self.pgid = transport.get_pid()
        self.exited = protocol.exited
        self.drained = protocol.drained
        REAPER.track(self.pgid)

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode()

    @property
    def lost(self) -> str | None:
        return None

    def signal(self, sig: int) -> None:
        killpg(self.pgid, sig)

    def kill(self) -> None:
        killpg(self.pgid, signal.SIGKILL)

    def close(self) -> None:
        self._transport.close()
        REAPER.untrack(self.pgid)


def command_environment(hidden: frozenset[str], cwd: Path) -> dict[str, str]:
    """A command's environment: reefline's without the ``hidden`` variables (the API keys),
    in ``cwd``, with pagers and prompts off (nobody can answer them)."""
    return {
        **{k: v for k, v in os.environ.items() if k not in hidden},
        "PWD": str(cwd),
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "TERM": "dumb",
        "GIT_TERMINAL_PROMPT": "0",
        "DEBIAN_FRONTEND": "noninteractive",
    }


async def spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    capture: Capture,
    live: LiveOutput | None,
) -> Spawned:
    """Start ``argv`` unconfined in ``cwd`` with exactly ``env``, stdin on /dev/null and
    stderr merged into stdout, in a session (and process group) of its own.

    Raises:
        OSError: it could not be started.
    """
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: BashProcess(capture, loop, live),
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )
    return Spawned(transport, protocol)


def killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def settle(*futures: asyncio.Future[None], timeout: float) -> bool:
    """Wait until all futures are done or ``timeout`` passes, without cancelling them."""
    _, pending = await asyncio.wait(futures, timeout=timeout)
    return not pending


def only_child(pid: int) -> int | None:
    """A pidfd of process ``pid``'s only child (a jail's PID 1 under its bwrap), or None
    when there is not exactly one or it cannot be had (no pidfd on this kernel, no
    ``children`` file)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            [child] = [int(c) for c in f.read().split()]
        fd = os.pidfd_open(child)
    except (OSError, ValueError):
        return None
    # The number could have been given to another process before the pidfd was opened:
    # only the child of ``pid`` is held.
    try:
        with open(f"/proc/{child}/stat", "rb") as f:
            parent = int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        parent = None
    if parent != pid:
        os.close(fd)
        return None
    return fd


def wait_exited(pidfd: int, timeout: float) -> bool:
    """Wait until the process held by ``pidfd`` has exited, at most ``timeout`` seconds;
    whether it has."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    try:
        return bool(poller.poll(int(timeout * 1000)))
    except OSError:
        return False
