"""The program that runs inside a long-lived jail (:mod:`tools.jail`) as its PID 1.

Run as ``python -I -S - FD`` with this file's text on stdin (no path needs to be visible in
the jail, and the command line stays short), it imports nothing of reefline and only
built-in modules of the standard library (``_socket``, not ``socket``: a jail's start waits
for this interpreter, and the pure-Python modules would double its start-up). ``FD`` is its
end of a unix socket pair whose other end the host holds.

The host sends frames: a 4-byte big-endian length, then that many bytes of a
:mod:`marshal`-ed dict (both ends run the same interpreter, :data:`sys.executable`).

- ``{"op": "run", "argv": [...], "cwd": "...", "env": {...}}`` comes with one file
  descriptor (SCM_RIGHTS on the frame's first bytes): the write end of the pipe the host
  reads the output from. The runner starts ``argv`` in ``cwd`` with exactly ``env`` (its
  ``PATH`` finds the program), in a session (so a process group) of its own, the pipe as
  its stdout and stderr and ``/dev/null`` as its stdin; then it closes its copy of the
  pipe, so only the command holds it. One command at a time.
- ``{"op": "signal", "signal": N}`` sends signal N to the running command's process group.

The runner answers with lines: ``ready`` once, at start, then ``exit STATUS`` (the raw wait
status) when a command ends, or at once, as exit code 127, when it could not be started. It
reaps every other process that ends in the jail (as PID 1 it inherits the orphans), and
exits when the host's end of the socket closes.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stub; signal imports enum (~7 ms)
import _socket
import marshal
import os
import select
import sys

TYPE_CHECKING = False  # typing alone would cost this interpreter's start-up several ms
if TYPE_CHECKING:
    from typing import Any

HEADER_SIZE = 4


def _start(frame: dict[str, Any], out: int) -> int | None:
    """Start the command of a ``run`` frame with ``out`` as its stdout and stderr; its PID,
    or None when it could not be started (said on ``out``). ``out`` is closed here."""
    argv: list[str] = frame["argv"]
    env: dict[str, str] = frame["env"]
    try:
        # posix_spawn (a vfork) costs half a fork of this interpreter; it cannot change
        # directory, so the runner does, and the child inherits it.
        os.chdir(frame["cwd"])
        return os.posix_spawn(
            _find(argv[0], env.get("PATH", os.defpath)),
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, out, 1),
                (os.POSIX_SPAWN_DUP2, out, 2),
            ],
            setsid=True,
            # Python ignores these; an ignored signal stays ignored across exec, and a
            # command must get the defaults (``yes | head`` ends on SIGPIPE, not an error).
            setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ),
        )
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
        try:  # noqa: SIM105 - contextlib would cost start-up time
            os.write(out, f"reefline sandbox: cannot run the command: {exc}\n".encode())
        except OSError:
            pass
        return None
    finally:
        os.close(out)


def _find(name: str, path: str) -> str:
    """``name`` looked up in the command's own ``PATH`` (posix_spawnp would use the
    runner's)."""
    if "/" in name:
        return name
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(f"{name}: not found in PATH")


def main(fd: int) -> None:
    sock = _socket.socket(fileno=fd)
    os.set_inheritable(fd, False)  # a command must never hold the control socket
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    _signal.set_wakeup_fd(wake_w)
    _signal.signal(_signal.SIGCHLD, lambda signum, frame: None)
    child = 0
    data = b""
    fds: list[int] = []
    sock.sendall(b"ready\n")
    while True:
        readable, _, _ = select.select([fd, wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
        while True:  # reap: the command's child, and any orphan of the jail
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == child:
                child = 0
                sock.sendall(b"exit %d\n" % status)
        if fd not in readable:
            continue
        chunk, ancdata, _, _ = sock.recvmsg(
            1 << 16, _socket.CMSG_SPACE(16), _socket.MSG_CMSG_CLOEXEC
        )
        if not chunk:
            os._exit(0)  # the host closed its end: the jail ends with this PID 1
        for level, kind, payload in ancdata:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                fds += [
                    int.from_bytes(payload[i : i + 4], sys.byteorder, signed=True)
                    for i in range(0, len(payload) - 3, 4)
                ]
        data += chunk
        while len(data) >= HEADER_SIZE:
            size = int.from_bytes(data[:HEADER_SIZE], "big")
            if len(data) < HEADER_SIZE + size:
                break
            frame = marshal.loads(data[HEADER_SIZE : HEADER_SIZE + size])
            data = data[HEADER_SIZE + size :]
            if frame["op"] == "run" and fds:
                child = _start(frame, fds.pop(0)) or 0
                if not child:
                    sock.sendall(b"exit %d\n" % (127 << 8))  # as a shell says "not found"
            elif frame["op"] == "signal" and child:
                try:  # noqa: SIM105
                    os.killpg(child, frame["signal"])
                except OSError:
                    pass


if __name__ == "__main__":
    main(int(sys.argv[1]))
