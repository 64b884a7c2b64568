"""The one terminal-safety filter: text from a model, a command, a file or a server, made safe
to show on a terminal without hiding anything.

Nothing is removed. Every character that could move the cursor, change the terminal's state,
reorder or hide text — C0 controls but newline and tab, DEL, C1 controls (ESC and the 8-bit
CSI among them), bidirectional overrides and isolates, zero-width characters, line and
paragraph separators — is replaced by its escape notation (``\\x1b``, ``\\u202e``), so what a
person reads is, character for character, what the text holds. :func:`visible_parts` tells
the notations apart from the text around them, for a front end that styles them.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but \t and \n, DEL, C1
    "\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff"  # bidi, zero-width
    "]"
)


def notation(char: str) -> str:
    """``\\x1b`` for a character below U+0100, ``\\u202e`` above."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every unsafe character written as its escape notation."""
    return _UNSAFE.sub(lambda m: notation(m.group()), text)


def visible_parts(text: str) -> list[tuple[str, bool]]:
    """``text`` as ``(piece, is_notation)`` pairs: the same characters as :func:`visible`,
    with each escape notation a piece of its own."""
    parts: list[tuple[str, bool]] = []
    last = 0
    for match in _UNSAFE.finditer(text):
        if match.start() > last:
            parts.append((text[last : match.start()], False))
        parts.append((notation(match.group()), True))
        last = match.end()
    if last < len(text):
        parts.append((text[last:], False))
    return parts


def has_unsafe(text: str) -> bool:
    """True when :func:`visible` would change ``text``."""
    return _UNSAFE.search(text) is not None


def json_safe(line: str) -> str:
    """A JSON text with DEL, C1 controls and the bidi and zero-width characters written as
    ``\\uXXXX`` escapes (``json.dumps`` leaves them raw), so a JSON line printed to a
    terminal is inert and still parses to the same value."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
"""A whole escape sequence: CSI (colours, cursor moves), OSC (titles, links) or a 2-byte one."""


def flat(text: str) -> str:
    """``text`` as one line of a table cell: escape sequences dropped whole, every other
    unsafe character and every whitespace run made one space. For a glance at text (a
    summary excerpt, a model name), never for what a person approves: :func:`visible`
    hides nothing, this does."""
    return " ".join(_UNSAFE.sub(" ", _SEQUENCE.sub("", text)).split())
