"""A ``git`` that holds the first snapshot's store until the test says: the real git, placed
first on ``PATH``, except that ``git fast-import`` starts only once a gate file exists. A
test sees what a front end says while the first snapshot runs, then lets it go on; no
timing is assumed."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def held_git(tmp_path: Path, gate: Path) -> Path:
    """A folder whose ``git`` is the real one, but ``git fast-import`` (the first snapshot's
    store) starts only once ``gate`` exists."""
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "git").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = fast-import ]; then while [ ! -e "{gate}" ]; do sleep 0.05; done; fi\n'
        f'exec "{real}" "$@"\n'
    )
    (shim / "git").chmod(0o755)
    return shim


@contextmanager
def opened_at_last(gate: Path) -> Iterator[None]:
    """The gate opened at the end whatever happened: no held git is left waiting."""
    try:
        yield
    finally:
        gate.touch()
