"""The bash tool's last line, ``[exit 0 · 0.01s]`` or ``[timed out after 5s; …]``: written
once here and read back here, by whatever sees a result only as text (the model-free
checkpoint, the demo model, the tool card)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(
    r"\[(?:exit (-?\d+)|timed out after [^\]\n]*|interrupted by the user[^\]\n]*) · [^\]\n]*\]"
)
_LAST_EXIT = re.compile(r"\n?\[exit -?\d+ · [^\]\n]*\]\n?$")


def exited(exit_code: int, duration_s: float) -> str:
    return f"[exit {exit_code} · {duration_s:.2f}s]"


def timed_out(timeout_s: float, duration_s: float) -> str:
    return f"[timed out after {timeout_s:g}s; process group killed · {duration_s:.2f}s]"


def interrupted(duration_s: float) -> str:
    return f"[interrupted by the user; process group killed · {duration_s:.2f}s]"


@dataclass(frozen=True)
class Footer:
    exit_code: int | None
    """None: the command timed out or was interrupted, and was killed."""


def parse(line: str) -> Footer | None:
    """The footer ``line`` is (stripped), or None when it is not one."""
    found = _LINE.fullmatch(line.strip())
    if found is None:
        return None
    return Footer(int(found.group(1)) if found.group(1) is not None else None)


def last_exit(text: str) -> int | None:
    """The exit code of the last footer in ``text`` (None: no footer, or a timeout)."""
    codes = [m.group(1) for m in _LINE.finditer(text) if m.group(1) is not None]
    return int(codes[-1]) if codes else None


def output_lines(content: str) -> int:
    """How many lines a result's ``content`` holds besides its exit footer (0: the command
    printed nothing)."""
    body = strip(content)
    return body.count("\n") + 1 if body else 0


def strip(output: str) -> str:
    """``output`` without its last line when that is an exit footer (a timeout's stays: it
    is news, not bookkeeping)."""
    return _LAST_EXIT.sub("", output)
