"""The ``/context`` modal: what the next request is made of, and the session's token totals."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from agent.measurement import Measurement
from compact.wording import fmt_tokens
from tui.gauge_reading import GaugeReading, breakdown_rows
from tui.usage_reading import UsageReading

BAR = 24


def breakdown_lines(
    measurement: Measurement, threshold: int | None, usage: UsageReading, sandbox: str = ""
) -> list[Content]:
    """The body of the modal, one Content per line (also used by tests); ``sandbox`` is
    :attr:`tui.runtime.Runtime.sandbox_summary`.

    It is the modal's layout line by line; split, the order of the lines would be spread over
    several functions.
    """
    reading = GaugeReading.of(measurement, threshold)
    lines = [
        Content.assemble(
            ("Next request  ", "bold"), reading.used, "  ", " · ".join(reading.details)
        ),
        Content(""),
    ]
    for label, tokens, share in breakdown_rows(measurement):
        cells = round(BAR * share)
        lines.append(
            Content.assemble(
                (f"{label:<15}", ""),
                (f"{fmt_tokens(tokens):>7}  ", "bold"),
                ("█" * cells, "$accent"),
                ("░" * (BAR - cells), "$text-muted"),
                (f" {100 * share:4.0f}%", "$text-muted"),
            )
        )
    lines.append(Content(""))
    if measurement.window is not None and measurement.window.tokens:
        window = measurement.window
        how = f" ({window.detail})" if window.detail else ""
        said = f"{window.tokens:,} {window.where}".rstrip()
        lines.append(
            Content.assemble(("window         ", ""), (said, "bold"), (how, "$text-muted"))
        )
    if measurement.context_window:
        free = measurement.context_window - measurement.total
        lines.append(
            Content.assemble(("free           ", ""), (f"{fmt_tokens(max(0, free)):>7}", "bold"))
        )
    if threshold is not None:
        lines.append(
            Content.assemble(("auto-compact at ", ""), (f"{fmt_tokens(threshold):>6}", "bold"))
        )
    if sandbox:
        lines += [Content(""), Content.assemble(("sandbox        ", ""), (sandbox, "bold"))]
    lines += [
        Content(""),
        Content.styled("Session totals (provider-reported)", "bold $text-accent"),
    ]
    for label, value in usage.rows():
        lines.append(Content.assemble((f"{label:<15}", ""), (value, "bold")))
    if not measurement.measured:
        lines += [
            Content(""),
            Content.styled("~ estimated with the local tokenizer", "$text-muted"),
        ]
    return lines


class ContextScreen(ModalScreen[None]):
    """See the module docstring. Esc or q closes."""

    AUTO_FOCUS = "*"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "close")]

    def __init__(
        self,
        measurement: Measurement,
        threshold: int | None,
        usage: UsageReading,
        sandbox: str = "",
    ) -> None:
        super().__init__(classes="modal")
        self.lines = breakdown_lines(measurement, threshold, usage, sandbox)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -context") as dialog:
            dialog.border_title = "Context"
            dialog.border_subtitle = "esc closes"
            yield Static(Content("\n").join(self.lines))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
