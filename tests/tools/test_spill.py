"""The spill folder's rules (tools/spill.py) on real files: links planted at a name or on
the way are never followed, and a folder others may write is refused with a message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.bash import BashTool
from tools.spill import SpillFolder, UnsafeFolder


def test_a_taken_name_is_never_opened_for_writing_and_a_link_is_removed_not_followed(
    tmp_path: Path,
) -> None:
    target = tmp_path / "target"
    target.write_text("precious\n")
    folder = SpillFolder(tmp_path / "spill")
    folder.fd()
    (tmp_path / "spill" / "x").symlink_to(target)
    with pytest.raises(FileExistsError):
        folder.create("x")
    assert not folder.holds_file("x") and folder.read("x", 100) is None
    folder.remove("x")
    assert target.read_text() == "precious\n" and not (tmp_path / "spill" / "x").exists()
    with pytest.raises(ValueError):
        folder.create("../escape")


def test_a_folder_swapped_for_a_link_after_opening_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "1").write_text("keep\n")
    folder = SpillFolder(tmp_path / "spill")
    records = folder.child("records")
    records.fd()
    (tmp_path / "spill" / "records").rename(tmp_path / "moved")
    (tmp_path / "spill" / "records").symlink_to(outside)
    records.remove("1")
    assert (outside / "1").read_text() == "keep\n"


@pytest.mark.parametrize("how", ["a symlink on the way", "writable by others"])
async def test_an_unsafe_output_folder_stops_the_command_with_a_message(
    tmp_path: Path, how: str
) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    spill = tmp_path / "spill"
    if how == "a symlink on the way":
        spill.symlink_to(real)
    else:
        spill.mkdir()
        os.chmod(spill, 0o777)
    tool = BashTool(cwd=tmp_path, spill_dir=spill, policy="auto")
    out = await tool.run({"command": "touch ran"})
    assert out.is_error and "output folder" in out.content
    assert not (tmp_path / "ran").exists()
    with pytest.raises(UnsafeFolder):
        SpillFolder(spill).fd()
