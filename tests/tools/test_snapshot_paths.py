"""The snapshot before a command after the user changed a few paths looks only at the paths
the watch saw change, and records the very tree a full scan of the same state records:
through real bash, real git and real files, each kind of change (a new file, a delete, an
edit, a rename, a new folder with files, a file in an ignored folder, a large file, a
binary file, a symlink) gives the same tree id as a fresh shadow repository's full scan.
When the watch cannot name the paths (too many, a folder renamed) the tree is scanned whole,
with the same result."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tools.bash import BashTool
from tools.snapshots.changes import changes
from tools.snapshots.recording import Recorded, Recorder
from tools.snapshots.shadow import ShadowRepo
from tools.snapshots.stubs import SIZE_CAP

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


def plant(work: Path) -> Path:
    (work / "src" / "pkg").mkdir(parents=True)
    (work / "src" / "pkg" / "app.py").write_text("a = 1\n")
    (work / "run.sh").write_text("echo hi\n")
    (work / "gone.txt").write_text("bye\n")
    (work / "name.txt").write_text("named\n")
    (work / "big.bin").write_bytes(b"x" * (SIZE_CAP + 10))
    (work / "build" / "obj").mkdir(parents=True)
    (work / ".gitignore").write_text("build/\nout/\n*.log\n")
    return work


def new_folder(work: Path) -> None:
    (work / "fresh" / "deep").mkdir(parents=True)
    (work / "fresh" / "a.txt").write_text("a\n")
    (work / "fresh" / "deep" / "b.txt").write_text("b\n")
    (work / "fresh" / "deep" / "c.log").write_text("ignored\n")


def ignored(work: Path) -> None:
    (work / "out").mkdir()
    (work / "out" / "a.o").write_text("object\n")
    (work / "src" / "debug.log").write_text("log\n")


CHANGES: dict[str, tuple[Callable[[Path], object], set[str]]] = {
    "new file": (lambda w: (w / "src" / "new.py").write_text("n\n"), {"src/new.py"}),
    "deleted file": (lambda w: (w / "gone.txt").unlink(), {"gone.txt"}),
    "edit": (lambda w: (w / "src" / "pkg" / "app.py").write_text("a = 2\n"), {"src/pkg/app.py"}),
    "rename": (lambda w: (w / "name.txt").rename(w / "src" / "moved.txt"), {"src/moved.txt"}),
    "new folder with files": (new_folder, {"fresh/a.txt", "fresh/deep/b.txt"}),
    "file in an ignored folder": (ignored, set()),
    "new large file": (lambda w: (w / "huge").write_bytes(b"y" * (SIZE_CAP + 1)), {"huge"}),
    "large file edited": (lambda w: (w / "big.bin").write_bytes(b"z" * (SIZE_CAP + 10)),
                          {"big.bin"}),
    "binary file": (lambda w: (w / "img.png").write_bytes(b"\x89PNG\0\1\2"), {"img.png"}),
    "symlink": (lambda w: os.symlink("run.sh", w / "link"), {"link"}),
    "file became a folder": (
        lambda w: ((w / "gone.txt").unlink(), (w / "gone.txt").mkdir(),
                   (w / "gone.txt" / "in").write_text("in\n")),
        {"gone.txt", "gone.txt/in"},
    ),
}  # fmt: skip


def make(home: Path, work: Path, max_paths: int = 1_000) -> BashTool:
    return BashTool(
        cwd=work,
        spill_dir=home / "sessions" / "s.spill",
        policy="auto",
        snapshots=Recorder(ShadowRepo(home, work), max_paths=max_paths),
    )


def recorder(tool: BashTool) -> Recorder:
    assert tool.snapshots is not None
    return tool.snapshots


async def run(tool: BashTool, command: str) -> Recorded:
    out = await tool.run({"command": command})
    assert out.exit_code == 0, out.content
    assert out.files is not None
    return out.files


async def before_after_user(
    tmp_path: Path, change: Callable[[Path], object], max_paths: int = 1_000
) -> tuple[BashTool, Recorded, Recorded, str]:
    """A command, the user's ``change``, a second command; and a full scan's tree of the
    state the second command started from (from a shadow repository of its own)."""
    work = plant(tmp_path / "work")
    tool = make(tmp_path / "home", work, max_paths)
    first = await run(tool, "echo 1 >> run.sh")
    change(work)
    full = ShadowRepo(tmp_path / "fresh", work).snapshot()
    second = await run(tool, "echo 2 >> run.sh")
    return tool, first, second, full


def between(tool: BashTool, first: Recorded, second: Recorded) -> set[str]:
    return {c.path for c in changes(recorder(tool).repo.git, first.after, second.before)}


@pytest.mark.parametrize("kind", list(CHANGES))
async def test_a_few_paths_changed_give_the_tree_of_a_full_scan(tmp_path: Path, kind: str) -> None:
    change, expected = CHANGES[kind]
    tool, first, second, full = await before_after_user(tmp_path, change)
    assert second.before == full
    assert {c.path for c in second.changes} == {"run.sh"}
    assert between(tool, first, second) == expected
    # Only the changed paths were looked at (a write in an ignored folder the watch does
    # not see at all: nothing changed, no scan of any kind).
    assert recorder(tool).partial_scans == 1
    assert recorder(tool).unwatched is None
    tool.close()


async def test_every_kind_at_once_gives_the_tree_of_a_full_scan(tmp_path: Path) -> None:
    kinds = [k for k in CHANGES if k != "file became a folder"]  # it deletes gone.txt too

    def everything(work: Path) -> None:
        for kind in kinds:
            CHANGES[kind][0](work)

    tool, first, second, full = await before_after_user(tmp_path, everything)
    assert second.before == full
    assert between(tool, first, second) == set().union(*(CHANGES[k][1] for k in kinds))
    assert recorder(tool).partial_scans == 1
    tool.close()


def many(work: Path) -> None:
    for n in range(5):
        (work / f"n{n}.txt").write_text(f"{n}\n")


def folder_renamed(work: Path) -> None:
    (work / "src" / "pkg").rename(work / "src" / "lib")


@pytest.mark.parametrize(("change", "max_paths"), [(many, 4), (folder_renamed, 1_000)])
async def test_paths_the_watch_cannot_name_are_scanned_whole(
    tmp_path: Path, change: Callable[[Path], None], max_paths: int
) -> None:
    tool, first, second, full = await before_after_user(tmp_path, change, max_paths)
    assert second.before == full != first.after
    assert {c.path for c in second.changes} == {"run.sh"}
    assert recorder(tool).partial_scans == 0
    assert recorder(tool).unwatched is None
    tool.close()
