"""A command's output as the model will see it: bytes decoded and cleaned of terminal
control sequences, capped to a head and a tail with the middle spilled to a file."""

from __future__ import annotations

import contextlib
import itertools
import re
import time
from pathlib import Path
from typing import IO

from tools.spill import SpillFolder

_HEAD_SHARE = 0.6

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement, erase line
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"  # OSC: window titles, hyperlinks
    r"|\x1b[PX^_][^\x1b\n]*(?:\x1b\\)?"  # DCS / SOS / PM / APC strings
    r"|\x1b[ -/]*[0-~]"  # two-character and nF escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_OVERSTRIKE = re.compile(r"[^\n\x08]\x08")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def sanitize(raw: bytes) -> str:
    """Decode command output into text that is safe to show and to send to a model.

    Invalid UTF-8 becomes U+FFFD; ANSI escape sequences are removed; within a line, carriage
    returns keep only the last non-empty segment (what a progress bar finally shows, and
    ``\\r\\n`` becomes ``\\n``); ``x\\b`` overstrike keeps the second character; every other
    control character except ``\\n`` and ``\\t`` is dropped. Line breaks are never added or
    removed, so ``\\n`` counts match the raw bytes.
    """
    text = _ESCAPES.sub("", raw.decode("utf-8", errors="replace"))
    if "\r" in text:
        text = "\n".join(_last_segment(line) if "\r" in line else line for line in text.split("\n"))
    if "\x08" in text:
        text = _OVERSTRIKE.sub("", text)
    return _CONTROLS.sub("", text)


def _last_segment(line: str) -> str:
    return next((seg for seg in reversed(line.split("\r")) if seg), "")


class Capture:
    """Output sink with bounded memory.

    Until the output exceeds ``4 * cap`` bytes (enough for ``cap`` characters of any UTF-8
    text) it is kept whole in memory and no file is touched. Past that, everything goes to
    the spill file and memory keeps only the first ``4 * head`` and last ``4 * tail`` bytes.
    """

    def __init__(self, cap: int, folder: SpillFolder, seq: int) -> None:
        self.cap = cap
        self.head_chars = int(cap * _HEAD_SHARE)
        self.tail_chars = cap - self.head_chars
        self.total = 0
        self.newlines = 0
        self.spill_path: str | None = None
        self.spill_error: str | None = None
        self._folder = folder
        self._seq = seq
        self._file: IO[bytes] | None = None
        self._whole: bytearray | None = bytearray()
        self._discarded = False
        self._head = b""
        self._tail = bytearray()

    def feed(self, data: bytes) -> None:
        if self._discarded:
            return
        self.total += len(data)
        self.newlines += data.count(b"\n")
        if self._whole is not None:
            self._whole += data
            if len(self._whole) <= 4 * self.cap:
                return
            whole, self._whole = self._whole, None
            self._head = bytes(whole[: 4 * self.head_chars])
            self._tail = whole[-4 * self.tail_chars :]
            self._spill(whole)
            return
        self._spill(data)
        self._tail += data
        if len(self._tail) > 8 * self.tail_chars:
            del self._tail[: -4 * self.tail_chars]

    def _spill(self, data: bytes | bytearray) -> None:
        if self.spill_error is not None:
            return
        try:
            if self._file is None:
                self.spill_path, self._file = open_spill(self._folder, self._seq)
            self._file.write(data)
        except OSError as exc:
            # Losing the spill file must not lose the command's result.
            self.spill_error = str(exc)
            self.close()

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def discard(self) -> None:
        self._discarded = True
        self.close()
        if self.spill_path is not None:
            self._folder.remove(Path(self.spill_path).name)

    def render(self) -> tuple[str, bool]:
        """Return the text the model sees and whether it was truncated; closes the sink."""
        if self._whole is not None:
            text = sanitize(bytes(self._whole))
            if len(text) <= self.cap:
                self.close()
                return text, False
            self._spill(self._whole)
            head_src = tail_src = text
        else:
            head_src, tail_src = sanitize(self._head), sanitize(bytes(self._tail))
        self.close()
        head = head_src[: self.head_chars]
        if (cut := head.rfind("\n")) >= len(head) // 2:
            head = head[: cut + 1]
        tail = tail_src[-self.tail_chars :]
        if 0 <= (cut := tail.find("\n")) < len(tail) // 2:
            tail = tail[cut + 1 :]
        omitted = self.newlines - head.count("\n") - tail.count("\n")
        lines = "1 line" if omitted == 1 else f"{omitted} lines"
        saved = (
            f"saved to {self.spill_path}"
            if self.spill_error is None
            else f"could not be saved ({self.spill_error})"
        )
        if head and not head.endswith("\n"):
            head += "\n"
        marker = f"[… {lines} omitted; full output ({self.total} bytes) {saved} …]\n"
        return head + marker + tail, True


def open_spill(folder: SpillFolder, seq: int) -> tuple[str, IO[bytes]]:
    """A new spill file for command ``seq`` in ``folder``, 0600, named for the time and the
    first free number from ``seq`` on: its path and the file open for writing."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in itertools.count(seq):
        name = f"{stamp}-{n}.out"
        try:
            return folder.name_of(name), folder.create(name)
        except FileExistsError:
            continue
    raise AssertionError("unreachable")
