"""A restore racing a process that swaps a folder of the working directory with a symlink to
a folder outside it (the attack of the trust issue, run for real): a path may fail, nothing
is ever written outside."""

from __future__ import annotations

from pathlib import Path

from tests.swapper import swapping, written_outside
from tools.snapshots.restore import restore
from tools.snapshots.shadow import ShadowRepo, SnapshotUnavailable

ROUNDS = 4
PATHS = [f"d/f{i:03}.txt" for i in range(300)] + [f"d/sub/g{i:03}.txt" for i in range(300)]


def test_a_folder_swapped_for_a_link_mid_restore_never_takes_a_write_outside(
    tmp_path: Path,
) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "d" / "sub").mkdir(parents=True)
    outside.mkdir()
    for path in PATHS:
        (work / path).write_text("recorded\n")
    repo = ShadowRepo(tmp_path / "home", work)
    recorded = repo.snapshot()
    for n in range(ROUNDS):
        for path in PATHS:
            (work / path).write_text(f"changed {n}\n")
        with swapping(work / "d", outside):
            try:
                report = restore(repo, dict.fromkeys(PATHS, recorded), {})
            except SnapshotUnavailable:  # the snapshot after: git met the swapping too
                report = None
        assert written_outside(outside) == [], f"round {n}"
        if report is None:
            continue
        assert sorted([*report.restored, *report.refused]) == sorted(PATHS)
        for path in report.restored:
            assert (work / path).read_text() == "recorded\n"
        for why in report.refused.values():
            assert "not followed" in why or "could not be written" in why, why
