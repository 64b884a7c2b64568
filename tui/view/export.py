"""A session exported as Markdown (``reefline export``), rendered from the log's view items.

It reads :class:`~tui.view.fold.LogView`, never the surface: what a person already read
never disappears from the export because it was compacted. The output is a file, not a
terminal: text is written as the log holds it, inside fences long enough to hold it.
"""

from __future__ import annotations

import re
import time

from agent.formatting import fmt_duration, fmt_tokens, one_line, plural
from agent.log.session import Session
from agent.loop_settings import cut_text
from compact.reports.records import TimelineRecord
from tools import footer
from tui.view.changes import change_line, summary
from tui.view.fold import LogView
from tui.view.items import (
    Answer,
    Checkpoint,
    Prompt,
    PruneBatch,
    SessionForked,
    SessionOpened,
    ToolRun,
    TurnClosed,
    TurnOpened,
    ViewItem,
)

OUTPUT_HEAD_LINES = 40
OUTPUT_TAIL_LINES = 15
OUTPUT_MAX_CHARS = 8000


def export_markdown(session: Session) -> str:
    """The session's transcript as Markdown, built from the log (not the surface).

    Renders, in log order: user messages, steering messages, assistant text, each tool call
    with its command and capped output, a marker per landed checkpoint with the raw summary
    in a collapsed ``<details>`` block, a marker per prune batch, and how a turn ended when
    it did not complete. A pruned result's placeholder is not rendered (the original output
    is shown where it happened). Context injected for the model (workspace info) and failed
    compaction attempts are left out: the timeline report has them.
    """
    view = LogView()
    view.feed_all(session.events)
    blocks = [block for item in view.items if (block := _block(item)) is not None]
    for call in view.unstarted_calls():
        blocks.append(_tool_block(ToolRun(-1, call.id, call.name, call.arguments, 0.0)))
    return "\n\n".join(blocks) + "\n"


def _block(item: ViewItem) -> str | None:
    if isinstance(item, SessionOpened):
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(item.created_at))
        return f"# reefline session {item.session_id}\n\n*{item.cwd} · {created}*"
    if isinstance(item, SessionForked):
        return f"*Forked from session {item.parent}, before its seq {item.at_seq}.*"
    if isinstance(item, TurnOpened):
        return f"## Turn {item.turn}"
    if isinstance(item, Prompt):
        who = "**You** (while the agent worked)" if item.steering else "**You**"
        return f"{who}\n\n{item.text}"
    if isinstance(item, Checkpoint):
        return _checkpoint_marker(item)
    if isinstance(item, Answer):
        parts = [f"**Assistant**\n\n{item.text}"] if item.text.strip() else []
        if item.cut:
            parts.append(f"> *{cut_text(None)}*")
        return "\n\n".join(parts) or None
    if isinstance(item, ToolRun):
        return _tool_block(item)
    if isinstance(item, PruneBatch):
        return _prune_marker(item.record)
    if isinstance(item, TurnClosed) and item.stopped:
        what = _TURN_END.get(item.reason, f"ended ({item.reason})")
        error = f": {one_line(item.error)}" if item.error else ""
        return f"*Turn {item.turn} {what}{error}.*"
    return None


_TURN_END = {
    "cancelled": "was cancelled",
    "error": "ended with an error",
    "max-steps": "stopped: it reached the step limit",
    "interrupted": "was interrupted (the process stopped mid-turn)",
}


def _fence(*texts: str) -> str:
    """A backtick fence longer than any backtick run inside ``texts``."""
    longest = max((len(m) for t in texts for m in re.findall(r"`+", t)), default=0)
    return "`" * max(3, longest + 1)


def cap_output(text: str) -> str:
    """Tool output capped for a transcript: head and tail lines with a marker between,
    then a character cap (one enormous line is as bad as many)."""
    lines = text.splitlines()
    if len(lines) > OUTPUT_HEAD_LINES + OUTPUT_TAIL_LINES:
        omitted = len(lines) - OUTPUT_HEAD_LINES - OUTPUT_TAIL_LINES
        lines = [
            *lines[:OUTPUT_HEAD_LINES],
            f"[… {omitted} lines omitted …]",
            *lines[-OUTPUT_TAIL_LINES:],
        ]
    out = "\n".join(lines)
    if len(out) > OUTPUT_MAX_CHARS:
        head = OUTPUT_MAX_CHARS * 3 // 4
        tail = OUTPUT_MAX_CHARS - head
        out = f"{out[:head]}\n[… {len(out) - head - tail} characters omitted …]\n{out[-tail:]}"
    return out


def _tool_block(run: ToolRun) -> str:
    """A tool call with its (capped) output: ``$ command`` then output in one fence."""
    result = run.result
    command = run.bash_command
    # The notes under the fence say the exit and the time: the tool's footer line would say
    # them twice.
    output = cap_output(footer.strip(result.content)) if result is not None else ""
    if command is not None:
        shown = "\n".join(
            ("$ " if i == 0 else "> ") + line for i, line in enumerate(command.splitlines() or [""])
        )
        fence = _fence(shown, output)
        body = f"{fence}console\n{shown}\n{output}".rstrip() + f"\n{fence}"
    else:
        fence = _fence(run.arguments, output)
        args = one_line(run.arguments, 200)
        body = f"**{run.name}** `{args}`\n\n{fence}text\n{output}".rstrip() + f"\n{fence}"
    return body + (f"\n*{' · '.join(notes)}*" if (notes := _notes(run)) else "")


def _notes(run: ToolRun) -> list[str]:
    result = run.result
    if result is None:
        return ["no result recorded"]
    notes: list[str] = []
    if run.outcome == "declined":
        notes.append("declined")
    elif result.exit_code is not None:
        notes.append(f"exit {result.exit_code}")
    elif result.is_error:
        notes.append("error")
    if result.duration_s is not None:
        notes.append(fmt_duration(result.duration_s))
    if result.sandbox in ("read-only", "workspace-write"):
        notes.append(f"sandbox {result.sandbox}")
    if result.truncated:
        notes.append("output truncated")
    if result.spill_path:
        notes.append(f"full output: `{result.spill_path}`")
    if (changed := summary(result.files)) is not None and result.files is not None:
        paths = ", ".join(f"`{one_line(change_line(c), 200)}`" for c in result.files.changes)
        notes.append(f"{changed}: {paths}")
    return notes


def _checkpoint_marker(checkpoint: Checkpoint) -> str:
    """The marker line of a landed checkpoint and its raw summary, collapsed."""
    record = checkpoint.record
    if record is None:
        head = "> — context compacted —"
        summary = checkpoint.content
        focus = None
    else:
        how = record.trigger + (", model-free fallback" if record.model == "fallback" else "")
        items = plural(record.items_before, "item")
        tokens = f"{fmt_tokens(record.tokens_before)} → {fmt_tokens(record.tokens_after or 0)}"
        head = f"> — context compacted ({how}) · {items} · {tokens} tokens —"
        summary = record.summary or ""
        focus = record.focus
    # A summary is model output: keep it from closing our <details> block early.
    summary = summary.replace("</details", "&lt;/details").strip()
    if not summary:
        summary = "Compaction summary unavailable."
    focus_line = f"Focus: {one_line(focus)}\n\n" if focus else ""
    return f"{head}\n\n<details>\n<summary>Summary</summary>\n\n{focus_line}{summary}\n\n</details>"


def _prune_marker(record: TimelineRecord) -> str:
    n = record.items_before
    what = plural(n, "old tool result")
    saved = record.saved_tokens
    tokens = f" · −{fmt_tokens(saved)} tokens" if saved is not None else ""
    how = "" if record.trigger == "pressure" else f" ({record.trigger})"
    return f"> — {what} pruned to placeholders{how}{tokens} —"
