"""The one terminal-safety filter: text from a model, a command, a file or a server, made safe
to show on a terminal without hiding anything.

Nothing is removed. Every character that could move the cursor, change the terminal's state,
reorder or hide text is replaced by its escape notation (``\\x1b``, ``\\u202e``,
``\\U000e0041``), so what a person reads is, character for character, what the text holds.
Those characters are, by Unicode category: every control (Cc) but newline and tab — ESC, DEL
and the 8-bit CSI among them —, every format character (Cf: bidirectional overrides and
isolates, zero-width characters, the soft hyphen, tag characters…), the line and paragraph
separators (Zl, Zp), private-use characters (Co, drawn as a font pleases) and lone
surrogates (Cs, what undecodable bytes become); and the default-ignorable characters of other
categories that draw nothing (the Hangul fillers, the combining grapheme joiner, Mongolian
variation selectors, the variation selectors supplement). The standard variation selectors
U+FE00–U+FE0F are left alone: they only choose how the character before them is drawn
(an emoji's colour form). :func:`visible_parts` tells the notations apart from the text
around them, for a front end that styles them.
"""

from __future__ import annotations

import re

_UNSAFE_RANGES = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"  # Cc but \t and \n
    "\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"  # Cf
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"  # Cf, Zl, Zp
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"  # Cf
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"  # Cf (tags), ignorable
    "\ud800-\uf8ff\U000f0000-\U0010ffff"  # Cs, Co
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\uffa0"  # blank ignorables
)
"""Written out here rather than computed from :mod:`unicodedata` at import (a scan of every
code point costs half a second of start-up); tests/tools/test_terminal.py checks it against
the categories."""

_UNSAFE = re.compile(f"[{_UNSAFE_RANGES}]")


def notation(char: str) -> str:
    """``\\x1b`` for a character below U+0100, ``\\u202e`` up to U+FFFF, ``\\U000e0041``
    above (Python's own notation)."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


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
    """A JSON text with every unsafe character (DEL, C1 controls, bidi, zero-width and the
    rest of the list above) written as a ``\\uXXXX`` escape — a surrogate pair above
    U+FFFF — (``json.dumps`` leaves them raw), so a JSON line printed to a terminal is inert
    and still parses to the same value. Unsafe characters only occur inside JSON strings,
    where such escapes are valid; the newlines of indented JSON are left."""
    return _UNSAFE.sub(lambda m: _json_escape(ord(m.group())), line)


def _json_escape(code: int) -> str:
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
"""A whole escape sequence: CSI (colours, cursor moves), OSC (titles, links) or a 2-byte one."""


def flat(text: str) -> str:
    """``text`` as one line of a table cell: escape sequences dropped whole, every other
    unsafe character and every whitespace run made one space. For a glance at text (a
    summary excerpt, a model name), never for what a person approves: :func:`visible`
    hides nothing, this does."""
    return " ".join(_UNSAFE.sub(" ", _SEQUENCE.sub("", text)).split())
