"""A command as a person must see it before it runs: byte for byte, every line.

Characters a terminal would act on or hide (controls, escapes, bidi and zero-width marks) are
shown as their escape notation and highlighted; a command of several lines is numbered, and
a run of empty lines is one numbered row saying how many, so empty lines cannot push what
runs out of sight.
"""

from __future__ import annotations

from textual.content import Content

from tools.terminal import visible_parts
from tui.text import command_rows

ESCAPE_STYLE = "bold underline $text-error"


def command_content(command: str, prompt: str = "$ ") -> Content:
    """``command`` with its escapes highlighted; numbered lines when it has more than one,
    a run of blank lines shown as one numbered row saying how many (:func:`command_rows`)."""
    if "\n" not in command:
        parts = [(prompt, "")] if prompt else []
        return Content.assemble(*parts, *_line(command))
    width = len(str(command.count("\n") + 1))
    rendered = []
    for number, line, run in command_rows(command):
        head = (f"{number:>{width}} │ ", "$text-muted")
        if run:
            rendered.append(Content.assemble(head, (line, "italic $text-warning")))
        else:
            rendered.append(Content.assemble(head, *_line(line)))
    return Content("\n").join(rendered)


def _line(line: str) -> list[tuple[str, str]]:
    return [(piece, ESCAPE_STYLE if escaped else "") for piece, escaped in visible_parts(line)]
