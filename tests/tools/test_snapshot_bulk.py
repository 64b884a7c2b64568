"""A first snapshot of many files (stored through ``git fast-import`` into one pack):
every kind of file recorded as a snapshot of a few files records it, the repository holds a
pack and no loose object per file, and the next scan finds nothing changed."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tools.snapshots import stubs
from tools.snapshots.bulk import BULK_FROM, TREES_EVERY
from tools.snapshots.creation import TUNING
from tools.snapshots.packing import LOOSE_MAX
from tools.snapshots.shadow import ShadowRepo
from tools.snapshots.stopping import Stop, Stopped, stoppable


def git(repo: ShadowRepo, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    cmd = ["git", f"--git-dir={repo.git_dir}", f"--work-tree={repo.work_tree}", *args]
    return subprocess.run(cmd, env=env, capture_output=True, check=True, cwd=repo.work_tree).stdout


def entries(repo: ShadowRepo, tree: str) -> dict[str, tuple[str, str]]:
    """path: (mode, object id) of every file in ``tree``."""
    out: dict[str, tuple[str, str]] = {}
    for item in git(repo, "ls-tree", "-r", "-z", tree).split(b"\0"):
        if item:
            meta, path = item.split(b"\t", 1)
            mode, _kind, oid = meta.decode().split()
            out[os.fsdecode(path)] = (mode, oid)
    return out


def blob(repo: ShadowRepo, oid: str) -> bytes:
    return git(repo, "cat-file", "blob", oid)


def test_a_large_first_snapshot_records_every_kind_of_file_in_one_pack(tmp_path: Path) -> None:
    work = tmp_path / "work"
    for n in range(BULK_FROM + 100):
        folder = work / f"pkg{n // 60}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{n}.py").write_text(f"value = {n}\n")
    (work / "run.sh").write_text("echo hi\n")
    (work / "run.sh").chmod(0o755)
    (work / "empty.txt").write_text("")
    (work / "pic.bin").write_bytes(b"\x89PNG\0\0data")
    (work / "big.txt").write_text("x" * (stubs.SIZE_CAP + 1))
    (work / "odd").mkdir()
    for name in ('"quoted.txt', "new\nline.txt", "sp ace é.txt"):
        (work / "odd" / name).write_text(f"{name}\n")
    (work / "link.txt").symlink_to("run.sh")
    (work / "linked-folder").symlink_to("pkg0")
    (work / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (work / ".gitattributes").write_text("crlf.txt text eol=lf\n")
    (work / "build").mkdir()
    (work / "build" / "out.o").write_text("ignored\n")
    (work / ".gitignore").write_text("build/\n")
    subprocess.run(["git", "init", "-q", str(work / "nested")], check=True)
    (work / "nested" / "inside.txt").write_text("not ours\n")
    repo = ShadowRepo(tmp_path / "home", work)
    tree = repo.snapshot()
    files = entries(repo, tree)
    assert files["pkg3/m200.py"][0] == "100644"
    assert blob(repo, files["pkg3/m200.py"][1]) == b"value = 200\n"
    assert files["run.sh"][0] == "100755"
    assert blob(repo, files["empty.txt"][1]) == b""
    assert stubs.is_stand_in(blob(repo, files["pic.bin"][1]))
    assert stubs.is_stand_in(blob(repo, files["big.txt"][1]))
    for name in ('"quoted.txt', "new\nline.txt", "sp ace é.txt"):
        assert blob(repo, files[f"odd/{name}"][1]) == f"{name}\n".encode()
    assert files["link.txt"][0] == "120000" and blob(repo, files["link.txt"][1]) == b"run.sh"
    assert files["linked-folder"][0] == "120000"
    assert blob(repo, files["crlf.txt"][1]) == b"one\ntwo\n"  # as git itself stores it
    assert not [p for p in files if p.startswith(("build/", "nested/", "linked-folder/"))]
    assert len(files) == BULK_FROM + 100 + 12
    counted = dict(
        line.split(": ") for line in git(repo, "count-objects", "-v").decode().splitlines()
    )
    assert int(counted["packs"]) >= 1 and int(counted["in-pack"]) >= BULK_FROM + 100
    assert int(counted["count"]) < 20, counted  # not one loose object per file
    assert not git(repo, "for-each-ref").strip()  # the import's own ref is gone
    # Each file's stat is in the index: the next scan finds nothing to look at again.
    assert git(repo, "diff-files", "--name-only") == b""
    assert repo.snapshot() == tree
    (work / "pkg1" / "m61.py").write_text("value = 'changed'\n")
    assert repo.snapshot() != tree


def test_loose_objects_of_later_snapshots_are_packed_once_they_pile_up(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    repo = ShadowRepo(tmp_path / "home", work)
    repo.snapshot()
    for batch in range(6):  # each fewer than BULK_FROM files: stored loose, the usual way
        for n in range(BULK_FROM - 200):
            (work / f"b{batch}-{n}.txt").write_text(f"{batch} {n}\n")
        repo.snapshot()
    counted = dict(
        line.split(": ") for line in git(repo, "count-objects", "-v").decode().splitlines()
    )
    assert int(counted["packs"]) >= 1, counted
    assert int(counted["count"]) < LOOSE_MAX, counted  # 1,800 written, most packed
    assert int(counted["in-pack"]) + int(counted["count"]) >= 6 * (BULK_FROM - 200)
    assert git(repo, "fsck", "--no-dangling", "--connectivity-only") == b""


def _plain_repo(tmp_path: Path, work: Path) -> list[str]:
    """The git command line of a plain repository of ``work`` that git itself filled."""
    cmd = ["git", f"--git-dir={tmp_path / 'plain.git'}", f"--work-tree={work}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    tuned = [["config", key, value] for key, value in TUNING]
    for args in (["init", "-q"], *tuned, ["config", "core.autocrlf", "false"], ["add", "-A"]):
        subprocess.run([*cmd, *args], env=env, check=True, cwd=work, capture_output=True)
    return cmd


def _many_kinds(work: Path) -> None:
    for n in range(BULK_FROM + 50):
        folder = work / f"pkg{n // 40}" / ("deep" if n % 3 else "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{n}.py").write_text(f"value = {n}\n" * (n % 5))
    (work / "pkg1" / "run.sh").write_text("echo hi\n")
    (work / "pkg1" / "run.sh").chmod(0o755)
    for name in ('"quoted.txt', "new\nline.txt", "sp ace é.txt", "a-b.txt", "a.b.txt"):
        (work / name).write_text(f"{name}\n")
    (work / os.fsdecode(b"latin-\xe9.txt")).write_text("not UTF-8 in its name\n")
    (work / ("long-" + "x" * 4200 + ".txt")[:250]).write_text("a long name\n")
    (work / "conv").mkdir()
    (work / "conv" / ".gitattributes").write_text("*.txt text\n")
    for n in range(30):
        (work / "conv" / f"w{n}.txt").write_bytes(b"windows\r\nline\r\n")


def test_the_index_a_first_snapshot_writes_is_the_one_git_writes(tmp_path: Path) -> None:
    """Written from each file's stat and blob id (no second read): the same entries, stat
    cache included, and so the same tree, as a plain ``git add`` of the same files."""
    work = tmp_path / "work"
    work.mkdir()
    _many_kinds(work)
    repo = ShadowRepo(tmp_path / "home", work)
    tree = repo.snapshot()
    plain = _plain_repo(tmp_path, work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}

    def listing(cmd: list[str]) -> bytes:
        args = ["ls-files", "-z", "--stage", "--debug"]
        out = subprocess.run([*cmd, *args], env=env, capture_output=True, check=True).stdout
        # Without git's in-memory flags (which part of a split index an entry is in).
        return re.sub(rb"\tflags: [0-9a-f]+", b"", out)

    ours = listing(["git", f"--git-dir={repo.git_dir}", f"--work-tree={work}"])
    assert ours == listing(plain)  # modes, ids, ctime, mtime, dev, ino, uid, gid, size
    assert ours.count(b"ctime: 0:0") == 0
    theirs = subprocess.run([*plain, "write-tree"], env=env, capture_output=True, check=True)
    assert tree == theirs.stdout.decode().strip()
    w0 = entries(repo, tree)["conv/w0.txt"][1]
    assert blob(repo, w0) == b"windows\nline\n"  # as git converts it
    assert git(repo, "diff-files", "--name-only") == b""
    assert git(repo, "fsck", "--no-dangling") == b""
    assert not (repo.git_dir / "index.lock").exists()


def test_a_first_snapshot_stopped_in_the_middle_leaves_no_index_half_made(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _many_kinds(work)
    repo = ShadowRepo(tmp_path / "home", work)
    stop = Stop()
    with stoppable(stop), pytest.raises(Stopped):
        repo.snapshot(on_listed=lambda _files: stop.set())  # stopped once listed
    assert not (repo.git_dir / "index").exists()
    assert not (repo.git_dir / "index.lock").exists()
    tree = repo.snapshot()
    plain = _plain_repo(tmp_path, work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    theirs = subprocess.run([*plain, "write-tree"], env=env, capture_output=True, check=True)
    assert tree == theirs.stdout.decode().strip()
    assert git(repo, "diff-files", "--name-only") == b""


def test_a_first_snapshot_of_thousands_of_files_names_the_tree_git_would(tmp_path: Path) -> None:
    """More files than one commit of the import takes (its trees are built a part at a
    time, folders cut between two parts included): the same tree as git's own."""
    work = tmp_path / "work"
    for n in range(2 * TREES_EVERY + 300):
        folder = work / f"a{n // 2000}" / f"b{n // 70}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"{n}\n")
    repo = ShadowRepo(tmp_path / "home", work)
    tree = repo.snapshot()
    plain = _plain_repo(tmp_path, work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    theirs = subprocess.run([*plain, "write-tree"], env=env, capture_output=True, check=True)
    assert tree == theirs.stdout.decode().strip()
    assert git(repo, "diff-files", "--name-only") == b""
    assert git(repo, "fsck", "--no-dangling", "--connectivity-only") == b""
    assert not git(repo, "for-each-ref").strip()
