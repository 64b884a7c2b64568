"""A long-lived jail: one bubblewrap per bash tool, its PID 1 a small runner that starts
each sandboxed command.

Why: bwrap's namespaces and mounts cost ~5 ms, several times a bare ``bash -c true``; paid
once per jail instead of once per command, a sandboxed command costs about what an
unconfined one does (a ``posix_spawn`` in the jail, a pipe and two socket messages).

The cost model, then: the first sandboxed command, and the first after the jail was killed
or its shape (:class:`~tools.bwrap.Jail`: mode, network, workspace, spill folder, the
secrets that exist now) changed, starts a jail (bwrap plus a Python interpreter, tens of
milliseconds); every other one reuses it.

The rules that keep it as safe as a jail per command:

- What a command needs comes over the socket (:mod:`tools.jail_runner`): its argv, its
  working directory and its environment, never a command line (``/proc/<pid>/cmdline`` is
  readable by every user). The jail's own environment is the allow-list too.
- A command that ends normally leaves the jail for the next one. A timeout, a cancel, a
  command whose background jobs still hold the output pipe: the whole jail is killed (its
  PID 1 dying makes the kernel kill every process of its namespace, those that left their
  group with ``setsid`` too) and the next command starts a fresh one. So does a jail that
  died on its own (its command is told).
- The jail runs in a process group the watchdog (:mod:`tools.reaper`) tracks for its whole
  life, and bwrap dies with the thread that started it (``--die-with-parent``): a SIGKILLed
  reefline leaves no jail behind. :meth:`Jails.close` kills it when the tool is done.

A command's processes that outlive it with their output redirected (a server started with
``&``) stay in the jail until it is killed or closed; the jail's private ``/tmp`` lasts as
long and is shared by the commands it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import marshal
import os
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.bwrap import Jail
from tools.capture import Capture
from tools.process import LiveOutput, OutputPipe, only_child, wait_exited
from tools.reaper import REAPER
from tools.spill import SubFolder

START_TIMEOUT_S = 10.0
"""How long a jail may take to say it is ready."""
KILL_WAIT_S = 1.0
GONE_WAIT_S = 5.0
"""How long a kill waits for the last process of the jail to be gone."""
LOST = (
    "[the sandbox stopped unexpectedly (its first process was killed from outside, or "
    "bubblewrap failed): the command may not have finished, and everything it started is "
    "gone; the next command starts a new sandbox]"
)
"""What a command's output ends with when its jail died under it."""

_HEADER = struct.Struct(">I")


class JailGone(Exception):
    """The jail was found dead before the command was handed over: nothing ran."""


@functools.cache
def _runner_source() -> bytes:
    return Path(__file__).with_name("jail_runner.py").read_bytes()


class LiveJail:
    """One running bwrap of ``shape`` whose PID 1 is the runner; one command at a time."""

    def __init__(self, shape: Jail, proc: subprocess.Popen[bytes], sock: socket.socket) -> None:
        self.shape = shape
        self.command: JailCommand | None = None
        """The command running in it, if any."""
        self.busy = False
        """Taken for a command, from the moment it is chosen until the command is closed:
        one at a time."""
        self.disposable = False
        """Killed once its command ends (a second jail for a command run at the same time)."""
        self._proc = proc
        self._sock = sock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._buffer = b""
        self._dead = False
        self._tracked = True
        self._init: int | None = None
        """A pidfd of the jail's PID 1 (the runner), once it is up: readable only when
        every process of the jail's PID namespace is gone (see :meth:`kill`)."""

    @property
    def alive(self) -> bool:
        return not self._dead and self._proc.poll() is None

    @classmethod
    async def start(cls, shape: Jail, env: Mapping[str, str], records: SubFolder) -> LiveJail:
        """Start a jail of ``shape`` whose own environment is ``env`` reduced to the
        allow-list, and wait until its runner is ready.

        Raises:
            OSError: bwrap could not be started or the jail did not come up; the message
                says what bwrap said.
        """
        records.fd()  # the folder exists before it is bound
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        program = [sys.executable, "-I", "-S", "-", str(theirs.fileno())]
        try:
            proc = subprocess.Popen(
                shape.argv(program),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=Jail.environment(env),
                pass_fds=[theirs.fileno()],
                start_new_session=True,  # the group the watchdog and a kill reach
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        REAPER.track(proc.pid)  # forgotten in kill()
        jail = cls(shape, proc, ours)
        assert proc.stdin is not None and proc.stderr is not None
        try:
            with contextlib.suppress(OSError):  # a bwrap that failed at once is read below
                proc.stdin.write(_runner_source())
            with contextlib.suppress(OSError):
                proc.stdin.close()
            ours.setblocking(False)
            try:
                line = await asyncio.wait_for(jail._line(), START_TIMEOUT_S)
            except TimeoutError:
                line = b""
            if line != b"ready":
                jail.kill()
                said = proc.stderr.read().decode(errors="replace").strip()
                raise OSError(said or f"no answer from it within {START_TIMEOUT_S:g}s")
            jail._init = only_child(proc.pid)
        except BaseException:
            jail.kill()
            raise
        finally:
            proc.stderr.close()  # the runner has nothing to say there once it is up
        return jail

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        capture: Capture,
        live: LiveOutput | None,
    ) -> JailCommand:
        """Start ``argv`` in the jail in ``cwd`` with exactly ``env``.

        Raises:
            JailGone: the runner is gone; nothing ran.
        """
        loop = self._loop = asyncio.get_running_loop()
        read_fd, write_fd = os.pipe()
        reader = open(read_fd, "rb", buffering=0)  # noqa: SIM115 - the transport closes it
        try:
            transport, pipe = await loop.connect_read_pipe(
                lambda: OutputPipe(capture, loop, live), reader
            )
        except BaseException:
            reader.close()
            os.close(write_fd)
            raise
        data = marshal.dumps({"op": "run", "argv": list(argv), "cwd": str(cwd), "env": dict(env)})
        try:
            socket.send_fds(self._sock, [_HEADER.pack(len(data))], [write_fd])
            await loop.sock_sendall(self._sock, data)
        except OSError as exc:
            transport.close()
            self._dead = True
            raise JailGone(str(exc)) from exc
        finally:
            os.close(write_fd)
        self.command = JailCommand(self, transport, pipe, loop)
        return self.command

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the running command's process group (the runner relays it)."""
        data = marshal.dumps({"op": "signal", "signal": int(sig)})
        with contextlib.suppress(OSError):
            self._sock.send(_HEADER.pack(len(data)) + data)

    def kill(self) -> None:
        """SIGKILL the jail's process group (bwrap and the runner, so the whole PID
        namespace) and reap bwrap. Idempotent."""
        self._dead = True
        # Once bwrap is reaped its number may be another process's: never signal it then.
        # (Nothing of the jail outlives bwrap: --die-with-parent kills its PID 1.)
        if self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(KILL_WAIT_S)
        init, self._init = self._init, None
        if init is not None:
            # bwrap reaped is not yet the jail gone: its PID 1 ends only once the kernel has
            # killed and released every process of its namespace, so what a command left
            # running cannot still be at work when the caller goes on (a restore).
            wait_exited(init, GONE_WAIT_S)
            os.close(init)
        if self._tracked:
            self._tracked = False
            REAPER.untrack(self._proc.pid)
        if self.command is not None:
            self.command.stopped()
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed() and self._sock.fileno() >= 0:
            # A socket closed under a pending read would leave its number in the loop's
            # selector, where the next socket to get that number would meet it.
            with contextlib.suppress(Exception):
                loop.remove_reader(self._sock.fileno())
                loop.remove_writer(self._sock.fileno())
        self._sock.close()

    async def exit_status(self) -> int | None:
        """The wait status the runner reports for the running command; None when the
        runner is gone (the jail is then dead)."""
        line = await self._line()
        if line.startswith(b"exit ") and line[5:].isdigit():
            return int(line[5:])
        self._dead = True
        return None

    async def _line(self) -> bytes:
        """The runner's next line (without its newline); b"" when the socket closed."""
        loop = self._loop = asyncio.get_running_loop()
        while b"\n" not in self._buffer:
            try:
                chunk = await loop.sock_recv(self._sock, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                return b""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


class JailCommand:
    """One command running in a :class:`LiveJail`, as the bash tool drives it (the same
    surface as :class:`tools.process.Spawned`): killing it kills the jail."""

    def __init__(
        self,
        jail: LiveJail,
        transport: asyncio.ReadTransport,
        pipe: OutputPipe,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.jail = jail
        self.drained = pipe.drained
        self.exited: asyncio.Future[None] = loop.create_future()
        self.status: int | None = None
        self._killed = False
        self._transport = transport
        self._watch = loop.create_task(self._wait())

    async def _wait(self) -> None:
        try:
            self.status = await self.jail.exit_status()
        finally:
            if not self.exited.done():
                self.exited.set_result(None)

    @property
    def returncode(self) -> int | None:
        """The command's exit code, -N when signal N killed it; None while it runs or
        when it was killed with the jail."""
        return None if self.status is None else os.waitstatus_to_exitcode(self.status)

    @property
    def lost(self) -> str | None:
        """What to tell the model when the jail died under the command (None: it did not)."""
        if self.exited.done() and self.status is None and not self._killed:
            return LOST
        return None

    def signal(self, sig: int) -> None:
        self.jail.signal(sig)

    def kill(self) -> None:
        """Kill everything the command started: the whole jail."""
        self.jail.kill()

    def stopped(self) -> None:
        """Its jail was killed (by the tool: not news for the model, unlike a jail that
        died on its own first)."""
        self._watch.cancel()
        if not self.exited.done():
            self._killed = True
            self.exited.set_result(None)

    def close(self) -> None:
        """Release the pipe; a jail whose command did not report its end is killed (its
        state is unknown), one whose command ended is free for the next."""
        if self.status is None or self.jail.disposable:
            self.jail.kill()
        self._watch.cancel()
        self._transport.close()
        self.jail.command = None
        self.jail.busy = False


class Jails:
    """The jail of one bash tool: started on its first sandboxed command, reused while the
    shape stays the same, replaced when it changes or the jail died; ``records`` is the
    folder its commands record their directories in."""

    def __init__(self, records: SubFolder) -> None:
        self.records = records
        self._jail: LiveJail | None = None
        self._starting = False

    async def run(
        self,
        shape: Jail,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        capture: Capture,
        live: LiveOutput | None,
    ) -> JailCommand:
        """Start ``argv`` in a jail of ``shape`` (see :meth:`LiveJail.run`).

        Raises:
            OSError: no jail could be started.
        """
        for _ in range(2):  # a jail found dead when handed the command is replaced once
            jail = await self._jail_for(shape, env)
            try:
                return await jail.run(argv, cwd=cwd, env=env, capture=capture, live=live)
            except BaseException as exc:
                jail.busy = False
                if not isinstance(exc, JailGone):
                    raise
                jail.kill()
        raise OSError("the sandbox stopped as soon as it started")

    async def _jail_for(self, shape: Jail, env: Mapping[str, str]) -> LiveJail:
        """A jail of ``shape``, taken (``busy``) for the caller's command."""
        jail = self._jail
        if self._starting or (jail is not None and jail.busy):
            # One command at a time in a jail; a second one at once (never from the agent,
            # which runs calls in turn) gets a jail of its own, killed after it.
            jail = await LiveJail.start(shape, env, self.records)
            jail.disposable = True
        elif jail is None or jail.shape != shape or not jail.alive:
            self.close()
            self._starting = True
            try:
                jail = self._jail = await LiveJail.start(shape, env, self.records)
            finally:
                self._starting = False
        jail.busy = True
        return jail

    def close(self) -> bool:
        """Kill the jail (and everything still running in it), returning once every process
        of it is gone; remove ``records``. Whether a jail was up."""
        jail, self._jail = self._jail, None
        up = jail is not None and jail.alive
        if jail is not None:
            jail.kill()
        self.records.delete()
        return up
