"""Recall: what a checkpoint replaced, as a transcript file the model can read with bash.

Each committed compaction writes ``recall-<compaction id>.md`` into the session's spill
folder (the folder full tool outputs go to, bound read-only inside the sandbox, so every
sandbox mode can read it): the user, context and assistant messages it shadowed, each
command with its exit code and its full output as first recorded (or the spill file the
full output is in), in surface order, each headed by its log seq. The checkpoint names the
file in one line (:func:`recall_lines`); a checkpoint that merges an earlier one says that
the earlier one's text (naming its transcript) is in its own transcript, so every
transcript stays reachable at a constant cost in context.

The files are a projection of the log and nothing else: :func:`rebuild_missing` writes the
ones a log names but the disk lacks (a resume after the folder was cleared, a fork, a log
copied to another machine under the same home). Files are created only through
:class:`tools.spill.SpillFolder` (``O_EXCL``, relative to the folder's checked descriptor):
a name already taken is left alone, never opened for writing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from agent.log.events import (
    AssistantMessage,
    ContextMessage,
    Event,
    SteeringMessage,
    SurfaceReplace,
    ToolResult,
    UserMessage,
)
from agent.log.session import Session
from compact.parts.originals import original
from tools.bash_call import command_of
from tools.spill import SpillFolder

RECALL_PREFIX = "The full transcript this summary replaces: "
RECALL_SUFFIX = " — grep it for exact values."
EARLIER_PREFIX = "The full transcript of an earlier checkpoint merged into it: "
"""How checkpoints written before the one-line form named a merged transcript (still read)."""
EARLIER_LINE = (
    "The earlier checkpoints merged into it are in that transcript, each naming its own "
    "(the folder's recall-*.md files are all of them)."
)


def recall_name(compaction_id: str) -> str:
    """The transcript's file name in the spill folder."""
    return f"recall-{compaction_id}.md"


def named_paths(content: str) -> list[str]:
    """Every transcript path a checkpoint's text names (earlier ones first, its own last).
    Only the lines before the summary count: a summary quoting such a line names nothing."""
    out: list[str] = []
    for line in content.split("<compacted-summary>", 1)[0].splitlines():
        for prefix in (EARLIER_PREFIX, RECALL_PREFIX):
            if line.startswith(prefix):
                out.append(line[len(prefix) :].removesuffix(RECALL_SUFFIX).strip())
    return out


def recall_lines(session: Session, compaction_id: str, span: list[int]) -> str:
    """The lines a checkpoint ends with: the one naming its own transcript and, when it
    merges earlier checkpoints, one saying where theirs are named. Their names are not
    repeated here: the merged checkpoint's text is in the transcript (and names its own), so
    every transcript stays reachable while what the model carries stays one line long (a name
    per merge would grow the context by a line each compaction for the rest of the session)."""
    own = session.spill.name_of(recall_name(compaction_id))
    lines = [f"{RECALL_PREFIX}{own}{RECALL_SUFFIX}"]
    merged = any(
        isinstance(e := session.events[seq], UserMessage) and e.data.source == "compact"
        for seq in span
    )
    if merged:
        lines.append(EARLIER_LINE)
    return "\n\n" + "\n".join(lines)


def transcript(session: Session, compaction_id: str, span: list[int]) -> str:
    """The text of one compaction's transcript: the shadowed items in surface order."""
    head = (
        f"# What compaction {compaction_id} replaced\n\n"
        f"Session {session.id}. Each item is headed by its seq in the session log; tool "
        "outputs are given as first recorded (before any pruning).\n"
    )
    return head + "".join(f"\n## seq {seq} · {text}\n" for seq, text in _items(session, span))


def _items(session: Session, span: list[int]) -> Iterator[tuple[int, str]]:
    events = session.events
    commands: dict[str, str] = {}
    for seq in span:
        event = events[seq]
        if isinstance(event, UserMessage):
            kind = "earlier checkpoint" if event.data.source == "compact" else "user"
            # A corrected checkpoint is read as the model read it (its revised text).
            message = session.node_message(seq) or {}
            yield seq, f"{kind}\n\n{message.get('content', event.data.content)}"
        elif isinstance(event, ContextMessage):
            yield seq, f"context ({event.data.source})\n\n{event.data.content}"
        elif isinstance(event, SteeringMessage):
            yield seq, f"user (while the agent worked)\n\n{event.data.content}"
        elif isinstance(event, AssistantMessage):
            lines = [event.data.text] if event.data.text else []
            for call in event.data.tool_calls:
                command = command_of(call.arguments) if call.name == "bash" else None
                commands[call.id] = command if command is not None else call.arguments
                shown = f"$ {command}" if command is not None else f"{call.name} {call.arguments}"
                lines.append(f"calls {call.id}: {shown}")
            yield seq, "assistant\n\n" + "\n".join(lines)
        elif isinstance(event, ToolResult):
            yield seq, _result(session, event, commands.get(event.data.call_id))


def _result(session: Session, event: ToolResult, command: str | None) -> str:
    first = original(session, event)
    data = first.data
    parts = [f"output of {data.call_id}"]
    if command is not None:
        parts.append(f"$ {command}")
    parts.append(f"exit {data.exit_code}" if data.exit_code is not None else "no exit code")
    if data.is_error:
        parts.append("error")
    text = " · ".join(parts)
    if first.seq != event.seq:
        text += f"\n(the model saw it pruned, as seq {event.seq}; the original is seq {first.seq})"
    if data.truncated and data.spill_path:
        text += f"\n(the full output is in {data.spill_path})"
    return f"{text}\n\n{data.content}"


def write(session: Session, compaction_id: str, span: list[int], folder: SpillFolder) -> bool:
    """Create the transcript in ``folder``; False when the name is taken (left alone)."""
    try:
        f = folder.create(recall_name(compaction_id))
    except FileExistsError:
        return False
    with f:
        f.write(transcript(session, compaction_id, span).encode())
    return True


def committed(session: Session) -> Iterator[tuple[UserMessage, list[int]]]:
    """Each checkpoint in the log and the seqs it shadowed, oldest first."""
    for event in session.events:
        if _is_checkpoint(event):
            assert isinstance(event, UserMessage)
            yield event, session.shadowed(event.seq)


def _is_checkpoint(event: Event) -> bool:
    return (
        isinstance(event, UserMessage)
        and event.data.source == "compact"
        and event.data.compaction_id is not None
        and isinstance(event.surface_op, SurfaceReplace)
    )


def rebuild_missing(session: Session) -> dict[str, str]:
    """Write every transcript the log's checkpoints name that is missing, and return the
    named paths that are somewhere else here: ``{named: actual}``.

    A checkpoint names a path in its session's spill folder; a fork's copied checkpoints
    name the parent's, which is rebuilt there (from this log, which holds the same events).
    A path outside this home's sessions folder (a log moved from another machine or home) is
    written into this session's own folder instead, and returned, so the model can be told
    where it is (:func:`moved_note`). Failures to write are left for the next open."""
    moved: dict[str, str] = {}
    folders: dict[Path, SpillFolder] = {session.spill_dir: session.spill}
    sessions = session.spill_dir.parent
    try:
        for event, span in committed(session):
            cid = event.data.compaction_id
            assert cid is not None
            own = [p for p in named_paths(event.data.content) if Path(p).name == recall_name(cid)]
            where = Path(own[-1]).parent if own else session.spill_dir
            if where.parent != sessions or not where.name.endswith(".spill"):
                where = session.spill_dir
                if own:
                    moved[own[-1]] = session.spill.name_of(recall_name(cid))
            folder = folders.get(where)
            if folder is None:
                folder = folders[where] = SpillFolder(where)
            with contextlib.suppress(OSError):
                if not folder.holds_file(recall_name(cid)):
                    write(session, cid, span, folder)
    finally:
        for path, folder in folders.items():
            if path != session.spill_dir:
                folder.close()
    return moved


def moved_note(session: Session, moved: dict[str, str]) -> str | None:
    """The context message that tells the model where the transcripts its view names are
    on this machine; None when its view names none that moved, or was told already."""
    view = "\n".join(str(m.get("content") or "") for m in session.derive_messages())
    lines = [f"- {named} is at {actual}" for named, actual in moved.items() if named in view]
    if not lines:
        return None
    note = "\n".join([MOVED_HEAD, *lines])
    return None if note in view else note


MOVED_HEAD = (
    "This session was opened from another machine or home: the recall transcripts named "
    "above are here instead (same content, rebuilt from the session log):"
)
