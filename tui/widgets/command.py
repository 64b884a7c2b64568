"""A command as a person must see it before it runs: byte for byte, every line.

Characters a terminal would act on or hide (controls, escapes, bidi and zero-width marks) are
shown as their escape notation and highlighted; a command of several lines is numbered, so
empty lines cannot push the rest out of sight unnoticed.
"""

from __future__ import annotations

from textual.content import Content

from tools.terminal import visible_parts

ESCAPE_STYLE = "bold underline $text-error"


def command_content(command: str, prompt: str = "$ ") -> Content:
    """``command`` with its escapes highlighted; numbered lines when it has more than one."""
    lines = command.split("\n")
    width = len(str(len(lines)))
    rendered = []
    for number, line in enumerate(lines, 1):
        parts: list[tuple[str, str]] = []
        if len(lines) > 1:
            parts.append((f"{number:>{width}} │ ", "$text-muted"))
        elif prompt:
            parts.append((prompt, ""))
        parts += [
            (piece, ESCAPE_STYLE if escaped else "") for piece, escaped in visible_parts(line)
        ]
        rendered.append(Content.assemble(*parts))
    return Content("\n").join(rendered)
