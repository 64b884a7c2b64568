"""The plain REPL's lines for what the log's view holds: a tool call (``$ command``, every
line of it written out, or ``edit app.py`` for a tool that runs no command) and its result,
and the recap a resumed session opens with. Raw text: the REPL prints each line through the
terminal filter."""

from __future__ import annotations

from collections.abc import Sequence

from agent.formatting import fmt_duration, plural
from agent.log.events import ToolResultData
from tools.footer import output_lines
from tui.text import clean, command_lines, first_line
from tui.view.changes import plain_lines
from tui.view.items import Answer, Prompt, ToolRun, recap_entries

LIVE_LINES = 20
"""Lines of a running command's output the REPL prints as they come."""
RECAP_ENTRIES = 6
"""How many of the last prompts, commands and answers a resumed session shows first."""
RECAP_ANSWER_LINES = 8
"""How many lines of an answer the recap shows."""


def call_lines(item: ToolRun) -> list[str]:
    """``$ command`` for a bash call (:func:`tui.text.command_lines`), ``edit app.py`` for
    another tool's."""
    if item.name == "bash":
        return command_lines(item.command, "")
    return [f"{item.name} {first_line(item.command, 200)}"]


def result_lines(data: ToolResultData) -> list[str]:
    """A finished call's result: a command's exit code, time and output size, another tool's
    first line (an edit's, an MCP tool's), then the files it changed; or why it did not run."""
    if data.is_error and data.exit_code is None:
        return [f"  ! {first_line(data.content, 160)}"]
    if data.exit_code is None:  # a tool that runs no command
        return [f"  {first_line(data.content, 160)}", *plain_lines(data.files)]
    took = f" · {fmt_duration(data.duration_s)}" if data.duration_s is not None else ""
    size = plural(output_lines(data.content), "line")
    return [f"  exit {data.exit_code}{took} · {size}", *plain_lines(data.files)]


def recap_lines(items: Sequence[object]) -> list[str]:
    """A resumed session's last few entries (prompts, commands, answers), so the user sees
    where the conversation stood (the app shows them in its transcript); none for a session
    that has none."""
    entries = recap_entries(items)
    if not entries:
        return []
    recent = entries[-RECAP_ENTRIES:]
    lines = [f"Earlier in this session (the last {len(recent)} of {len(entries)} entries):"]
    for item in recent:
        if isinstance(item, Prompt):
            lines.append(f"› {first_line(item.text, 200)}")
        elif isinstance(item, ToolRun):
            lines += call_lines(item)
            if item.result is not None and not item.pruned:
                lines += result_lines(item.result)
        elif isinstance(item, Answer):
            answer = clean(item.text).rstrip().splitlines()
            lines += answer[:RECAP_ANSWER_LINES]
            if len(answer) > RECAP_ANSWER_LINES:
                lines.append(f"  … ({len(answer) - RECAP_ANSWER_LINES} more lines)")
    return [*lines, "── end of the earlier entries ──"]


def live_lines(text: str, shown: int) -> tuple[list[str], int]:
    """A running command's output as it comes, line by line, up to :data:`LIVE_LINES` lines
    a command (the result line follows; the full output is in the log): the lines to print
    of ``text`` when ``shown`` came before it, and how many have come with it."""
    lines = clean(text).rstrip("\n").split("\n")
    out = [f"  │ {line}" for line in lines[: max(0, LIVE_LINES - shown)]]
    if shown < LIVE_LINES <= shown + len(lines):
        out.append("  │ … (more output; the result says how much)")
    return out, shown + len(lines)
