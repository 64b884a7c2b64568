"""Workspace snapshots in a large working directory: 100,000 small text files in 2,000
folders (about 2 MB of text), no ``.git``, as a checkout of a large project or a data folder.

* The first command of a ``reefline -p`` session (``--approve auto``, a loopback server that
  answers at once, so the command comes as early as it can): its time from ``tool/start`` to
  ``tool/result`` in the log, the first snapshot being taken in the background since the
  session started. Beside it, the same session and command unrecorded: ``git`` not on
  ``PATH`` (only ``bash`` is), so the session takes no snapshots.
* The first command coming a second after the session opened, as a model's first reply
  would (through the bash tool): it waits only for what is left of the first snapshot.
* The worst case: a command arriving the moment the first snapshot starts waits for all of
  it (through the bash tool; no target, the figure says what the background saves).
* Later commands, each editing one file: median time, beside the same command unrecorded.
* The shadow repository's size after the first snapshot, beside the tree's packed size: a
  plain git repository holding only that tree, after ``git gc`` (its pack and index).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.report import Figure
from tests.openai_server import OpenAIServer
from tools.bash import BashTool
from tools.snapshots.recording import Recorder
from tools.snapshots.shadow import ShadowRepo

FOLDERS = 2_000
PER_FOLDER = 50
FILES = FOLDERS * PER_FOLDER
RUNS = 3
LATER = 20
TARGET_FIRST_ADDED_S = 1.0
REPLY_S = 1.0
"""When a command comes as a model's first reply: a second after the session opened."""
TARGET_LATER_ADDED_MS = 100.0
TARGET_SIZE_RATIO = 3.0
REEFLINE = Path(sys.executable).with_name("reefline")
GROUP = f"Workspace snapshots at {FILES:,} files"


def make_tree(root: Path) -> None:
    for a in range(FOLDERS):
        folder = root / f"d{a // 50}" / f"e{a}"
        folder.mkdir(parents=True)
        for b in range(PER_FOLDER):
            (folder / f"f{b}.txt").write_text(f"line {a} {b}\n")


def _git_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def _size(path: Path) -> int:
    """Bytes on disk (blocks, as ``du`` counts them) of everything under ``path``."""
    return sum(p.lstat().st_blocks * 512 for p in [path, *path.rglob("*")])


def packed_tree_size(root: Path, scratch: Path) -> int:
    """The tree in a plain repository of its own, committed and ``git gc``'d: its packs."""
    git = ["git", "-c", "gc.auto=0", f"--git-dir={scratch}", f"--work-tree={root}"]
    env = {**_git_env(), "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@e"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@e"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"], ["gc", "-q"]):
        subprocess.run([*git, *args], env=env, check=True, cwd=root)
    return _size(scratch / "objects" / "pack")


def _cli_env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REEFLINE_"))}
    (base / "config.toml").write_text("")
    env.update(REEFLINE_HOME=str(base / "home"), REEFLINE_CONFIG=str(base / "config.toml"))
    return env


def headless_first_command(
    root: Path, base: Path, *, recorded: bool = True
) -> tuple[float, float, float]:
    """Seconds from ``tool/start`` to ``tool/result`` of a fresh ``-p`` session's first
    command (a fresh home: no shadow repository yet), from ``session/start`` to that
    ``tool/start`` (how early the command came), and from the process's launch to that
    ``tool/result`` (what the person waits in all). Not ``recorded``: ``PATH`` holds only
    ``bash``, so the session finds no git and takes no snapshots."""
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    env = _cli_env(base)
    if not recorded:
        bin_dir = base / "bin"
        bin_dir.mkdir()
        bash = shutil.which("bash")
        assert bash is not None
        (bin_dir / "bash").symlink_to(bash)
        env["PATH"] = str(bin_dir)
    with OpenAIServer() as server:
        server.agent_commands = ["true"]
        args = ["-p", "go", "--base-url", server.base_url, "--model", "m", "--approve", "auto"]
        args += ["--sandbox", "off", "--context-window", "100000"]
        launched = time.time()
        done = subprocess.run(
            [str(REEFLINE), *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, done.stderr
    [log] = (base / "home" / "sessions").glob("*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    opened = next(e["time"] for e in events if e["type"] == "session/start")
    start = next(e["time"] for e in events if e["type"] == "tool/start")
    result = next(e for e in events if e["type"] == "tool/result")
    assert (result["data"].get("files") is not None) == recorded, "recorded or not, as asked"
    return float(result["time"] - start), float(start - opened), float(result["time"] - launched)


async def _measure(root: Path, base: Path) -> dict[str, float]:
    bare_dir = base / "bare"
    bare_dir.mkdir()
    bare = BashTool(cwd=bare_dir, spill_dir=base / "s0", policy="auto")
    unrecorded: list[float] = []
    for _ in range(5):
        start = time.perf_counter()
        await bare.run({"command": "true"})
        unrecorded.append(time.perf_counter() - start)
    # A command coming as a model's first reply may, a second after the session opened.
    later_home = base / "home-later"
    recorder = Recorder(ShadowRepo(later_home, root))
    snap = BashTool(cwd=root, spill_dir=base / "s3", policy="auto", snapshots=recorder)
    recorder.start()
    await asyncio.sleep(REPLY_S)
    start = time.perf_counter()
    assert (await snap.run({"command": "true"})).files is not None
    after_reply = time.perf_counter() - start
    snap.close()
    shutil.rmtree(later_home)
    # The worst case: the command comes the moment the first snapshot starts.
    home = base / "home-worst"
    recorder = Recorder(ShadowRepo(home, root))
    snap = BashTool(cwd=root, spill_dir=base / "s1", policy="auto", snapshots=recorder)
    start = time.perf_counter()
    recorder.start()
    first = await snap.run({"command": "true"})
    at_start = time.perf_counter() - start
    assert first.files is not None and not first.files.changes
    shadow = recorder.repo.git_dir
    loose = subprocess.run(
        ["git", f"--git-dir={shadow}", "count-objects", "-v"],
        env=_git_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counted = dict(line.split(": ") for line in loose.splitlines())
    size = _size(shadow)
    with_times: list[float] = []
    without_times: list[float] = []
    for i in range(LATER):
        command = {"command": f"echo 'x = {i}' >> d{i % 40}/e{(i % 40) * 50}/f{i}.txt"}
        start = time.perf_counter()
        out = await snap.run(command)
        mid = time.perf_counter()
        await bare.run({"command": f"echo 'x = {i}' >> f{i}.txt"})
        end = time.perf_counter()
        assert out.files is not None and len(out.files.changes) == 1, out
        with_times.append(mid - start)
        without_times.append(end - mid)
    snap.close()
    return {
        "unrecorded_s": statistics.median(unrecorded),
        "at_start_s": at_start,
        "after_reply_s": after_reply,
        "first_seconds": recorder.first.seconds or 0.0,
        "shadow_bytes": size,
        "loose": float(counted["count"]),
        "packs": float(counted["packs"]),
        "later_ms": statistics.median(with_times) * 1000,
        "later_bare_ms": statistics.median(without_times) * 1000,
    }


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        root, base = Path(tmp, "work"), Path(tmp, "base")
        root.mkdir()
        base.mkdir()
        make_tree(root)
        runs = [headless_first_command(root, Path(tmp, f"cli{n}")) for n in range(RUNS)]
        headless = statistics.median(took for took, _, _ in runs)
        came = statistics.median(after for _, after, _ in runs)
        launch = statistics.median(whole for _, _, whole in runs)
        bare_runs = [
            headless_first_command(root, Path(tmp, f"bare{n}"), recorded=False) for n in range(RUNS)
        ]
        headless_bare = statistics.median(took for took, _, _ in bare_runs)
        launch_bare = statistics.median(whole for _, _, whole in bare_runs)
        measured = asyncio.run(_measure(root, base))
        baseline = packed_tree_size(root, Path(tmp, "plain.git"))
    bare = measured["unrecorded_s"]
    first_added = headless - headless_bare
    worst_added = measured["at_start_s"] - bare
    later_added = measured["later_ms"] - measured["later_bare_ms"]
    ratio = measured["shadow_bytes"] / baseline
    mib = 1024 * 1024
    return [
        Figure(
            group=GROUP,
            name=f"reefline -p, the session's first command (`true`), median of {RUNS} fresh "
            f"sessions, the server answering at once (the command came {came:.2f} s after "
            "the session started)",
            value=headless,
            unit="s",
            baseline_name=f"the same session and command, unrecorded (no git), median of {RUNS}",
            baseline_value=headless_bare,
            target=f"≤ {TARGET_FIRST_ADDED_S:g} s added (added: {first_added:.2f} s)",
            ok=first_added <= TARGET_FIRST_ADDED_S,
        ),
        Figure(
            group=GROUP,
            name="the same sessions from the process's launch to that command's result (the "
            "first snapshot begins as the command line is read, while the session loads)",
            value=launch,
            unit="s",
            baseline_name=f"the same, unrecorded, median of {RUNS}",
            baseline_value=launch_bare,
            target=f"none (added: {launch - launch_bare:.2f} s)",
        ),
        Figure(
            group=GROUP,
            name=f"the first command coming {REPLY_S:g} s after the session opened (a "
            "model's first reply; through the bash tool)",
            value=measured["after_reply_s"],
            unit="s",
            baseline_name="the same command, unrecorded",
            baseline_value=bare,
            target=f"≤ {TARGET_FIRST_ADDED_S:g} s added "
            f"(added: {measured['after_reply_s'] - bare:.2f} s)",
            ok=measured["after_reply_s"] - bare <= TARGET_FIRST_ADDED_S,
        ),
        Figure(
            group=GROUP,
            name="worst case: a command arriving the moment the first snapshot starts "
            f"(the snapshot alone took {measured['first_seconds']:.2f} s)",
            value=measured["at_start_s"],
            unit="s",
            baseline_name="the same command, unrecorded",
            baseline_value=bare,
            target=f"none (added: {worst_added:.2f} s)",
        ),
        Figure(
            group=GROUP,
            name=f"later commands, each editing one file, median of {LATER}",
            value=measured["later_ms"],
            unit="ms",
            baseline_name="the same command, unrecorded",
            baseline_value=measured["later_bare_ms"],
            target=f"≤ {TARGET_LATER_ADDED_MS:g} ms added (added: {later_added:.1f} ms)",
            ok=later_added <= TARGET_LATER_ADDED_MS,
        ),
        Figure(
            group=GROUP,
            name=f"shadow repository after the first snapshot ({measured['packs']:g} pack, "
            f"{measured['loose']:g} loose objects)",
            value=measured["shadow_bytes"] / mib,
            unit="MiB",
            baseline_name="the tree packed (a plain repository of it after git gc)",
            baseline_value=baseline / mib,
            target=f"ratio ≤ {TARGET_SIZE_RATIO:g}",
            ok=ratio <= TARGET_SIZE_RATIO,
        ),
    ]
