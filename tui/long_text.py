"""How much of a long text an entry of the app draws: its head and its tail, with a line
saying what lies between.

Textual wraps every character a widget is given, on the event loop: a 5 MB line took 20 s
to lay out, a resumed session with a 50 MB prompt kept the app from taking input for two
minutes, and a 50 MB reply froze it while streaming. What a person can read on a screen
is far less; the rest stays in the session log, where ``reefline export`` writes it out.
"""

from __future__ import annotations

from dataclasses import dataclass

HEAD_LINES, HEAD_CHARS = 400, 40_000
"""The most of a text's beginning an entry draws."""
TAIL_LINES, TAIL_CHARS = 30, 2_000
"""The most of its end drawn after the note: about a screen, so the note stays in sight."""


@dataclass(frozen=True)
class Drawn:
    """``head`` and ``tail`` of a text, raw (clean them to show them); ``note`` is None when
    the text is drawn whole (then ``tail`` is empty)."""

    head: str
    tail: str = ""
    note: str | None = None

    @property
    def cut(self) -> bool:
        return self.note is not None

    def joined(self, gap: str = "\n") -> str:
        """What is drawn, as one text: head, the note between ``gap`` s, tail (Markdown
        wants ``"\n\n"``: the note a paragraph of its own)."""
        if self.note is None:
            return self.head
        return f"{self.head.rstrip()}{gap}{self.note}{gap}{self.tail.lstrip()}"


def drawn(text: str) -> Drawn:
    """The part of ``text`` an entry draws (see the module docstring)."""
    head_end = _after_lines(text, HEAD_LINES, HEAD_CHARS)
    if head_end >= len(text):
        return Drawn(text)
    tail_start = max(head_end, _before_lines(text, TAIL_LINES, TAIL_CHARS))
    if tail_start - head_end <= TAIL_CHARS:  # barely longer: not worth a note
        return Drawn(text)
    head, tail = text[:head_end], text[tail_start:]
    return Drawn(head, tail, _note(text.count("\n", head_end, tail_start), tail_start - head_end))


def _after_lines(text: str, lines: int, chars: int) -> int:
    """Where the first ``lines`` lines end, at most ``chars`` in."""
    end = 0
    for _ in range(lines):
        found = text.find("\n", end, chars)
        if found < 0:
            return min(len(text), chars)
        end = found + 1
    return end


def _before_lines(text: str, lines: int, chars: int) -> int:
    """Where the last ``lines`` lines start, at most ``chars`` from the end."""
    floor = max(0, len(text) - chars)
    start = len(text)
    for _ in range(lines):
        found = text.rfind("\n", floor, start - 1)
        if found < 0:
            return floor
        start = found + 1
    return start


def _note(lines: int, chars: int) -> str:
    what = f"{lines:,} more lines ({chars:,} characters)" if lines > 1 else f"{chars:,} characters"
    return f"… {what} not drawn · the full text is in the session log (reefline export)"


class StreamedHead:
    """What an entry draws of a text while it streams in: the fragments until the head is
    full (:data:`HEAD_LINES`, :data:`HEAD_CHARS`), then nothing; once the text is complete,
    :func:`drawn` of the whole replaces it (with the note and the tail)."""

    def __init__(self) -> None:
        self.chars = 0
        self.lines = 0
        self.full = False

    def take(self, fragment: str) -> str:
        """The part of ``fragment`` still to draw (empty once the head is full)."""
        if self.full:
            return ""
        piece = fragment[: HEAD_CHARS - self.chars]
        if self.lines + piece.count("\n") >= HEAD_LINES:
            piece = piece[: _after_lines(piece, HEAD_LINES - self.lines, len(piece))]
        self.full = len(piece) < len(fragment)
        self.chars += len(piece)
        self.lines += piece.count("\n")
        return piece
