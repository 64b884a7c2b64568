"""The summary modal for one timeline record: the summary as Markdown, the focus text, model
and usage, and the list of shadowed items (the first line of each)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static

from agent.formatting import fmt_duration, fmt_tokens, plural
from agent.llm.prices import PriceOf
from agent.log.events import (
    AssistantMessage,
    ContextMessage,
    Event,
    SteeringMessage,
    ToolResult,
    UserMessage,
)
from agent.log.session import Session
from compact.commands.summary_edit import Checkpoint, newest_checkpoint
from compact.parts.originals import MASK_PREFIX
from compact.reports.compaction_cost import cost_words, recorded
from compact.reports.records import TimelineRecord
from compact.reports.wording import label, occasion
from tui.text import bash_command, clean, first_line, home_relative
from tui.widgets.timeline import SummaryEditRequested


def describe_item(event: Event) -> str:
    """One line naming a surface item (what a compaction took off the model's view)."""
    if isinstance(event, UserMessage):
        if event.data.source == "compact":
            return "earlier checkpoint"
        return "you: " + first_line(event.data.content, 90)
    if isinstance(event, SteeringMessage):
        return "steer: " + first_line(event.data.content, 90)
    if isinstance(event, ContextMessage):
        return "context: " + first_line(home_relative(event.data.content), 90)
    if isinstance(event, AssistantMessage):
        if event.data.text.strip():
            return "assistant: " + first_line(event.data.text, 90)
        calls = ", ".join(
            "$ " + first_line(bash_command(c.arguments), 60) for c in event.data.tool_calls
        )
        return f"assistant called {calls}" if calls else "assistant (empty reply)"
    if isinstance(event, ToolResult):
        code = "error" if event.data.exit_code is None else f"exit {event.data.exit_code}"
        content = event.data.content
        if event.source_event_seqs and content.startswith(MASK_PREFIX):
            content = home_relative(content)  # reefline's own words: the spill file's path
        first = first_line(content, 70) or "(no output)"
        return f"{event.data.name} result ({code}): {first}"
    return event.type


def record_facts(record: TimelineRecord, price_of: PriceOf | None = None) -> list[tuple[str, str]]:
    """(label, value) rows for the header of the modal: what the record did, what it saved
    and what it cost: its summary calls and what the next request re-read uncached after
    it (estimated in dollars when ``price_of`` knows the model's price)."""
    facts: list[tuple[str, str]] = []
    status: str = record.status
    if record.error:
        status += f": {first_line(record.error, 100)}"
    facts.append(("status", status))
    if (why := occasion(record)) is not None:
        facts.append(("why", clean(why)))
    if record.started_at:
        facts.append(
            ("started", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started_at)))
        )
    if record.duration_s is not None:
        facts.append(("duration", fmt_duration(record.duration_s)))
    facts.append(("items", f"{record.items_before} → {record.items_after}"))
    after = f" → {fmt_tokens(record.tokens_after)}" if record.tokens_after is not None else ""
    facts.append(("tokens", f"{fmt_tokens(record.tokens_before)}{after}"))
    if record.focus:
        facts.append(("focus", clean(record.focus)))
    if record.model:
        facts.append(("model", clean(record.model)))
    if record.fallback_reason:
        facts.append(("fallback", clean(first_line(record.fallback_reason, 100))))
    if record.calls:
        calls = plural(record.calls, "summarizer call")
        chunks = f" · {record.chunks} chunks" if record.chunks > 1 else ""
        facts.append(("calls", calls + chunks))
    if record.saved_tokens is not None and record.status == "done":
        facts.append(("saved", f"{fmt_tokens(record.saved_tokens)} tokens of context"))
    if (cost := recorded(record)) is not None and record.kind == "compaction":
        # Priced as /compact --dry-run and "compacting soon" price one not yet run.
        facts.append(("cost", cost_words(cost, price_of)))
    return facts


def current_summary(session: Session, record: TimelineRecord) -> str | None:
    """The summary the model reads now when ``record`` is the newest checkpoint standing
    (corrected or not: what the editor starts from), else None."""
    point = newest_checkpoint(session)
    if isinstance(point, Checkpoint) and point.record.number == record.number:
        return point.summary
    return None


class SummaryScreen(ModalScreen[int | None]):
    """See the module docstring. Esc or q closes; ``u`` closes asking to undo the
    compaction (its number is the result); on the newest checkpoint (``current`` given: the
    summary the model reads now, corrected or not) ``e`` closes asking the app to edit it
    (:class:`~tui.widgets.timeline.SummaryEditRequested`)."""

    AUTO_FOCUS = "*"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "close"),
        Binding("u", "undo", "undo compaction"),
        Binding("e", "edit", "edit summary"),
    ]

    def __init__(
        self,
        record: TimelineRecord,
        events: Sequence[Event],
        price_of: PriceOf | None = None,
        current: str | None = None,
    ) -> None:
        super().__init__(classes="modal")
        self.record = record
        self.log_events = events
        self.price_of = price_of
        self.current = current

    def compose(self) -> ComposeResult:
        record = self.record
        kind = label(record) if record.kind == "prune" else f"compaction ({record.trigger})"
        if record.kind == "edit":
            kind = f"summary edit of #{record.edits}" if record.edits else "summary edit"
        summary = self.current if self.current is not None else record.summary
        with Vertical(classes="dialog -summary") as dialog:
            dialog.border_title = f"#{record.number} {kind}"
            undo = " · u undoes it" if record.kind in ("compaction", "edit") else ""
            edit = " · e edits the summary" if self.current is not None else ""
            dialog.border_subtitle = f"esc closes{undo}{edit}"
            with VerticalScroll(classes="body"):
                facts = record_facts(record, self.price_of)
                width = max(len(label) for label, _ in facts)
                yield Static(
                    Content("\n").join(
                        Content.assemble((f"{label:<{width}}  ", "$text-muted"), value)
                        for label, value in facts
                    ),
                    classes="facts",
                )
                if summary:
                    edited = self.current is not None and self.current != record.summary
                    heading = "Summary (corrected: the model reads this)" if edited else "Summary"
                    yield Static(Content.styled(heading, "bold $text-accent"), classes="heading")
                    yield Markdown(clean(summary), classes="summary")
                shadowed = [s for s in record.shadowed_seqs or () if s < len(self.log_events)]
                if shadowed:
                    title = f"Shadowed items ({len(shadowed)})"
                    yield Static(Content.styled(title, "bold $text-accent"), classes="heading")
                    yield Static(
                        Content("\n").join(
                            Content.assemble(
                                (f"{seq:>5}  ", "$text-muted"),
                                describe_item(self.log_events[seq]),
                            )
                            for seq in shadowed
                        ),
                        classes="shadowed",
                    )

    async def action_dismiss(self, result: int | None = None) -> None:
        self.dismiss(result)

    def action_undo(self) -> None:
        if self.record.kind in ("compaction", "edit"):
            self.dismiss(self.record.number)

    def action_edit(self) -> None:
        if self.current is not None:
            self.app.post_message(SummaryEditRequested())
            self.dismiss(None)
