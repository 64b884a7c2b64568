"""The edit tool's text work, on strings only: where ``old_string`` is, the new text, the
unified diff shown for approval, and the short account the model gets back. Nothing here
touches a file (:mod:`tools.edit.files` does)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from tools.question import ProposedEdit

LISTED_MATCHES = 20
"""Line numbers named when ``old_string`` is found several times."""
NEAREST_FROM_LINES = 5_000
"""Files longer than this get no "nearest line" hint (comparing every line costs too much)."""
NEAREST_LONGEST = 1_000
"""Longer lines are not compared (a minified file's one line)."""
NEAREST_RATIO = 0.6
CONTEXT_LINES = 2
"""Unchanged lines shown around a change in the result."""
SHOWN_LINES = 16
"""At most this many lines of the new file in the result."""
LINE_CHARS = 200
"""A line of the result longer than this is cut."""


@dataclass(frozen=True)
class Replaced:
    """The file's new text, and how many places changed."""

    text: str
    count: int


def replace(text: str, old: str, new: str, replace_all: bool) -> Replaced | str:
    """``text`` with ``old`` replaced by ``new`` (every occurrence with ``replace_all``, else
    the only one), or the sentence telling the model why not: not found (with the nearest
    line when it is cheap to find), or found several times (how often, and where). A file
    with CRLF line ends matches an ``old`` written with LF ones (and ``new`` gets CRLF)."""
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\r" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        return (
            "`old_string` was not found in the file (it must match exactly, whitespace and "
            "indentation included)." + _nearest(text, old)
        )
    if count > 1 and not replace_all:
        lines = match_lines(text, old)
        listed = ", ".join(map(str, lines[:LISTED_MATCHES])) + (
            ", …" if count > LISTED_MATCHES else ""
        )
        return (
            f"`old_string` was found {count} times (lines {listed}): give more surrounding "
            "text so that it matches once, or set `replace_all` to change them all."
        )
    return Replaced(text.replace(old, new) if replace_all else text.replace(old, new, 1), count)


def match_lines(text: str, old: str) -> list[int]:
    """The line (1-based) where each occurrence of ``old`` begins."""
    lines: list[int] = []
    line, scanned, at = 1, 0, text.find(old)
    while at != -1:
        line += text.count("\n", scanned, at)
        scanned = at
        lines.append(line)
        at = text.find(old, at + len(old))
    return lines


def _nearest(text: str, old: str) -> str:
    """`` The nearest line is 12: `…`.`` for the line most like ``old``'s first non-blank
    line, when one is alike enough and the file is short enough to look; else ``""``."""
    wanted = next((line.strip() for line in old.splitlines() if line.strip()), "")
    lines = text.splitlines()
    if not wanted or len(lines) > NEAREST_FROM_LINES:
        return ""
    best, best_ratio = 0, NEAREST_RATIO
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted)
    for number, line in enumerate(lines, 1):
        if len(line) > NEAREST_LONGEST:
            continue  # comparing it costs its length times the wanted line's
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() > best_ratio and matcher.quick_ratio() > best_ratio:
            ratio = matcher.ratio()
            if ratio > best_ratio:
                best, best_ratio = number, ratio
    if not best:
        return ""
    return f" The nearest line is {best}: {_cut(lines[best - 1])!r}."


def proposal(path: str, before: str | None, after: str) -> ProposedEdit:
    """The diff of ``before`` (None: the file does not exist) and ``after``, every line."""
    old = before.splitlines(keepends=True) if before is not None else []
    new = after.splitlines(keepends=True)
    source = "/dev/null" if before is None else f"a/{path}"
    lines = [f"diff --git a/{path} b/{path}\n"]
    if before is None:
        lines.append("new file mode 100644\n")
    added = removed = 0
    for number, line in enumerate(difflib.unified_diff(old, new, source, f"b/{path}", n=3)):
        if number >= 2:  # the first two are the ---/+++ headers
            added += line[:1] == "+"
            removed += line[:1] == "-"
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return ProposedEdit(path, "".join(lines), before is None, added, removed)


def account(path: str, before: str | None, after: str, count: int) -> str:
    """What the model is told of a written edit: the path, the lines changed and a few lines
    of the new text around them, numbered."""
    new = after.splitlines()
    if before is None:
        return f"Created {path} ({len(new)} lines)."
    old = before.splitlines()
    spans = [
        (j1, j2, i2 - i1)
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
            None, old, new, autojunk=False
        ).get_opcodes()
        if tag != "equal"
    ]
    added = sum(j2 - j1 for j1, j2, _ in spans)
    removed = sum(gone for _, _, gone in spans)
    where = ", ".join(_span(j1, j2) for j1, j2, _ in spans[:LISTED_MATCHES])
    where += ", …" if len(spans) > LISTED_MATCHES else ""
    places = f"{count} replacements; " if count > 1 else ""
    head = f"Edited {path}: {places}{_lines_word(spans)} {where} (+{added} −{removed})."
    return "\n".join([head, *_context(new, spans)])


def _lines_word(spans: list[tuple[int, int, int]]) -> str:
    one = len(spans) == 1 and spans[0][1] - spans[0][0] <= 1
    return "line" if one else "lines"


def _span(j1: int, j2: int) -> str:
    if j2 - j1 <= 1:
        return str(j1 + 1)
    return f"{j1 + 1}-{j2}"


def _context(new: list[str], spans: list[tuple[int, int, int]]) -> list[str]:
    """The new file's lines around the changes, numbered, at most :data:`SHOWN_LINES`."""
    wanted: set[int] = set()
    for j1, j2, _ in spans:
        wanted.update(
            range(max(0, j1 - CONTEXT_LINES), min(len(new), max(j2, j1 + 1) + CONTEXT_LINES))
        )
        if len(wanted) > SHOWN_LINES:
            break  # the rest would not be shown
    shown = sorted(wanted)
    out: list[str] = []
    width = len(str(max(shown, default=0) + 1))
    last = None
    for n in shown[:SHOWN_LINES]:
        if last is not None and n != last + 1:
            out.append(" " * width + " …")
        out.append(f"{n + 1:>{width}} {_cut(new[n])}")
        last = n
    if len(shown) > SHOWN_LINES:
        out.append(" " * width + " …")
    return out


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "…"
