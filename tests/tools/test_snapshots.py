"""Workspace snapshots through real bash and real git: what each kind of command changed is
recorded, the user's own repository is never touched, and a restore puts files back, can be
undone, never follows a link and never overwrites a file changed outside reefline."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tools.bash import BashTool
from tools.sandbox import choose
from tools.snapshots.changes import changes
from tools.snapshots.recording import Recorded, Recorder
from tools.snapshots.restore import restore
from tools.snapshots.shadow import ShadowRepo


def make(tmp_path: Path, work: Path, mode: str = "off") -> BashTool:
    home = tmp_path / "home"
    repo = ShadowRepo(home, work)
    sandbox = choose(mode, hidden=[home]) if mode != "off" else None  # type: ignore[arg-type]
    return BashTool(
        cwd=work,
        spill_dir=home / "sessions" / "s.spill",
        policy="auto",
        sandbox=sandbox,
        snapshots=Recorder(repo),
    )


async def run(tool: BashTool, command: str) -> Recorded:
    out = await tool.run({"command": command})
    assert out.exit_code == 0, out.content
    assert out.files is not None
    return out.files


def changed(files: Recorded) -> dict[str, tuple[str, int | None, int | None]]:
    return {c.path: (c.kind, c.added, c.removed) for c in files.changes}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    (work / "old.txt").write_text("old\n")
    (work / "gone.txt").write_text("x\ny\n")
    (work / "run.sh").write_text("echo hi\n")
    (work / ".gitignore").write_text("build/\n")
    return work


async def test_every_kind_of_change_is_recorded(tmp_path: Path, work: Path) -> None:
    tool = make(tmp_path, work)
    files = await run(
        tool,
        "sed -i 's/b = 2/b = 20/' src/app.py && echo new > new.txt && rm gone.txt"
        " && git mv old.txt renamed.txt 2>/dev/null || mv old.txt renamed.txt; chmod +x run.sh"
        " && printf 'P\\0NG' > img.png && ln -s /etc/passwd leak"
        " && mkdir -p build && echo junk > build/out.o",
    )
    assert changed(files) == {
        "src/app.py": ("modified", 1, 1),
        "new.txt": ("added", 1, 0),
        "gone.txt": ("deleted", 0, 2),
        "renamed.txt": ("renamed", 0, 0),
        "run.sh": ("mode", 0, 0),
        "img.png": ("added", None, None),  # binary: by hash
        "leak": ("added", 1, 0),  # the link itself, its target never read
    }
    assert next(c for c in files.changes if c.path == "renamed.txt").old_path == "old.txt"
    # Nothing changed: nothing said, the same snapshot.
    quiet = await run(tool, "cat src/app.py > /dev/null")
    assert quiet.changes == () and quiet.before == quiet.after == files.after


async def test_a_command_after_cd_and_a_users_edit_between_commands(
    tmp_path: Path, work: Path
) -> None:
    tool = make(tmp_path, work)
    first = await run(tool, "cd src && echo 'd = 4' >> app.py")
    (work / "old.txt").write_text("edited by the user\n")  # between two commands
    second = await run(tool, "echo more >> app.py")  # still in src
    assert changed(first) == {"src/app.py": ("modified", 1, 0)}
    # The user's edit is not the command's: it is in the snapshot before it.
    assert changed(second) == {"src/app.py": ("modified", 1, 0)}
    assert second.before != first.after


async def test_every_kind_of_user_change_between_commands_stays_out_of_the_next(
    tmp_path: Path, work: Path
) -> None:
    # Each snapshot after a command is the next one's starting point only while nothing
    # changed in between: a new file, a delete and a same-size edit of the file the last
    # command wrote, made between two commands, are the user's, never the second command's.
    tool = make(tmp_path, work)
    first = await run(tool, "echo 'd = 4' >> src/app.py")
    (work / "user.txt").write_text("mine\n")
    (work / "gone.txt").unlink()
    text = (work / "src" / "app.py").read_text()
    (work / "src" / "app.py").write_text(text.replace("d = 4", "d = 5"))
    second = await run(tool, "echo more >> run.sh")
    assert changed(second) == {"run.sh": ("modified", 1, 0)}
    repo = tool.snapshots.repo  # type: ignore[union-attr]
    between = {c.path for c in changes(repo.git, first.after, second.before)}
    assert between == {"user.txt", "gone.txt", "src/app.py"}


async def test_the_users_git_repository_is_never_touched(tmp_path: Path, work: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=work, check=True, capture_output=True, text=True
        ).stdout

    git("init", "-q")
    git("-c", "user.name=u", "-c", "user.email=u@e", "commit", "-q", "--allow-empty", "-m", "0")
    git("add", "src/app.py")
    (work / "old.txt").write_text("stash me\n")
    git("-c", "user.name=u", "-c", "user.email=u@e", "stash", "-q")
    dot_git = {
        p.relative_to(work): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (work / ".git").rglob("*")
        if p.is_file()
    }
    status = git("status", "--porcelain")
    tool = make(tmp_path, work)
    files = await run(tool, "echo new > new.txt")
    assert changed(files) == {"new.txt": ("added", 1, 0)}
    after = {
        p.relative_to(work): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (work / ".git").rglob("*")
        if p.is_file()
    }
    assert after == dot_git  # index, stash, objects: byte for byte
    assert sorted(git("status", "--porcelain").splitlines()) == sorted(
        [*status.splitlines(), "?? new.txt"]
    )
    assert not any(".git/" in c.path for c in files.changes)


async def test_a_large_file_is_recorded_by_hash_not_content(tmp_path: Path, work: Path) -> None:
    tool = make(tmp_path, work)
    files = await run(tool, "head -c 3000000 /dev/zero | tr '\\0' 'a' > big.txt")
    assert changed(files) == {"big.txt": ("added", None, None)}
    shadow = ShadowRepo(tmp_path / "home", work).git_dir
    size = sum(p.stat().st_size for p in shadow.rglob("*") if p.is_file())
    assert size < 1_000_000  # the 3 MB are not in it


async def test_restore_puts_files_back_and_can_be_undone(tmp_path: Path, work: Path) -> None:
    tool = make(tmp_path, work)
    files = await run(tool, "sed -i 's/a = 1/a = 9/' src/app.py && rm gone.txt && echo n > n.txt")
    repo = tool.snapshots.repo  # type: ignore[union-attr]
    paths = {p for c in files.changes for p in c.paths}
    report = restore(repo, dict.fromkeys(paths, files.before), dict.fromkeys(paths, files.after))
    assert sorted(report.restored) == ["gone.txt", "n.txt", "src/app.py"] and not report.refused
    assert (work / "src" / "app.py").read_text() == "a = 1\nb = 2\nc = 3\n"
    assert (work / "gone.txt").read_text() == "x\ny\n" and not (work / "n.txt").exists()
    # The restore snapshotted the state first: undoing it brings the command's work back.
    undo = restore(
        repo,
        dict.fromkeys(report.restored, report.before),
        dict.fromkeys(report.restored, report.after),
    )
    assert sorted(undo.restored) == sorted(report.restored)
    assert "a = 9" in (work / "src" / "app.py").read_text() and (work / "n.txt").exists()


async def test_a_file_changed_outside_reefline_since_is_not_overwritten(
    tmp_path: Path, work: Path
) -> None:
    tool = make(tmp_path, work)
    files = await run(tool, "echo cmd >> old.txt && echo cmd >> src/app.py")
    (work / "old.txt").write_text("the user's own work\n")
    repo = tool.snapshots.repo  # type: ignore[union-attr]
    paths = ["old.txt", "src/app.py"]
    report = restore(repo, dict.fromkeys(paths, files.before), dict.fromkeys(paths, files.after))
    assert report.restored == ["src/app.py"]
    assert "changed outside reefline" in report.refused["old.txt"]
    assert (work / "old.txt").read_text() == "the user's own work\n"


async def test_restore_never_writes_through_a_symlink(tmp_path: Path, work: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("precious\n")
    tool = make(tmp_path, work)
    files = await run(tool, "echo x >> src/app.py && echo y > leak")
    repo = tool.snapshots.repo  # type: ignore[union-attr]
    # The folder on the way becomes a link to a folder outside, and so does a file.
    swap = await tool.run(
        {"command": f"rm -r src && ln -s {outside} src && rm leak && ln -s {outside}/app.py leak"}
    )
    assert swap.files is not None
    paths = ["src/app.py", "leak"]
    expected = dict.fromkeys(paths, swap.files.after)
    report = restore(repo, dict.fromkeys(paths, files.before), expected)
    assert (outside / "app.py").read_text() == "precious\n"
    assert "symlink" in report.refused["src/app.py"]
    # ``leak`` did not exist before: restoring removes the link, never its target.
    assert report.restored == ["leak"] and not os.path.lexists(work / "leak")
    assert (outside / "app.py").exists()


async def test_a_symlink_is_recorded_as_a_link_and_restored_as_one(
    tmp_path: Path, work: Path
) -> None:
    tool = make(tmp_path, work)
    await run(tool, "ln -s ../etc/x link")
    files = await run(tool, "rm link && echo text > link")
    repo = tool.snapshots.repo  # type: ignore[union-attr]
    report = restore(repo, {"link": files.before}, {"link": files.after})
    assert report.restored == ["link"]
    assert os.readlink(work / "link") == "../etc/x"


async def test_a_non_git_directory_and_a_restore_of_100_files(tmp_path: Path) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    tool = make(tmp_path, work)
    files = await run(tool, "for i in $(seq 100); do echo $i > f$i.txt; done")
    assert len(files.changes) == 100
    second = await run(tool, "for i in $(seq 100); do echo changed >> f$i.txt; done")
    repo = tool.snapshots.repo  # type: ignore[union-attr]
    paths = [c.path for c in second.changes]
    report = restore(repo, dict.fromkeys(paths, second.before), dict.fromkeys(paths, second.after))
    assert len(report.restored) == 100
    assert (work / "f7.txt").read_text() == "7\n"


async def test_read_only_sandbox_takes_no_snapshot(bwrap: str, tmp_path: Path, work: Path) -> None:
    tool = make(tmp_path, work, "read-only")
    out = await tool.run({"command": "cat src/app.py"})
    assert out.exit_code == 0 and out.files is None
    assert not (tmp_path / "home" / "snapshots").exists()


async def test_a_sandboxed_command_cannot_reach_the_shadow_repository(
    bwrap: str, tmp_path: Path, work: Path
) -> None:
    tool = make(tmp_path, work, "workspace-write")
    await run(tool, "echo one > a.txt")
    shadow = ShadowRepo(tmp_path / "home", work).git_dir
    assert (shadow / "HEAD").exists()
    out = await tool.run(
        {"command": f"ls {shadow} 2>&1; echo evil > {shadow}/index 2>&1; cat {shadow}/HEAD 2>&1"}
    )
    assert "ref:" not in out.content and "index" not in out.content.split("\n")[0]
    assert (shadow / "index").read_bytes() != b"evil\n"
    # The same listing unconfined sees it: the sandbox is what hid it.
    free = make(tmp_path, work)
    seen = await free.run({"command": f"cat {shadow}/HEAD"})
    assert "ref:" in seen.content
