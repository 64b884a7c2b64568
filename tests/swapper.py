"""The restore race as an attacker would run it: a real process that keeps swapping a folder
of the working directory with a symlink to a folder outside it (``renameat2`` with
``RENAME_EXCHANGE``, one atomic system call per swap), started and ended by the test."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

_SWAPPER = r"""
import ctypes, os, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
if hasattr(libc, "renameat2"):
    def swap():
        return libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
else:  # a libc older than 2.28: the system call itself
    number = {"x86_64": 316, "aarch64": 276}[platform.machine()]
    def swap():
        return libc.syscall(number, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
print("armed", flush=True)
# Like the attack: it begins when reefline starts writing (the first temporary file of a
# restore), so the snapshot a restore takes first sees the tree at rest.
while not any(n.endswith(b".reefline-restore") for n in os.listdir(a)):
    pass
while True:
    if swap() != 0:
        sys.exit(f"renameat2: {os.strerror(ctypes.get_errno())}")
"""


@contextlib.contextmanager
def swapping(folder: Path, outside: Path) -> Iterator[None]:
    """While inside, from the moment a restore's first temporary file appears in
    ``folder``, ``folder`` and a symlink to ``outside`` (beside it) keep trading places; on
    leaving, the swapper is killed and ``folder`` is the real folder again."""
    link = folder.with_name(folder.name + ".swap")
    link.symlink_to(outside, target_is_directory=True)
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", _SWAPPER, str(folder), str(link)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "armed\n", "the swapper could not start"
        yield
    finally:
        proc.kill()
        proc.wait()
        assert proc.returncode == -9, "the swapper stopped on its own (renameat2 failed?)"
        if folder.is_symlink():  # stopped mid-swap: put the real folder back at its name
            os.rename(folder, folder.with_name("swap.tmp"))
            os.rename(link, folder)
            link = folder.with_name("swap.tmp")
        link.unlink()


def written_outside(outside: Path) -> list[str]:
    """Everything under ``outside`` (which the test made empty): what a restore wrote there."""
    return sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
