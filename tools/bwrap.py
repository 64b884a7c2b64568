"""A jail's shape: the ``bwrap`` command line that starts it and the environment it gets.

One jail serves many commands (:mod:`tools.jail` runs it and its PID 1); :class:`Jail` is
everything that shapes it, so two equal values are the same jail. See :mod:`tools.sandbox`
for what each mode means. The mounts, in the order they must be made:

1. the whole filesystem read-only (``--ro-bind / /``), a fresh ``/dev``, a ``/proc`` of its
   own PID namespace (no other process, so no other process's environment, is visible),
   a private ``/tmp``;
2. parents before children, so that nothing is covered by a mount made after it: what
   the mode exposes (the working directory, writable in ``workspace-write``; the spill
   folder, always read-only, so the model can read back a full output but never plant
   anything where reefline writes; the one folder the shell records its directory in,
   inside the spill folder, writable) and the secrets, each hidden behind an empty tmpfs
   (a folder) or ``/dev/null`` (a file) — a working directory of ``$HOME`` does not bring
   ``~/.ssh`` back, and a spill folder inside the hidden ``$REEFLINE_HOME`` stays
   reachable. Where the writable working directory holds one of those (reefline started
   in ``$HOME``), every folder on the way to it is bound onto itself: a mount point cannot
   be renamed or removed, so a command cannot swap ``~/.local`` for a tree of its own
   making where reefline looks for its home, its config or its spill folder;
3. every hiding tmpfs made read-only (a write there fails as anywhere else rather than
   vanishing);
4. no capabilities, no network unless allowed, a SysV IPC namespace of its own, killed
   with its parent; the program given (the runner) is the namespace's PID 1
   (``--as-pid-1``), so a command sees no process of bubblewrap's.

``--new-session`` is not used: :mod:`tools.jail` starts bwrap in a session of its own
already, with no controlling terminal (so no TIOCSTI injection), and each command gets a
session of its own inside. Killing the jail's PID 1 makes the kernel kill every process of
the namespace, even one that left its group with ``setsid``.

The environment goes to bwrap as its own environment, never as ``--setenv`` arguments: a
command line is readable by every user of the machine in ``/proc/<pid>/cmdline``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ALLOWED_ENV = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "PWD"}
    | {"PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT", "DEBIAN_FRONTEND"}
)
"""The variables a sandboxed command gets (with ``LC_*``); never a key, a token or a proxy
URL (proxies can carry a password)."""


@dataclass(frozen=True)
class Jail:
    """The shape of a jail. ``secrets`` are existing, resolved paths
    (:func:`tools.sandbox.secret_paths`)."""

    bwrap: str
    mode: Literal["read-only", "workspace-write"]
    network: bool
    workspace: Path
    spill_dir: Path
    records: Path
    """The folder inside ``spill_dir`` where the shell records its directory (it must exist
    when the jail starts): the one folder of reefline's a command may write."""
    secrets: tuple[Path, ...]

    def argv(self, program: Sequence[str]) -> list[str]:
        """The command line starting the jail with ``program`` as its PID 1."""
        writable = self.mode == "workspace-write"
        bind = "--bind" if writable else "--ro-bind"
        mounts = [
            (self.workspace, bind),
            (Path(os.path.realpath(self.spill_dir)), "--ro-bind"),
            (Path(os.path.realpath(self.records)), "--bind"),
        ]
        # The interpreter that runs the jail's first process, where the private /tmp or a
        # hidden folder would cover it (a virtualenv made under /tmp): shown read-only.
        mounts += [(p, "--ro-bind") for p in _runtime_dirs() if _covered(p, self.secrets)]
        exposed = {path for path, _ in mounts}
        # A secret that is itself what is exposed (reefline started in ~/.ssh) is the
        # user's choice: shown.
        secrets = [s for s in self.secrets if s not in exposed]
        mounts += [(secret, "hide") for secret in secrets]
        if writable:
            # (What a hidden folder covers needs no pin: the sandbox cannot see it.)
            pinned = _between(self.workspace, [p for p, _ in mounts]) - {p for p, _ in mounts}
            mounts += [
                (f, "--bind") for f in sorted(pinned) if not any(_within(f, s) for s in secrets)
            ]
        # Parents first: a mount covers whatever was mounted below its path before it.
        mounts.sort(key=lambda mount: len(mount[0].parts))
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        args += ["--tmpfs", "/tmp"]
        for path, how in mounts:
            args += _hide(path) if how == "hide" else [how, str(path), str(path)]
        for secret in secrets:
            if os.path.isdir(secret):
                args += ["--remount-ro", str(secret)]
        args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
        if not self.network:
            args.append("--unshare-net")
        args += ["--as-pid-1", "--chdir", "/"]
        return [*args, "--", *program]

    @staticmethod
    def environment(env: Mapping[str, str]) -> dict[str, str]:
        """``env`` reduced to :data:`ALLOWED_ENV` and the locale (``LC_*``)."""
        return {k: v for k, v in env.items() if k in ALLOWED_ENV or k.startswith("LC_")}


def _hide(path: Path) -> list[str]:
    if os.path.isdir(path):
        return ["--tmpfs", str(path)]
    return ["--ro-bind", "/dev/null", str(path)]


def _between(top: Path, paths: Sequence[Path]) -> set[Path]:
    """The folders strictly between ``top`` and each of ``paths`` inside it."""
    folders: set[Path] = set()
    for path in paths:
        if top in path.parents:
            folders.update(p for p in path.parents if top in p.parents)
    return folders


def _runtime_dirs() -> list[Path]:
    """The folders the jail's first process needs: this interpreter's and its base's."""
    return sorted({Path(os.path.realpath(sys.prefix)), Path(os.path.realpath(sys.base_prefix))})


def _covered(path: Path, secrets: Sequence[Path]) -> bool:
    """Whether ``path`` lies under the jail's private ``/tmp`` or a hidden secret."""
    return any(_within(path, top) for top in (Path("/tmp"), *secrets))


def _within(path: Path, top: Path) -> bool:
    return path == top or top in path.parents
