"""The compaction timeline as a plain-text table or JSON (``reefline timeline``).

It reads the log through :mod:`compact.reports.timeline`, never the surface; no terminal library is
needed. Cells hold what a model wrote (summaries) and a server named (models): they go
through :func:`tools.terminal.flat`, so no escape can recolour the terminal or break the
alignment.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence

from agent.formatting import fmt_duration, fmt_tokens, one_line, plural
from agent.llm.prices import PriceOf
from compact.reports.records import TimelineRecord
from compact.reports.wording import label, spent, status
from tools.terminal import flat
from tui.cells import cells, fit, pad

_HEADERS = (
    "#", "trigger", "status", "started", "items", "tokens", "duration", "summary calls", "model"
)  # fmt: skip
_MODEL_CELLS = 24
_MIN_LAST = 12
_ROOM_BESIDE_SPENT = 40
"""The summary column keeps at least this many cells, or the summary calls column goes."""
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
    if r.status == "discarded":
        return f"{r.error or 'discarded'} (a summary written ahead; its calls were billed)"
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
        parts.append(f"{plural(n, 'old tool result')} replaced by placeholders")
    return " ".join(parts)


_HEADING = re.compile(r"^\s*#{1,6}\s")


def summary_excerpt(summary: str) -> str:
    """A summary's content without its Markdown headings, on one line: every checkpoint
    starts with the same template heading, which says nothing in a narrow column."""
    lines = [line for line in summary.splitlines() if line.strip() and not _HEADING.match(line)]
    return one_line(" ".join(lines) if lines else summary)


def _row(r: TimelineRecord, price_of: PriceOf | None) -> list[str]:
    return [
        str(r.number),
        label(r),
        status(r),
        _clock(r.started_at),
        _items(r),
        _tokens(r),
        fmt_duration(r.duration_s),
        spent(r, price_of) or "—",
        flat(r.model or "—"),
    ]


_MODEL = _HEADERS.index("model")
_MIN_MODEL = 8
_DROP_ORDER = ("model", "duration", "started", "items")
"""Columns given up, in this order, when even a short model name leaves no room."""


def timeline_table(
    records: Sequence[TimelineRecord], width: int = 100, price_of: PriceOf | None = None
) -> str:
    """The timeline as an aligned plain-text table, one row per record.

    Columns: #, trigger, status, started (local time), items before→after, tokens
    before→after (``−N`` saved for prunes), duration, what the summary calls cost
    (:func:`compact.reports.wording.spent`; with ``price_of``, an estimated cost), model, and a
    last column with the
    summary (or error) flattened to one line, its headings dropped, cut so each row fits
    ``width`` terminal cells. The summary calls column is left out when the summary would
    get fewer than 40 cells beside it; in a narrower terminal the model name is shortened,
    then the model, duration, started and items columns are left out; # trigger status
    tokens and a few cells of summary always stay. Summaries may hold anything a model wrote:
    newlines, control, bidi and wide characters are handled.
    """
    if not records:
        return "No compactions yet."
    rows = [_row(r, price_of) for r in records]
    widths = [max(cells(h), *(cells(row[i]) for row in rows)) for i, h in enumerate(_HEADERS)]
    widths[_MODEL] = min(widths[_MODEL], _MODEL_CELLS)
    shown = list(range(len(_HEADERS)))

    def fixed() -> int:
        return sum(widths[i] + len(_GAP) for i in shown)

    if fixed() + _ROOM_BESIDE_SPENT > width:
        # The summary calls' cost is the first thing given up: a summary says more.
        shown.remove(_HEADERS.index("summary calls"))
    over = fixed() + _MIN_LAST - width
    if over > 0:
        widths[_MODEL] = max(_MIN_MODEL, cells(_HEADERS[_MODEL]), widths[_MODEL] - over)
    for name in _DROP_ORDER:
        if fixed() + _MIN_LAST <= width:
            break
        shown.remove(_HEADERS.index(name))
    last = max(_MIN_LAST, width - fixed())

    def line(cols: Sequence[str], tail: str) -> str:
        body = _GAP.join(pad(fit(cols[i], widths[i]), widths[i]) for i in shown)
        return (body + _GAP + tail).rstrip()

    lines = [
        line(_HEADERS, "summary"),
        line(["─" * w for w in widths], "─" * min(last, 40)),
    ]
    for r, row in zip(records, rows, strict=True):
        lines.append(line(row, fit(flat(_detail(r)), last)))
    return "\n".join(lines)


def timeline_json(records: Sequence[TimelineRecord]) -> str:
    """The timeline as a JSON array, one object per record with every field
    (:meth:`~compact.reports.timeline.TimelineRecord.to_dict`) plus the derived ``label``,
    ``duration_s`` and ``saved_tokens``. ``TimelineRecord.from_dict`` reads an object back."""
    out = []
    for r in records:
        obj = r.to_dict()
        obj["label"] = label(r)
        obj["duration_s"] = r.duration_s
        obj["saved_tokens"] = r.saved_tokens
        out.append(obj)
    return json.dumps(out, indent=2, ensure_ascii=False)
