"""One view item → the widgets the transcript shows for it, and one widget → the plain text a
reader sees (:meth:`tui.widgets.transcript.Transcript.dump`). The transcript builds items
live and on resume with the same functions, so both render alike."""

from __future__ import annotations

from textual.widget import Widget

from agent.loop_settings import cut_text
from tui.text import clean, first_line, home_relative
from tui.view.items import (
    Answer,
    Checkpoint,
    CommandOutcome,
    ContextSent,
    Prompt,
    RetryPlanned,
    SessionForked,
    SessionResumed,
    ToolRun,
    TurnClosed,
    ViewItem,
)
from tui.widgets.entries import Notice, UserEntry
from tui.widgets.marker import CompactionMarker
from tui.widgets.reply import AssistantEntry
from tui.widgets.tool_card import ToolCard

_TURN_END = {
    "cancelled": ("warning", "Interrupted: the turn was closed and any running command stopped."),
    "max-steps": ("warning", "The turn stopped at the step limit."),
    "interrupted": ("warning", "The previous process stopped mid-turn; that turn was closed."),
}


def shows(item: ViewItem) -> bool:
    """Whether ``item`` gets an entry of its own (without building it)."""
    if isinstance(item, Answer):
        return not item.empty or item.cut
    if isinstance(item, TurnClosed):
        return item.reason == "error" or item.reason in _TURN_END
    return isinstance(
        item,
        Prompt
        | ToolRun
        | Checkpoint
        | ContextSent
        | RetryPlanned
        | CommandOutcome
        | SessionResumed
        | SessionForked,
    )


def widgets_for(item: ViewItem) -> list[Widget]:
    """New, unmounted widgets for ``item`` (none for what the transcript does not show)."""
    if isinstance(item, Prompt):
        return [UserEntry(item.text, steering=item.steering)]
    if isinstance(item, Answer):
        entry = [] if item.empty else AssistantEntry(item.text, item.reasoning).widgets()
        return entry + cut_notice(item)
    if isinstance(item, ToolRun):
        card = ToolCard(item.call_id, item.name, item.command, started=item.started)
        if item.result is not None:
            finish_card(card, item)
        if item.pruned:
            card.mark_pruned()
        return [card]
    if isinstance(item, Checkpoint):
        marker = CompactionMarker(item.compaction_id)
        marker.record = item.record
        return [marker]
    if isinstance(item, ContextSent):
        line = home_relative(first_line(item.text))
        return [Notice(f"context sent to the model: {line}", "context")]
    if isinstance(item, RetryPlanned):
        text = (
            f"Model request failed ({clean(item.error)}); retry {item.attempt} "
            f"in {item.delay_s:.1f}s."
        )
        return [Notice(text, "warning")]
    if isinstance(item, CommandOutcome):
        return [Notice(item.text, "info" if item.ok else "warning")]
    if isinstance(item, SessionResumed):
        return [Notice("Session resumed.", "context")]
    if isinstance(item, SessionForked):
        text = f"Forked from session {item.parent}: what came before its seq {item.at_seq}."
        return [Notice(text, "context")]
    if isinstance(item, TurnClosed):
        return _turn_notice(item)
    return []


def finish_card(card: ToolCard, run: ToolRun) -> None:
    result = run.result
    assert result is not None
    card.finish(
        result.content,
        is_error=result.is_error,
        exit_code=result.exit_code,
        duration_s=result.duration_s,
        spill_path=result.spill_path,
        stopped=run.outcome,
        files=result.files,
    )


def cut_notice(answer: Answer) -> list[Widget]:
    return [Notice(cut_text(None), "warning")] if answer.cut else []


def _turn_notice(item: TurnClosed) -> list[Widget]:
    if item.reason == "error":
        return [Notice(item.error or "The turn failed.", "error")]
    if item.reason in _TURN_END:
        level, text = _TURN_END[item.reason]
        if item.error and item.reason != "cancelled":
            text = item.error
        return [Notice(text, level)]  # type: ignore[arg-type]
    return []


def plain(widget: Widget) -> str | None:
    if isinstance(widget, UserEntry):
        return f"{'steer' if widget.steering else 'you'}: {widget.text}"
    if isinstance(widget, AssistantEntry):
        text, reasoning = widget.parts()
        lines = [
            f"reasoning: {reasoning}" if reasoning else "",
            f"assistant: {text}" if text else "",
        ]
        return "\n".join(line for line in lines if line) or None
    if isinstance(widget, ToolCard):
        state = "running" if widget.running else f"exit {widget.exit_code}"
        return f"$ {widget.command} [{state}]\n{widget.output}".rstrip()
    if isinstance(widget, CompactionMarker):
        return f"── {widget.label()}"
    if isinstance(widget, Notice):
        return f"{widget.level}: {widget.plain}"
    return None
