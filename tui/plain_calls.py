"""A tool call and its result as the line front end prints them: ``$ command`` (every line
of it written out) or ``edit app.py`` for a tool that runs no command; then its exit, time
and line count, or its error, or an edit's first line, and the files it changed."""

from __future__ import annotations

from agent.formatting import fmt_duration, plural
from agent.log.events import ToolResultData
from tools.footer import output_lines
from tui.text import command_lines, first_line
from tui.view.changes import plain_lines
from tui.view.items import ToolRun


def call_lines(item: ToolRun) -> list[str]:
    """``$ command`` for a bash call (:func:`tui.text.command_lines`), ``edit app.py`` for
    another tool's."""
    if item.name == "bash":
        return command_lines(item.command, "")
    return [f"{item.name} {first_line(item.command, 200)}"]


def result_lines(data: ToolResultData) -> list[str]:
    """The result's line, then the files it changed (none for an error without an exit)."""
    if data.is_error and data.exit_code is None:
        return [f"  ! {first_line(data.content, 160)}"]
    if data.exit_code is None:  # a tool that runs no command (edit): its first line
        return [f"  {first_line(data.content, 160)}", *plain_lines(data.files)]
    took = f" · {fmt_duration(data.duration_s)}" if data.duration_s is not None else ""
    said = f"  exit {data.exit_code}{took} · {plural(output_lines(data.content), 'line')}"
    return [said, *plain_lines(data.files)]
