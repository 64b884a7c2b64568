"""The program that runs inside a long-lived jail (:mod:`tools.jail`) as its PID 1.

Run as ``python -I -S - FD`` with this file's text on stdin (no path needs to be visible in
the jail, and the command line stays short), it imports nothing of reefline: only the
standard library. ``FD`` is its end of a unix socket pair whose other end the host holds.

The host sends frames: a 4-byte big-endian length, then that many bytes of JSON.

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

import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys
from typing import Any

_HEADER = struct.Struct(">I")


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
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
        with contextlib.suppress(OSError):
            os.write(out, f"reefline sandbox: cannot run the command: {exc}\n".encode())
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
    sock = socket.socket(fileno=fd)
    os.set_inheritable(fd, False)  # a command must never hold the control socket
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    child = 0
    data = b""
    fds: list[int] = []
    sock.sendall(b"ready\n")
    while True:
        readable, _, _ = select.select([sock.fileno(), wake_r], [], [])
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
                sock.sendall(f"exit {status}\n".encode())
        if sock.fileno() not in readable:
            continue
        chunk, ancdata, _, _ = sock.recvmsg(1 << 16, socket.CMSG_SPACE(16), socket.MSG_CMSG_CLOEXEC)
        if not chunk:
            os._exit(0)  # the host closed its end: the jail ends with this PID 1
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                fds += struct.unpack(f"{usable // 4}i", payload[:usable])
        data += chunk
        while len(data) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(data)
            if len(data) < _HEADER.size + size:
                break
            frame = json.loads(data[_HEADER.size : _HEADER.size + size])
            data = data[_HEADER.size + size :]
            if frame["op"] == "run" and fds:
                child = _start(frame, fds.pop(0)) or 0
                if not child:
                    sock.sendall(b"exit %d\n" % (127 << 8))  # as a shell says "not found"
            elif frame["op"] == "signal" and child:
                with contextlib.suppress(OSError):
                    os.killpg(child, frame["signal"])


if __name__ == "__main__":
    main(int(sys.argv[1]))
