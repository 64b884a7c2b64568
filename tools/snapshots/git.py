"""Running ``git`` against a shadow repository, and nothing of the user's.

Each call gets ``GIT_DIR`` (the shadow repository) and ``GIT_WORK_TREE`` (the working
directory) and an environment with no other ``GIT_*`` variable, no system or global config
(a user's filters, hooks or ``core.fsmonitor`` never run on reefline's behalf) and literal
pathspecs (a file named ``*`` is that file). A call made under a
:class:`~tools.snapshots.stopping.Stop` is killed when it is set, and raises
:class:`~tools.snapshots.stopping.Stopped`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from tools.snapshots import stopping

GIT_TIMEOUT_S = 120.0
"""Longest a single git call may take (the first snapshot of a large tree is the slow one)."""


class GitError(RuntimeError):
    """A git call failed; the message says which and what git printed."""


def git_found() -> str | None:
    """The ``git`` on ``PATH``, or None."""
    return shutil.which("git")


class Git:
    """``git`` pointed at ``git_dir`` with ``work_tree`` as its working tree."""

    def __init__(self, git_dir: Path, work_tree: Path) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(
            GIT_DIR=str(git_dir),
            GIT_WORK_TREE=str(work_tree),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_LITERAL_PATHSPECS="1",
            GIT_TERMINAL_PROMPT="0",
            GIT_OPTIONAL_LOCKS="0",
            LC_ALL="C",
            # glibc hands memory back after each object git compresses (a brk down and up
            # again per file): kept instead, storing 100,000 files takes a quarter the time.
            MALLOC_TOP_PAD_=str(32 << 20),
            MALLOC_TRIM_THRESHOLD_=str(256 << 20),
        )
        self.env = env
        self.invocations = 0
        """How many git processes were started (what a skipped scan saves shows here)."""

    def run(self, args: Sequence[str], *, stdin: bytes | None = None, check: bool = True) -> bytes:
        """Run ``git args`` in the working tree; its standard output.

        Raises:
            GitError: git could not be run, or (``check``) exited non-zero.
        """
        return self.run_together([args], stdin=stdin, check=check)[0]

    def run_together(
        self, calls: Sequence[Sequence[str]], *, stdin: bytes | None = None, check: bool = True
    ) -> list[bytes]:
        """Run each of ``calls`` (``git`` arguments) at the same time, each given ``stdin``;
        their standard outputs, in order. Only for calls that read the repository, or one
        writer with readers that do not mind which index they see.

        Raises:
            GitError: a call could not be run, or (``check``) exited non-zero.
            tools.snapshots.stopping.Stopped: this thread's stop was set (the calls are
                killed).
        """
        stop = stopping.current()
        started: list[tuple[Sequence[str], subprocess.Popen[bytes]]] = []
        try:
            for args in calls:
                if stop is not None:
                    stop.check()
                proc = self._start(args)
                started.append((args, proc))
                if stop is not None:
                    stop.adopt(proc)
            outs = [self._finish(args, proc, stdin, check, stop) for args, proc in started]
            if stop is not None:
                stop.check()
            return outs
        finally:
            for _, proc in started:
                if stop is not None:
                    stop.release(proc)
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()

    def _start(self, args: Sequence[str]) -> subprocess.Popen[bytes]:
        return self.popen(args)

    def popen(
        self,
        args: Sequence[str],
        *,
        stdin: int | IO[bytes] = subprocess.PIPE,
        stdout: int | IO[bytes] = subprocess.PIPE,
        stderr: int | IO[bytes] = subprocess.PIPE,
        bufsize: int = -1,
    ) -> subprocess.Popen[bytes]:
        """``git args`` started on this repository and working tree, not waited for (the
        one place a git process of the shadow repository is started; a long one is the
        caller's to adopt into its :class:`~tools.snapshots.stopping.Stop`).

        Raises:
            GitError: git could not be started.
        """
        self.invocations += 1
        try:
            return subprocess.Popen(
                ["git", *args],
                bufsize=bufsize,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=self.work_tree,
                env=self.env,
            )
        except OSError as exc:
            raise GitError(f"git {args[0]} could not run: {exc}") from exc

    def _finish(
        self,
        args: Sequence[str],
        proc: subprocess.Popen[bytes],
        stdin: bytes | None,
        check: bool,
        stop: stopping.Stop | None,
    ) -> bytes:
        # The others run on meanwhile: each writes to its own pipes, none waits for another.
        try:
            out, err = proc.communicate(stdin if stdin is not None else b"", GIT_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            if stop is not None:
                stop.check()  # killed by the stop: say so, not that git failed
            raise GitError(f"git {args[0]} could not run: {exc}") from exc
        if stop is not None:
            stop.check()
        if check and proc.returncode != 0:
            said = err.decode(errors="replace").strip().splitlines()
            raise GitError(f"git {args[0]} failed: {said[-1] if said else proc.returncode}")
        return out
