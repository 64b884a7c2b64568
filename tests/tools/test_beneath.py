"""tools.beneath on real files: no component is followed through a link, a file is made
only new, only regular files are read and never past the limit."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import beneath


@pytest.fixture
def root(tmp_path: Path) -> Iterator[int]:
    (tmp_path / "work" / "a").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "work" / "to-outside").symlink_to(tmp_path / "outside")
    fd = beneath.open_root(tmp_path / "work")
    yield fd
    os.close(fd)


def test_a_link_on_the_way_is_refused_and_nothing_is_made_beyond_it(
    root: int, tmp_path: Path
) -> None:
    with pytest.raises(beneath.NotAFolder, match="to-outside is a symlink"):
        beneath.open_folder(root, ["to-outside", "new"], create=0o755)
    assert list((tmp_path / "outside").iterdir()) == []
    with (
        beneath.folder(root, ["a", "b", "c"], create=0o755) as made,
        beneath.create(made, "f") as f,
    ):
        f.write(b"x")
    assert (tmp_path / "work" / "a" / "b" / "c" / "f").read_bytes() == b"x"


def test_the_root_itself_is_walked_without_following_a_link(tmp_path: Path) -> None:
    (tmp_path / "via").symlink_to(tmp_path / "outside", target_is_directory=True)
    (tmp_path / "outside").mkdir()
    with pytest.raises(beneath.NotAFolder):
        beneath.open_root(tmp_path / "via")


def test_a_taken_name_is_never_opened_for_writing(root: int, tmp_path: Path) -> None:
    (tmp_path / "outside" / "target").write_text("keep")
    beneath.symlink(root, str(tmp_path / "outside" / "target"), "planted")
    with pytest.raises(FileExistsError):
        beneath.create(root, "planted")
    beneath.unlink(root, "planted")
    assert (tmp_path / "outside" / "target").read_text() == "keep"


def test_only_regular_files_are_read_within_the_limit(root: int, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "big").write_bytes(b"x" * 100)
    os.mkfifo(work / "fifo")
    (work / "zero").symlink_to("/dev/zero")
    assert beneath.read_regular(root, "big", 10) == b"x" * 10
    assert beneath.read_regular(root, "fifo", 10) is None
    assert beneath.read_regular(root, "zero", 10) is None
    assert beneath.read_regular(root, "missing", 10) is None
    assert beneath.read_beneath(work, ["a", "..", "big"], 10) is None
    assert beneath.read_beneath(work, ["to-outside", "x"], 10) is None


def test_names_with_a_slash_or_dots_are_refused(root: int) -> None:
    for bad in ("", ".", "..", "a/b"):
        with pytest.raises(ValueError):
            beneath.create(root, bad)


def test_a_file_opened_for_streaming_is_regular_and_reached_through_no_link(
    root: int, tmp_path: Path
) -> None:
    from tools.snapshots import stubs

    work = tmp_path / "work"
    (work / "a" / "data.bin").write_bytes(b"\0data")
    (tmp_path / "outside" / "secret.bin").write_bytes(b"\0private")
    os.mkfifo(work / "fifo")
    with beneath.regular_beneath(work, ["a", "data.bin"]) as f:
        assert f is not None and f.read() == b"\0data"
    for parts in (["to-outside", "secret.bin"], ["fifo"], ["a", "missing"], []):
        with beneath.regular_beneath(work, parts) as f:
            assert f is None, parts
    # Hashing a file recorded by hash goes the same way: never through a folder swapped for
    # a link to somewhere else.
    assert stubs.file_sha256(work / "a" / "data.bin") is not None
    assert stubs.file_sha256(work / "to-outside" / "secret.bin") is None
    assert stubs.file_sha256(work / "fifo") is None
