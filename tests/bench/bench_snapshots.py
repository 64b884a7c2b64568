"""Workspace snapshots: what they add to a command, and how long a restore takes.

The working tree is a git checkout of a real project's shape: 10,000 files in nested
folders, a few large files (recorded by hash), and a ``.gitignore``d build folder full of
objects. Each iteration runs a command that edits one file through a ``BashTool`` with
snapshots, the same command through one without (in a folder of its own: its edit is not a
change between two recorded commands), and the command again with snapshots after a file
was changed between commands (by the "user": the snapshot before it cannot be the last
one; the watch names the changed path and only it is looked at), interleaved in the same run; the figures are medians. The restore puts back 100 files a
command changed.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tests.bench.report import Figure
from tools.bash import BashTool
from tools.snapshots.recording import Recorder
from tools.snapshots.restore import restore
from tools.snapshots.shadow import ShadowRepo

FILES = 10_000
WARMUP = 5
ITERATIONS = 40
TARGET_ADDED_MS = 50.0
TARGET_RESTORE_S = 1.0


def make_tree(root: Path) -> None:
    rng = random.Random(7)
    n = 0
    for a in range(25):
        for b in range(8):
            folder = root / "src" / f"pkg{a}" / f"mod{b}"
            folder.mkdir(parents=True)
            for c in range(FILES // 200):
                lines = "".join(f"value_{i} = {i}\n" for i in range(rng.randint(5, 120)))
                (folder / f"file{c}.py").write_text(f"# file {n}\n{lines}")
                n += 1
    for i in range(3):
        (root / "assets").mkdir(exist_ok=True)
        (root / "assets" / f"model{i}.bin").write_bytes(os.urandom(8_000_000))
    build = root / "build" / "obj"
    build.mkdir(parents=True)
    for i in range(3000):
        (build / f"o{i}.o").write_bytes(b"\0obj" * 64)
    (root / ".gitignore").write_text("build/\n")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@e"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "tree"], cwd=root, check=True)


async def _measure(root: Path, home: Path) -> tuple[float, float, float, float]:
    repo = ShadowRepo(home, root)
    snap = BashTool(cwd=root, spill_dir=home / "s1", policy="auto", snapshots=Recorder(repo))
    twin = home / "bare"
    shutil.copytree(root / "src" / "pkg3" / "mod2", twin / "src" / "pkg3" / "mod2")
    bare = BashTool(cwd=twin, spill_dir=home / "s2", policy="auto")
    first = await snap.run({"command": "true"})  # the first snapshot records everything
    assert first.files is not None
    with_times: list[float] = []
    without_times: list[float] = []
    edited_times: list[float] = []
    for i in range(WARMUP + ITERATIONS):
        command = {"command": f"echo 'x = {i}' >> src/pkg3/mod2/file{i % 50}.py"}
        start = time.perf_counter()
        out = await snap.run(command)
        mid = time.perf_counter()
        await bare.run(command)
        end = time.perf_counter()
        assert out.files is not None and len(out.files.changes) == 1, out
        with (root / "src" / "pkg7" / "mod1" / f"file{i % 50}.py").open("a") as f:
            f.write(f"user = {i}\n")  # between two commands
        again = time.perf_counter()
        out = await snap.run(command)
        edited = time.perf_counter() - again
        assert out.files is not None and len(out.files.changes) == 1, out
        assert snap.snapshots is not None and snap.snapshots.partial_scans == i + 1
        if i >= WARMUP:
            with_times.append(mid - start)
            without_times.append(end - mid)
            edited_times.append(edited)
    edit = "for f in src/pkg1/mod*/file[0-9].py src/pkg1/mod*/file1[0-9].py; do echo y >> $f; done"
    # 8 folders x 20 files: the first 100 changed paths are put back.
    out = await snap.run({"command": edit})
    assert out.files is not None and len(out.files.changes) >= 100
    paths = [c.path for c in out.files.changes][:100]
    start = time.perf_counter()
    report = restore(
        repo, dict.fromkeys(paths, out.files.before), dict.fromkeys(paths, out.files.after)
    )
    restore_s = time.perf_counter() - start
    assert len(report.restored) == 100, report.refused
    snap.close()
    return (
        statistics.median(with_times) * 1000,
        statistics.median(without_times) * 1000,
        statistics.median(edited_times) * 1000,
        restore_s,
    )


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp, "work"), Path(tmp, "home")
        root.mkdir()
        make_tree(root)
        with_ms, without_ms, edited_ms, restore_s = asyncio.run(_measure(root, home))
    added = with_ms - without_ms
    added_edited = edited_ms - without_ms
    return [
        Figure(
            group="Workspace snapshots",
            name=f"command editing one file, {FILES:,} files, with snapshots",
            value=with_ms,
            unit="ms",
            baseline_name="the same command without snapshots",
            baseline_value=without_ms,
            target=f"≤ {TARGET_ADDED_MS:g} ms added (added: {added:.1f} ms)",
            ok=added <= TARGET_ADDED_MS,
        ),
        Figure(
            group="Workspace snapshots",
            name="the same after a file was changed between commands (that path looked at)",
            value=edited_ms,
            unit="ms",
            baseline_name="the same command without snapshots",
            baseline_value=without_ms,
            target=f"≤ {TARGET_ADDED_MS:g} ms added (added: {added_edited:.1f} ms)",
            ok=added_edited <= TARGET_ADDED_MS,
        ),
        Figure(
            group="Workspace snapshots",
            name="restore of 100 changed files",
            value=restore_s,
            unit="s",
            target=f"≤ {TARGET_RESTORE_S:g} s",
            ok=restore_s <= TARGET_RESTORE_S,
        ),
    ]
