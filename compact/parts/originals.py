"""Pruned tool results in the log: their originals, their spill files and their vocabulary.

A pruned result (trimmed or masked by the basic backend's pruner) replaces exactly one
``tool/result`` on the surface; the log keeps the original, and its full text is in a file of
the session's output folder the model can read back with bash. Everything that reads the log
(the summarizer, recall transcripts, the summary modal) finds the original the same way.
"""

from __future__ import annotations

from pathlib import Path

from agent.log.events import SurfaceReplace, ToolResult
from agent.log.session import Session
from tools.bash_call import command_of
from tools.edit.call import path_of

TRIM_MARK = "characters trimmed to save context"
"""The words inside a trimmed result's marker."""
MASK_PREFIX = "[output pruned"
"""How a masked result's placeholder begins."""
KEEP_HEAD = 4096
KEEP_TAIL = 1024
"""Characters of a trimmed result kept at its head and tail: the trim pass and what the
summarizer reads of a pruned original (:mod:`compact.basic.reading`) cut the same way."""


def original(session: Session, event: ToolResult) -> ToolResult:
    """The tool result as it was first appended: a pruned replacement shadows exactly one
    ``tool/result`` (its ``surface_op`` start), which may itself be a replacement."""
    seen: set[int] = set()
    while isinstance(event.surface_op, SurfaceReplace) and event.seq not in seen:
        seen.add(event.seq)
        earlier = session.events[event.surface_op.start]
        if not isinstance(earlier, ToolResult) or earlier.data.call_id != event.data.call_id:
            break
        event = earlier
    return event


def head_tail(content: str, head: int, tail: int, path: str) -> str:
    """``content`` cut to its first ``head`` and last ``tail`` characters around a marker
    naming ``path``, the file with all of it (unchanged when it is not longer than both)."""
    if len(content) <= head + tail:
        return content
    first = content[:head]
    last = content[len(content) - tail :] if tail else ""
    omitted = len(content) - len(first) - len(last)
    return f"{first}\n[… {omitted} {TRIM_MARK}; full output: {path} …]\n{last}"


def spill_path(session: Session, seq: int) -> Path:
    """Where :func:`ensure_spill` keeps tool result ``seq``'s full text."""
    return Path(session.spill.name_of(_spill_name(seq)))


def _spill_name(seq: int) -> str:
    return f"result-{seq}.out"


def ensure_spill(session: Session, seq: int, content: str) -> str:
    """The path of a file holding tool result ``seq``'s full text, written now if missing:
    results small enough to skip the bash spill file get one, so whatever is cut or masked
    can still be read back. Only a regular file already there is taken as written; anything
    else at the name (a symlink a command planted when it could still write the folder) is
    removed, never followed, and the file is created anew (:mod:`tools.spill`)."""
    folder, name = session.spill, _spill_name(seq)
    if not folder.holds_file(name):
        folder.remove(name)
        with folder.create(name) as f:
            f.write(content.encode("utf-8", errors="replace"))
    return folder.name_of(name)


def command_text(name: str, arguments: str, limit: int = 80) -> str:
    """The command a call ran (``command``), on one line within ``limit``; else the tool's
    name and the file it names (``path``: ``edit app.py``), or its name alone."""
    text = command_of(arguments)
    if text is None:
        path = path_of(arguments)
        if path is None:
            return name
        text = f"{name} {path}"
    text = " ".join(text.split()).replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"
