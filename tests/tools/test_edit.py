"""The edit tool on real files in tmp_path, its approval coming from a real bash tool (the
gate): the semantics the model relies on, the refusals, and the attacks (a symlink on the
way, a path outside the workspace, the file changed while the person read the diff)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tools.base import ApprovalDecision, ProposedEdit
from tools.bash import BashTool
from tools.edit.text import proposal
from tools.edit.tool import EditTool


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def make(work: Path, tmp_path: Path, policy: Any = "auto", **kw: Any) -> EditTool:
    max_bytes = kw.pop("max_bytes", 1_000_000)
    bash = BashTool(cwd=work, spill_dir=tmp_path / "spill", policy=policy, **kw)
    return EditTool(workspace=work, gate=bash, max_bytes=max_bytes)


async def edit(tool: EditTool, path: str, old: str, new: str, **more: Any) -> Any:
    return await tool.run({"path": path, "old_string": old, "new_string": new, **more})


async def test_replaces_the_one_match_and_tells_the_lines(work: Path, tmp_path: Path) -> None:
    (work / "app.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\n")
    out = await edit(make(work, tmp_path), "app.py", "b = 2", "b = 20")
    assert not out.is_error, out.content
    assert (work / "app.py").read_text() == "a = 1\nb = 20\nc = 3\nd = 4\n"
    assert out.content.splitlines()[0] == "Edited app.py: line 2 (+1 −1)."
    assert "2 b = 20" in out.content and "1 a = 1" in out.content


async def test_no_match_says_so_with_the_nearest_line(work: Path, tmp_path: Path) -> None:
    (work / "app.py").write_text("def main():\n    return compute(1)\n")
    out = await edit(make(work, tmp_path), "app.py", "return compute(2)", "x")
    assert out.is_error
    assert "not found" in out.content and "nearest line is 2" in out.content
    assert (work / "app.py").read_text() == "def main():\n    return compute(1)\n"


async def test_several_matches_need_replace_all(work: Path, tmp_path: Path) -> None:
    (work / "t.txt").write_text("x\ny\nx\nz\nx\n")
    tool = make(work, tmp_path)
    out = await edit(tool, "t.txt", "x", "w")
    assert out.is_error and "found 3 times (lines 1, 3, 5)" in out.content
    assert (work / "t.txt").read_text() == "x\ny\nx\nz\nx\n"
    out = await edit(tool, "t.txt", "x", "w", replace_all=True)
    assert not out.is_error and (work / "t.txt").read_text() == "w\ny\nw\nz\nw\n"
    assert "3 replacements" in out.content


async def test_empty_old_string_creates_only_a_new_file(work: Path, tmp_path: Path) -> None:
    tool = make(work, tmp_path)
    out = await edit(tool, "pkg/new.txt", "", "hello\n")
    assert not out.is_error, out.content
    assert (work / "pkg" / "new.txt").read_text() == "hello\n"
    again = await edit(tool, "pkg/new.txt", "", "other\n")
    assert again.is_error and "already exists" in again.content
    assert (work / "pkg" / "new.txt").read_text() == "hello\n"
    missing = await edit(tool, "nope.txt", "a", "b")
    assert missing.is_error and "does not exist" in missing.content


async def test_binary_and_oversize_files_are_refused(work: Path, tmp_path: Path) -> None:
    (work / "blob.bin").write_bytes(b"ab\0cd")
    (work / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (work / "big.txt").write_text("y\n" * 600)
    tool = make(work, tmp_path, max_bytes=1_000)
    out = await edit(tool, "blob.bin", "ab", "xy")
    assert out.is_error and "binary" in out.content
    out = await edit(tool, "latin.txt", "caf", "tea")
    assert out.is_error and "not UTF-8" in out.content
    out = await edit(tool, "big.txt", "y", "n", replace_all=True)
    assert out.is_error and "too large" in out.content and "1,200 bytes" in out.content
    assert (work / "blob.bin").read_bytes() == b"ab\0cd"


async def test_crlf_file_matches_lf_text_and_keeps_its_line_ends(
    work: Path, tmp_path: Path
) -> None:
    (work / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = await edit(make(work, tmp_path), "w.txt", "one\ntwo", "uno\ndos")
    assert not out.is_error, out.content
    assert (work / "w.txt").read_bytes() == b"uno\r\ndos\r\nthree\r\n"


async def test_mode_is_kept(work: Path, tmp_path: Path) -> None:
    script = work / "run.sh"
    script.write_text("echo a\n")
    script.chmod(0o750)
    await edit(make(work, tmp_path), "run.sh", "a", "b")
    assert script.stat().st_mode & 0o777 == 0o750


@pytest.mark.parametrize(
    "path", ["../outside.txt", "/etc/passwd", "sub/../../outside.txt", ".", "sub/"]
)
async def test_nothing_outside_the_workspace(work: Path, tmp_path: Path, path: str) -> None:
    (tmp_path / "outside.txt").write_text("secret\n")
    (work / "sub").mkdir()
    out = await edit(make(work, tmp_path), path, "", "pwned\n")
    assert out.is_error
    assert (tmp_path / "outside.txt").read_text() == "secret\n"


async def test_absolute_path_inside_the_workspace_is_fine(work: Path, tmp_path: Path) -> None:
    (work / "a.txt").write_text("1\n")
    out = await edit(make(work, tmp_path), str(work / "a.txt"), "1", "2")
    assert not out.is_error and (work / "a.txt").read_text() == "2\n"


async def test_symlinks_are_never_followed(work: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("keep\n")
    (work / "link.txt").symlink_to(outside / "target.txt")
    (work / "dir").symlink_to(outside)
    tool = make(work, tmp_path)
    out = await edit(tool, "link.txt", "keep", "pwned")
    assert out.is_error and "symlink" in out.content
    out = await edit(tool, "dir/target.txt", "keep", "pwned")
    assert out.is_error and "symlink" in out.content
    out = await edit(tool, "dir/new.txt", "", "pwned")
    assert out.is_error
    assert (outside / "target.txt").read_text() == "keep\n"
    assert sorted(os.listdir(outside)) == ["target.txt"]


async def test_the_diff_shown_is_what_is_written(work: Path, tmp_path: Path) -> None:
    (work / "app.py").write_text("x = 1\ny = 2")  # no final newline
    shown: list[ProposedEdit] = []

    async def approve(asked: str | ProposedEdit) -> ApprovalDecision:
        assert isinstance(asked, ProposedEdit)
        shown.append(asked)
        return "once"

    out = await edit(
        make(work, tmp_path, policy="ask", approver=approve), "app.py", "y = 2", "y = 3"
    )
    assert not out.is_error and out.approval == "once"
    [asked] = shown
    assert asked.diff == (
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n x = 1\n"
        "-y = 2\n\\ No newline at end of file\n+y = 3\n\\ No newline at end of file\n"
    )
    assert (asked.added, asked.removed) == (1, 1)
    assert (work / "app.py").read_text() == "x = 1\ny = 3"


async def test_file_changed_while_the_person_read_the_diff_is_not_written(
    work: Path, tmp_path: Path
) -> None:
    """The attack: what was approved is not what would be written any more (a command left
    running, or another process, changed the file while the question was up)."""
    (work / "conf.py").write_text("debug = False\n")

    async def approve_after_a_swap(asked: str | ProposedEdit) -> ApprovalDecision:
        (work / "conf.py").write_text("debug = False\nrun_evil()\n")
        return "once"

    tool = make(work, tmp_path, policy="ask", approver=approve_after_a_swap)
    out = await edit(tool, "conf.py", "debug = False", "debug = True")
    assert out.is_error and "changed since the diff was shown" in out.content
    assert (work / "conf.py").read_text() == "debug = False\nrun_evil()\n"
    assert [p for p in os.listdir(work) if "reefline-edit" in p] == []


async def test_folder_swapped_for_a_link_while_asking_is_not_followed(
    work: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("a\n")
    (work / "sub").mkdir()
    (work / "sub" / "f.txt").write_text("a\n")

    async def swap(asked: str | ProposedEdit) -> ApprovalDecision:
        (work / "sub" / "f.txt").unlink()
        (work / "sub").rmdir()
        (work / "sub").symlink_to(outside)
        return "once"

    out = await edit(make(work, tmp_path, policy="ask", approver=swap), "sub/f.txt", "a", "b")
    assert out.is_error
    assert (outside / "f.txt").read_text() == "a\n"


async def test_policy_and_sandbox(work: Path, tmp_path: Path) -> None:
    (work / "a.txt").write_text("1\n")
    denied = await edit(make(work, tmp_path, policy="deny"), "a.txt", "1", "2")
    assert denied.is_error and "denies" in denied.content
    nobody = await edit(make(work, tmp_path, policy="ask"), "a.txt", "1", "2")
    assert nobody.is_error and "no one can approve" in nobody.content

    async def no(asked: str | ProposedEdit) -> ApprovalDecision:
        return "deny"

    declined = await edit(make(work, tmp_path, policy="ask", approver=no), "a.txt", "1", "2")
    assert declined.is_error and "declined" in declined.content

    async def always(asked: str | ProposedEdit) -> ApprovalDecision:
        return "always"

    tool = make(work, tmp_path, policy="ask", approver=always)
    out = await edit(tool, "a.txt", "1", "2")
    assert out.approval == "always" and tool.gate.policy == "auto"
    assert (work / "a.txt").read_text() == "2\n"


def test_proposal_of_a_new_file() -> None:
    made = proposal("n.txt", None, "a\nb\n")
    assert made.creates and made.added == 2
    assert made.diff.startswith("diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n")
    assert "+a\n+b\n" in made.diff


async def test_a_hard_link_to_a_file_outside_is_not_written_through(
    work: Path, tmp_path: Path
) -> None:
    """The edit writes a new file and renames it over the name: a hard link planted in the
    workspace to a file outside it leaves that file as it was."""
    outside = tmp_path / "secret.txt"
    outside.write_text("token = 1\n")
    os.link(outside, work / "linked.txt")
    out = await edit(make(work, tmp_path), "linked.txt", "token = 1", "token = 2")
    assert not out.is_error, out.content
    assert outside.read_text() == "token = 1\n"
    assert (work / "linked.txt").read_text() == "token = 2\n"


async def test_a_file_that_appeared_while_asking_is_not_overwritten(
    work: Path, tmp_path: Path
) -> None:
    async def plant(asked: str | ProposedEdit) -> ApprovalDecision:
        assert isinstance(asked, ProposedEdit) and asked.creates
        (work / "new.txt").write_text("planted\n")
        return "once"

    out = await edit(make(work, tmp_path, policy="ask", approver=plant), "new.txt", "", "mine\n")
    assert out.is_error and "appeared since the diff was shown" in out.content
    assert (work / "new.txt").read_text() == "planted\n"
