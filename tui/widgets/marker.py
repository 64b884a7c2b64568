"""The compaction marker: a rule in the transcript where a checkpoint landed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual import events
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from agent.formatting import fmt_tokens
from compact.reports.wording import occasion_brief

if TYPE_CHECKING:
    from compact.reports.records import TimelineRecord


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells with a closing ``…`` when it is longer (a width of 0:
    not laid out yet, nothing cut)."""
    if width <= 0 or cell_len(text) <= width:
        return text
    while text and cell_len(text) > width - 1:
        text = text[:-1]
    return text.rstrip(" ·") + "…"


@dataclass
class CompactionMarkerSelected(Message):
    """The user asked to see the summary behind a marker."""

    compaction_id: str


class CompactionMarker(Static, can_focus=True):
    """``── #1 context compacted (auto) · 42 items · 38.1k → 2.3k · at 12.4k, mark 12.0k ·
    kept 3 items verbatim (~2.1k) · view ──``; click or Enter opens the summary."""

    def __init__(self, compaction_id: str) -> None:
        super().__init__()
        self.compaction_id = compaction_id
        self.record: TimelineRecord | None = None

    def set_record(self, record: TimelineRecord) -> None:
        self.record = record
        self.refresh()

    def label(self) -> str:
        record = self.record
        if record is None:
            return "context compacted"
        parts = [f"#{record.number} context compacted ({record.trigger})"]
        if record.items_before:
            parts.append(f"{record.items_before} items")
        if record.tokens_after is not None:
            parts.append(f"{fmt_tokens(record.tokens_before)} → {fmt_tokens(record.tokens_after)}")
        if record.model == "fallback":
            parts.append("model-free fallback")
        if (why := occasion_brief(record)) is not None:
            parts.append(why)
        return " · ".join(parts)

    def render(self) -> Content:
        # The rule is cut by the CSS (text-wrap: nowrap); the label is cut here, with an
        # ellipsis and its "view" kept, when the width it is drawn at is too small for it.
        text = f" {fit(self.label(), self.size.width - len('── · view  ─'))} · view "
        return Content.assemble(
            ("──", "$text-primary"), (text, "bold $text-primary"), ("─" * 400, "$text-primary")
        )

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(CompactionMarkerSelected(self.compaction_id))

    def key_enter(self) -> None:
        self.post_message(CompactionMarkerSelected(self.compaction_id))
