"""The instruction files as ``/memory`` lists them and ``/context`` counts them: where each
comes from, its tokens, and what was looked for but not read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent.formatting import fmt_tokens
from agent.memory import MAX_MEMORY_CHARS, Memory
from tui.text import short_path


@dataclass(frozen=True)
class MemoryRow:
    """One file sent: where from, which scope, its tokens, and whether it was cut."""

    path: str
    scope: str
    tokens: int
    cut: bool

    @property
    def line(self) -> str:
        cut = f" (cut at {MAX_MEMORY_CHARS:,} characters)" if self.cut else ""
        return f"{self.scope:<8} {self.path}  {fmt_tokens(self.tokens)} tokens{cut}"


def memory_rows(memory: Memory, count: Callable[[str], int]) -> tuple[MemoryRow, ...]:
    """The files sent, in the order sent (nearest last), each with its tokens."""
    return tuple(
        MemoryRow(short_path(str(f.path)), f.scope, count(f.text), f.cut) for f in memory.files
    )


def memory_report(memory: Memory, count: Callable[[str], int]) -> str:
    """``/memory``: what is loaded and where from, what was not read and why, and where
    ``/remember`` writes."""
    project = short_path(str(memory.project_file))
    user = short_path(str(memory.user_file))
    root = short_path(str(memory.root))
    rows = memory_rows(memory, count)
    if rows:
        lines = ["Instruction files the model is given (nearest last):"]
        lines += [f"  {row.line}" for row in rows]
    else:
        lines = ["No instruction files found."]
    lines += [f"  not read: {short_path(str(u.path))} — {u.why}" for u in memory.unread]
    lines += [
        f"Looked for AGENTS.md (else CLAUDE.md) in every folder from {root} down to "
        f"{short_path(str(memory.cwd))}, and for {user}.",
        f"/remember TEXT adds a line to {project}; /remember --user TEXT to {user}.",
    ]
    return "\n".join(lines)
