"""The ``/context`` modal: what the next request is made of, and the session's token totals."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from agent.formatting import fmt_tokens
from tui.runtime.context_report import ESTIMATED, MEMORY, TOTALS, ContextReport

BAR = 24


def breakdown_lines(report: ContextReport) -> list[Content]:
    """The body of the modal, one Content per line (also used by tests).

    It is the modal's layout line by line; split, the order of the lines would be spread over
    several functions.
    """
    reading = report.reading
    lines = [
        Content.assemble(
            ("Next request  ", "bold"), reading.used, "  ", " · ".join(reading.details)
        ),
        Content(""),
    ]
    for part in report.parts:
        cells = round(BAR * part.share)
        lines.append(
            Content.assemble(
                (f"{part.label:<15}", ""),
                (f"{fmt_tokens(part.tokens):>7}  ", "bold"),
                ("█" * cells, "$accent"),
                ("░" * (BAR - cells), "$text-muted"),
                (f" {100 * part.share:4.0f}%", "$text-muted"),
            )
        )
    lines.append(Content(""))
    for fact in report.facts:
        value, _, how = fact.value.partition(" (")
        lines.append(
            Content.assemble(
                (f"{fact.label:<15}{' ' if len(fact.label) >= 15 else ''}", ""),
                (value, "bold"),
                (f" ({how}" if how else "", "$text-muted"),
            )
        )
    if report.memory:
        lines += [Content(""), Content.styled(MEMORY.capitalize(), "bold $text-accent")]
        lines += [Content(row.line) for row in report.memory]
    lines += [Content(""), Content.styled(TOTALS.capitalize(), "bold $text-accent")]
    for label, value in report.usage:
        lines.append(Content.assemble((f"{label:<15}", ""), (value, "bold")))
    if report.estimated:
        lines += [Content(""), Content.styled(ESTIMATED, "$text-muted")]
    return lines


class ContextScreen(ModalScreen[None]):
    """See the module docstring. Esc or q closes."""

    AUTO_FOCUS = "*"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "close")]

    def __init__(self, report: ContextReport) -> None:
        super().__init__(classes="modal")
        self.lines = breakdown_lines(report)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -context") as dialog:
            dialog.border_title = "Context"
            dialog.border_subtitle = "esc closes"
            yield Static(Content("\n").join(self.lines))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
