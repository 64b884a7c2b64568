"""Plain-text reports for the headless CLI: the compaction timeline as a table or JSON, and a
session exported as Markdown.

Everything here reads the log (through :mod:`compact.timeline` for compactions), never the
surface: what a person already read never disappears from a report because it was compacted.
No terminal library is needed; the output is plain text.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections.abc import Sequence

from agent.events import (
    AssistantMessage,
    SessionStart,
    SteeringMessage,
    SurfaceReplace,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from agent.session import Session
from agent.turns import cut_text
from compact.contract import CompactPrune
from compact.records import TimelineRecord
from compact.timeline import TimelineFold
from compact.wording import fmt_duration, fmt_tokens, label, one_line
from tools.bash import command_of

# --- display width ------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


def _clean(text: str) -> str:
    """One line, no terminal escapes, control or bidi characters (they would break the
    table's alignment or recolour the terminal)."""
    return one_line(_CONTROLS.sub(" ", _ANSI.sub("", text)))


def _char_cells(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cells(text: str) -> int:
    """Terminal cells ``text`` takes: wide (CJK, emoji) characters count 2, combining 0."""
    return sum(_char_cells(ch) for ch in text)


def fit(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` cells, ending in ``…`` when cut."""
    if cells(text) <= width:
        return text
    if width <= 0:
        return ""
    out: list[str] = []
    used = 0
    for ch in text:
        w = _char_cells(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - cells(text))


# --- the timeline table -------------------------------------------------------------------------

_HEADERS = ("#", "trigger", "status", "started", "items", "tokens", "duration", "model")
_MODEL_CELLS = 24
_MIN_LAST = 12
_GAP = "  "


def _clock(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


def _items(r: TimelineRecord) -> str:
    if r.kind == "prune":
        return f"{r.items_before}→{r.items_after}"
    if r.status == "done":
        return f"{r.items_before}→{r.items_after}"
    return str(r.items_before) if r.items_before else "—"


def _tokens(r: TimelineRecord) -> str:
    if r.kind == "prune":
        if r.tokens_after is not None:
            return f"{fmt_tokens(r.tokens_before)}→{fmt_tokens(r.tokens_after)}"
        return f"−{fmt_tokens(r.tokens_before)}"
    if r.status == "done" and r.tokens_after is not None:
        return f"{fmt_tokens(r.tokens_before)}→{fmt_tokens(r.tokens_after)}"
    return fmt_tokens(r.tokens_before) if r.tokens_before else "—"


def _detail(r: TimelineRecord) -> str:
    """The last column: the error of a failed record, else focus and summary."""
    if r.status == "failed":
        return f"error: {r.error or 'unknown'}"
    if r.status == "interrupted":
        note = "the process stopped before it finished"
        return f"{note}; nothing was replaced" if r.kind == "compaction" else note
    parts = []
    if r.focus:
        parts.append(f"[focus: {r.focus}]")
    if r.summary:
        parts.append(summary_excerpt(r.summary))
    elif r.kind == "prune":
        n = r.items_after
        parts.append(f"{n} old tool result{'' if n == 1 else 's'} replaced by placeholders")
    return " ".join(parts)


_HEADING = re.compile(r"^\s*#{1,6}\s")


def summary_excerpt(summary: str) -> str:
    """A summary's content without its Markdown headings, on one line: every checkpoint
    starts with the same template heading, which says nothing in a narrow column."""
    lines = [line for line in summary.splitlines() if line.strip() and not _HEADING.match(line)]
    return one_line(" ".join(lines) if lines else summary)


def _row(r: TimelineRecord) -> list[str]:
    return [
        str(r.number),
        label(r),
        r.status,
        _clock(r.started_at),
        _items(r),
        _tokens(r),
        fmt_duration(r.duration_s),
        _clean(r.model or "—"),
    ]


_MODEL = _HEADERS.index("model")
_MIN_MODEL = 8
_DROP_ORDER = ("model", "duration", "started", "items")
"""Columns given up, in this order, when even a short model name leaves no room."""


def timeline_table(records: Sequence[TimelineRecord], width: int = 100) -> str:
    """The timeline as an aligned plain-text table, one row per record.

    Columns: #, trigger, status, started (local time), items before→after, tokens
    before→after (``−N`` saved for prunes), duration, model, and a last column with the
    summary (or error) flattened to one line, its headings dropped, cut so each row fits
    ``width`` terminal cells. In a narrow terminal the model name is shortened first, then
    the model, duration, started and items columns are left out; # trigger status tokens
    and a few cells of summary always stay. Summaries may hold anything a model wrote:
    newlines, control, bidi and wide characters are handled.
    """
    if not records:
        return "No compactions yet."
    rows = [_row(r) for r in records]
    widths = [max(cells(h), *(cells(row[i]) for row in rows)) for i, h in enumerate(_HEADERS)]
    widths[_MODEL] = min(widths[_MODEL], _MODEL_CELLS)
    shown = list(range(len(_HEADERS)))

    def fixed() -> int:
        return sum(widths[i] + len(_GAP) for i in shown)

    over = fixed() + _MIN_LAST - width
    if over > 0:
        widths[_MODEL] = max(_MIN_MODEL, cells(_HEADERS[_MODEL]), widths[_MODEL] - over)
    for name in _DROP_ORDER:
        if fixed() + _MIN_LAST <= width:
            break
        shown.remove(_HEADERS.index(name))
    last = max(_MIN_LAST, width - fixed())

    def line(cols: Sequence[str], tail: str) -> str:
        body = _GAP.join(_pad(fit(cols[i], widths[i]), widths[i]) for i in shown)
        return (body + _GAP + tail).rstrip()

    lines = [
        line(_HEADERS, "summary"),
        line(["─" * w for w in widths], "─" * min(last, 40)),
    ]
    for r, row in zip(records, rows, strict=True):
        lines.append(line(row, fit(_clean(_detail(r)), last)))
    return "\n".join(lines)


def timeline_json(records: Sequence[TimelineRecord]) -> str:
    """The timeline as a JSON array, one object per record with every field
    (:meth:`~compact.timeline.TimelineRecord.to_dict`) plus the derived ``label``,
    ``duration_s`` and ``saved_tokens``. ``TimelineRecord.from_dict`` reads an object back."""
    out = []
    for r in records:
        obj = r.to_dict()
        obj["label"] = label(r)
        obj["duration_s"] = r.duration_s
        obj["saved_tokens"] = r.saved_tokens
        out.append(obj)
    return json.dumps(out, indent=2, ensure_ascii=False)


# --- Markdown export ----------------------------------------------------------------------------

OUTPUT_HEAD_LINES = 40
OUTPUT_TAIL_LINES = 15
OUTPUT_MAX_CHARS = 8000


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


def _bash_command(call: ToolCall | None) -> str | None:
    return None if call is None else command_of(call.arguments)


def _tool_block(call: ToolCall | None, result: ToolResult | None) -> str:
    """A tool call with its (capped) output: ``$ command`` then output in one fence."""
    name = result.data.name if result is not None else call.name if call is not None else "tool"
    command = _bash_command(call) if name == "bash" else None
    output = cap_output(result.data.content) if result is not None else ""
    if command is not None:
        shown = "\n".join(
            ("$ " if i == 0 else "> ") + line for i, line in enumerate(command.splitlines() or [""])
        )
        fence = _fence(shown, output)
        body = f"{fence}console\n{shown}\n{output}".rstrip() + f"\n{fence}"
    else:
        args = call.arguments if call is not None else ""
        fence = _fence(args, output)
        body = (
            f"**{name}** `{one_line(args, 200)}`\n\n{fence}text\n{output}".rstrip() + f"\n{fence}"
        )
    notes: list[str] = []
    if result is None:
        notes.append("no result recorded")
    else:
        data = result.data
        if data.exit_code is not None:
            notes.append(f"exit {data.exit_code}")
        elif data.is_error:
            notes.append("error")
        if data.duration_s is not None:
            notes.append(fmt_duration(data.duration_s))
        if data.truncated:
            notes.append("output truncated")
        if data.spill_path:
            notes.append(f"full output: `{data.spill_path}`")
    return body + (f"\n*{' · '.join(notes)}*" if notes else "")


def _checkpoint_marker(record: TimelineRecord | None, framed: str) -> str:
    """The marker line of a landed checkpoint and its raw summary, collapsed."""
    if record is None:
        head = "> — context compacted —"
        summary = framed
        focus = None
    else:
        how = record.trigger + (", model-free fallback" if record.model == "fallback" else "")
        items = f"{record.items_before} item" + ("" if record.items_before == 1 else "s")
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
    what = f"{n} old tool result" + ("" if n == 1 else "s")
    saved = record.saved_tokens
    tokens = f" · −{fmt_tokens(saved)} tokens" if saved is not None else ""
    how = "" if record.trigger == "pressure" else f" ({record.trigger})"
    return f"> — {what} pruned to placeholders{how}{tokens} —"


_TURN_END = {
    "cancelled": "was cancelled",
    "error": "ended with an error",
    "max-steps": "stopped: it reached the step limit",
    "interrupted": "was interrupted (the process stopped mid-turn)",
}


def export_markdown(session: Session) -> str:
    """The session's transcript as Markdown, built from the log (not the surface).

    Renders, in log order: user messages, steering messages, assistant text, each tool call
    with its command and capped output (at its result), a marker per landed checkpoint with
    the raw summary in a collapsed ``<details>`` block, a marker per prune batch, and how a
    turn ended when it did not complete. A checkpoint's replacement ``user/message`` is a
    marker, never a user message; a pruned result's replacement is not rendered again (the
    original output was shown where it happened). Context injected for the model (workspace
    info) and failed compaction attempts are left out: the timeline report has them.
    """
    events = session.events
    fold = TimelineFold()
    fold.feed_all(events)
    prune_batches = {r.start_seq: r for r in fold.records if r.kind == "prune"}

    blocks: list[str] = []
    calls: dict[str, ToolCall] = {}
    answered: set[str] = set()
    for event in events:
        if isinstance(event, SessionStart):
            created = time.strftime("%Y-%m-%d %H:%M", time.localtime(event.data.created_at))
            blocks.append(f"# reefline session {session.id}\n\n*{event.data.cwd} · {created}*")
        elif isinstance(event, TurnStart):
            blocks.append(f"## Turn {event.data.turn}")
        elif isinstance(event, UserMessage):
            if event.data.source == "compact":
                cid = event.data.compaction_id
                record = fold.record(cid) if cid else None
                blocks.append(_checkpoint_marker(record, event.data.content))
            else:
                blocks.append(f"**You**\n\n{event.data.content}")
        elif isinstance(event, SteeringMessage):
            blocks.append(f"**You** (while the agent worked)\n\n{event.data.content}")
        elif isinstance(event, AssistantMessage):
            for call in event.data.tool_calls:
                calls[call.id] = call
            if event.data.text.strip():
                blocks.append(f"**Assistant**\n\n{event.data.text}")
            if event.data.finish_reason == "length":
                blocks.append(f"> *{cut_text(None)}*")
        elif isinstance(event, ToolResult):
            if isinstance(event.surface_op, SurfaceReplace):
                continue  # a pruned result's placeholder: the original was shown already
            answered.add(event.data.call_id)
            blocks.append(_tool_block(calls.get(event.data.call_id), event))
        elif isinstance(event, CompactPrune):
            batch = prune_batches.get(event.seq)
            if batch is not None:
                blocks.append(_prune_marker(batch))
        elif isinstance(event, TurnEnd) and event.data.reason != "completed":
            what = _TURN_END.get(event.data.reason, f"ended ({event.data.reason})")
            error = f": {one_line(event.data.error)}" if event.data.error else ""
            blocks.append(f"*Turn {event.data.turn} {what}{error}.*")
    for call_id, call in calls.items():
        if call_id not in answered:
            blocks.append(_tool_block(call, None))
    return "\n\n".join(blocks) + "\n"
