"""The watch that lets a command start from the snapshot after the last one: through real
bash, real git and real files, a command after a quiet moment runs fewer git calls (no scan
before it), and every change made between commands still stays out of the next one's,
in a folder made since, in a folder ``.gitignore`` stopped ignoring, or when the tree has
too many folders to watch (then every command scans, as without a watch)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tools.bash import BashTool
from tools.snapshots.changes import changes
from tools.snapshots.recording import Recorded, Recorder
from tools.snapshots.shadow import ShadowRepo
from tools.snapshots.watch import MAX_DIRS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


def make(home: Path, work: Path, max_dirs: int = MAX_DIRS) -> BashTool:
    return BashTool(
        cwd=work,
        spill_dir=home / "sessions" / "s.spill",
        policy="auto",
        snapshots=Recorder(ShadowRepo(home, work), max_dirs=max_dirs),
    )


def recorder(tool: BashTool) -> Recorder:
    assert tool.snapshots is not None
    return tool.snapshots


async def run(tool: BashTool, command: str) -> tuple[Recorded, int]:
    """The command's snapshots, and how many git processes it took."""
    git = recorder(tool).repo.git
    start = git.invocations
    out = await tool.run({"command": command})
    assert out.exit_code == 0, out.content
    assert out.files is not None
    return out.files, git.invocations - start


def paths(files: Recorded) -> set[str]:
    return {c.path for c in files.changes}


def between(tool: BashTool, earlier: Recorded, later: Recorded) -> set[str]:
    git = recorder(tool).repo.git
    return {c.path for c in changes(git, earlier.after, later.before)}


def inotify_fds() -> int:
    fds = Path("/proc/self/fd")
    found = 0
    for fd in fds.iterdir():
        try:
            found += os.readlink(fd) == "anon_inode:inotify"
        except OSError:
            continue  # the listing's own descriptor, closed meanwhile
    return found


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return plant(tmp_path / "work")


def plant(work: Path) -> Path:
    (work / "src" / "pkg").mkdir(parents=True)
    (work / "src" / "pkg" / "app.py").write_text("a = 1\n")
    (work / "run.sh").write_text("echo hi\n")
    (work / "build" / "obj").mkdir(parents=True)
    (work / ".gitignore").write_text("build/\n")
    return work


async def test_a_command_after_a_quiet_moment_is_not_scanned_before(
    tmp_path: Path, work: Path
) -> None:
    open_before = inotify_fds()
    tool = make(tmp_path / "home", work)
    twin = plant(tmp_path / "twin")
    scanning = make(tmp_path / "other", twin, max_dirs=0)  # cannot watch: scans each time
    first, _ = await run(tool, "echo 1 >> run.sh")
    await run(scanning, "echo 1 >> run.sh")
    for tree in (work, twin):  # the user's, between commands
        (tree / "src" / "pkg" / "app.py").write_text("a = 2\n")
    dirty, _ = await run(tool, "echo 2 >> run.sh")
    quiet, unscanned = await run(tool, "echo 3 >> run.sh")
    await run(scanning, "echo 2 >> run.sh")
    _, scanned = await run(scanning, "echo 3 >> run.sh")
    assert paths(dirty) == paths(quiet) == {"run.sh"}
    assert between(tool, first, dirty) == {"src/pkg/app.py"}
    # The same command after a quiet moment: it starts from the last snapshot.
    assert unscanned < scanned
    assert quiet.before == dirty.after
    # A write in an ignored folder is nobody's change and costs no scan either.
    for tree in (work, twin):
        (tree / "build" / "obj" / "x.o").write_text("object\n")
    build, ignored = await run(tool, "true")
    _, ignored_scanned = await run(scanning, "true")
    assert build.changes == () and ignored < ignored_scanned
    assert recorder(tool).unwatched is None
    assert inotify_fds() == open_before + 1
    tool.close()
    scanning.close()
    assert inotify_fds() == open_before


async def test_a_change_in_a_folder_made_since_is_still_caught(tmp_path: Path, work: Path) -> None:
    tool = make(tmp_path / "home", work)
    await run(tool, "true")
    made, _ = await run(tool, "mkdir -p fresh/deep")  # by a command
    (work / "fresh" / "deep" / "user.txt").write_text("mine\n")
    second, _ = await run(tool, "echo 1 >> run.sh")
    assert paths(second) == {"run.sh"}
    assert between(tool, made, second) == {"fresh/deep/user.txt"}
    (work / "mine" / "sub").mkdir(parents=True)  # by the user, between commands
    (work / "mine" / "sub" / "a.txt").write_text("a\n")
    third, _ = await run(tool, "echo 2 >> run.sh")
    assert paths(third) == {"run.sh"}
    assert between(tool, second, third) == {"mine/sub/a.txt"}
    (work / "mine" / "sub" / "b.txt").write_text("b\n")  # in the user's folder, later
    fourth, _ = await run(tool, "echo 3 >> run.sh")
    assert paths(fourth) == {"run.sh"}
    assert between(tool, third, fourth) == {"mine/sub/b.txt"}
    # A folder deleted is no reason to stop watching.
    gone, _ = await run(tool, "rm -r fresh")
    (work / "mine" / "sub" / "c.txt").write_text("c\n")
    fifth, _ = await run(tool, "echo 4 >> run.sh")
    assert between(tool, gone, fifth) == {"mine/sub/c.txt"}
    _, quiet = await run(tool, "true")
    _, again = await run(tool, "true")
    assert recorder(tool).unwatched is None and again == quiet
    tool.close()


async def test_a_folder_no_longer_ignored_is_watched(tmp_path: Path, work: Path) -> None:
    tool = make(tmp_path / "home", work)
    await run(tool, "true")
    (work / ".gitignore").write_text("*.log\n")  # build/ is recorded from now on
    first, _ = await run(tool, "true")
    (work / "build" / "obj" / "x.o").write_text("user\n")
    second, _ = await run(tool, "echo 1 >> run.sh")
    assert paths(second) == {"run.sh"}
    assert between(tool, first, second) == {"build/obj/x.o"}
    tool.close()


async def test_too_many_folders_to_watch_scans_every_time(tmp_path: Path, work: Path) -> None:
    watched = make(tmp_path / "home1", work)
    limited = make(tmp_path / "home2", work, max_dirs=2)  # the tree has 3 recorded folders
    costs: dict[str, int] = {}
    for name, tool in (("watched", watched), ("limited", limited)):
        first, _ = await run(tool, "echo 1 >> run.sh")
        (work / "src" / "pkg" / "app.py").write_text(f"a = {name!r}\n")
        second, _ = await run(tool, "echo 2 >> run.sh")
        assert paths(second) == {"run.sh"}
        assert between(tool, first, second) == {"src/pkg/app.py"}
        third, costs[name] = await run(tool, "echo 3 >> run.sh")
        assert paths(third) == {"run.sh"}
        tool.close()
    assert recorder(watched).unwatched is None
    assert "more than 2 folders" in (recorder(limited).unwatched or "")
    assert costs["limited"] > costs["watched"]  # the scan before each command, as always


async def test_every_folder_is_watched_leaves_and_those_holding_folders(tmp_path: Path) -> None:
    """Folders with no folder in them (their link count says so, where the filesystem
    keeps it so) are watched without listing their files; those holding folders, at any
    depth, are listed: a change between commands in each kind is caught."""
    work = tmp_path / "work"
    for folder in ("a/b/c/d", "a/b/leaf", "a/other", "top-leaf", "a/b/c/d/e/f/g"):
        (work / folder).mkdir(parents=True, exist_ok=True)
        (work / folder / "x.txt").write_text("x\n")
    (work / "root.txt").write_text("r\n")
    tool = make(tmp_path / "home", work)
    last, _ = await run(tool, "true")
    for folder in ("a/b/c/d/e/f/g", "a/b/leaf", "a/other", "top-leaf", "a/b/c", "a"):
        (work / folder / "x.txt").write_text("changed\n")  # by the user, between commands
        changed, _ = await run(tool, "true")
        assert paths(changed) == set()
        assert between(tool, last, changed) == {f"{folder}/x.txt"}
        last = changed
    assert recorder(tool).unwatched is None
    tool.close()
