"""Pure text helpers shared by the Textual app and the plain REPL (no Textual import).

Everything shown to a person that came from a model, a command or a file goes through
:func:`clean` first: the one terminal-safety filter (:mod:`tools.terminal`) writes escape
sequences, control and invisible characters as visible escapes, so they can neither break
the layout nor reach the terminal, and nothing is hidden.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from tools import footer
from tools.bash_call import command_of
from tools.terminal import has_unsafe, visible

if TYPE_CHECKING:
    from tools.bash import BashTool


def clean(text: str) -> str:
    """``text`` safe for a terminal, with nothing hidden: every control, escape, bidi and
    zero-width character is shown as its escape notation (:mod:`tools.terminal`); ``\n``
    and ``\t`` stay, and a ``\r\n`` line end becomes ``\n``."""
    if not text:
        return ""
    return visible(text.replace("\r\n", "\n"))


def command_shape(command: str) -> str | None:
    """What a person should know about a command before approving it that its first line
    does not show: its line count, empty lines, characters shown as escapes."""
    notes = []
    lines = command.split("\n")
    if len(lines) > 1:
        empty = sum(1 for line in lines if not line.strip())
        notes.append(f"{len(lines)} lines" + (f", {empty} of them empty" if empty else ""))
    if has_unsafe(command):
        notes.append("control or invisible characters, shown as \\x… / \\u… escapes")
    return " · ".join(notes) or None


def is_blank(line: str) -> bool:
    """A line of nothing but spaces and tabs (other whitespace, ``\x0b`` or ``\u2028``
    say, is a character to show)."""
    return not line.strip(" \t")


def command_rows(command: str) -> list[tuple[int, str, int]]:
    """The rows a command of several lines is shown in: ``(number, line, 0)`` for each line
    (``number`` counts from 1), except that a run of two or more blank lines is one row
    ``(first number, words, count)`` whose words say what it stands for (``⋮ 80 empty
    lines``), so that empty lines cannot push what runs out of view. The numbers keep the
    display honest: the row after a run is numbered past it. Display only: what runs is
    the command itself."""
    lines = command.split("\n")
    rows: list[tuple[int, str, int]] = []
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and is_blank(lines[end]):
            end += 1
        run = lines[start:end]
        if len(run) >= 2:
            kind = "empty lines" if not any(run) else "blank lines (spaces and tabs only)"
            rows.append((start + 1, f"⋮ {len(run)} {kind}", len(run)))
            start = end
        else:
            rows.append((start + 1, lines[start], 0))
            start += 1
    return rows


def command_lines(command: str, indent: str = "  ") -> list[str]:
    """``command`` as the line front ends print it: ``$ command`` with its escapes written
    out, or, when it has several lines, one numbered row each (:func:`command_rows`)."""
    if "\n" not in command:
        return [f"{indent}$ {visible(command)}"]
    width = len(str(command.count("\n") + 1))
    return [
        f"{indent}{number:>{width}} │ {visible(line)}" for number, line, _ in command_rows(command)
    ]


def sandbox_label(bash: BashTool) -> str:
    """The status line's words for the sandbox the next command runs under:
    ``sandbox workspace-write``, ``sandbox read-only + network``, ``sandbox off``, or
    ``no sandbox`` when none can be had."""
    if not bash.sandbox.availability.available:
        return "no sandbox"
    mode = bash.sandbox_mode
    network = " + network" if mode != "off" and bash.sandbox.network else ""
    return f"sandbox {mode}{network}"


def short_path(path: str) -> str:
    """``path`` written from ``~`` when it is under the home directory (``~/src/shop``)."""
    home = os.path.expanduser("~")
    if home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def home_relative(text: str) -> str:
    """``text`` with every path under the home directory written from ``~``, for a line
    reefline itself words (a context notice), never for a command or its output."""
    home = os.path.expanduser("~")
    if home == "/":
        return text
    return re.sub(re.escape(home) + r"(?=/|$|[\s:;,'\"`)\]])", "~", text)


def first_line(text: str, limit: int = 80) -> str:
    """The first non-empty line of ``text``, cleaned and cut to ``limit`` characters."""
    line = next((ln.strip() for ln in clean(text).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def ended(exit_code: int | None) -> str:
    """How a call that was no error ended: ``exit N`` for a command, ``done`` for a tool
    that has no exit code (an MCP tool)."""
    return "done" if exit_code is None else f"exit {exit_code}"


def strip_footer(output: str) -> str:
    """Command output without the bash tool's last ``[exit 0 · 0.01s]`` line (the tool card
    shows the exit code and duration itself)."""
    return footer.strip(output)


def raw_command(arguments: str) -> str:
    """The ``command`` of a bash call's raw JSON arguments, exactly as it will run (the raw
    text if it is not JSON). Unsafe to print: show it through :func:`visible`."""
    command = command_of(arguments)
    return arguments if command is None else command


def bash_command(arguments: str) -> str:
    """:func:`raw_command`, safe to print: every character shown, none hidden."""
    return visible(raw_command(arguments))
