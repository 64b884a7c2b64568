"""The token gauge: used / window, percent, a marker at the auto-compact threshold, the zone
colour, and whether the figure is provider-measured or estimated."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from tui.runtime.gauge_reading import GaugeReading

ZONE_STYLES = {
    "ok": "$success",
    "warn": "$warning",
    "hot": "$error",
    "over": "bold $error",
    "unknown": "$text-muted",
}
ZONE_TEXT = {
    "ok": "$text-success",
    "warn": "$text-warning",
    "hot": "$text-error",
    "over": "bold $text-error",
    "unknown": "$text-muted",
}
"""The same zones for text (contrast-adjusted for dark and light themes)."""
BAR_MIN, BAR_MAX = 8, 48


class TokenGauge(Widget):
    """One line: ``ctx ▕██████░░░░│░░▏ ~5.2k / 12k · 43% · auto at 80% · ~estimated``, then
    what the session used and cost when there is room (``in 41.2k · cache 96% · ~$0.12
    est.``: the newest reply's cache share)."""

    DEFAULT_CSS = "TokenGauge { height: 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.reading: GaugeReading | None = None

    def show(self, reading: GaugeReading) -> None:
        if reading != self.reading:
            self.reading = reading
            self.set_class(reading.zone in ("hot", "over"), "-hot")
            # The line has no room for what the coming compaction costs: hovering says it.
            soon = reading.soon_line
            self.tooltip = soon[:1].upper() + soon[1:] or None
            self.refresh()

    def render(self) -> Content:
        reading = self.reading
        if reading is None:
            return Content.styled("ctx …", "$text-muted")
        style = ZONE_STYLES[reading.zone]
        text_style = ZONE_TEXT[reading.zone]
        tail = " · ".join(reading.details)
        spend = f" · {reading.spend}" if reading.spend else ""
        if not reading.window:
            return Content.assemble(
                ("ctx ", "bold"),
                (reading.used, text_style),
                (f" · {tail}", "$text-muted"),
                (spend, "$text-muted"),
            )
        used = f" {reading.used} "
        fixed = self.size.width - len("ctx ▕▏") - len(used) - 3
        # The bar keeps room to be read; the line sheds its least useful parts first.
        steps = reading.narrowing()
        for i, (details, spent) in enumerate(steps):
            tail = " · ".join(details)
            spend = f" · {spent}" if spent else ""
            room = fixed - len(tail) - len(spend)
            if room >= BAR_MIN + 8 or (i == len(steps) - 1):
                break
        width = max(BAR_MIN, min(BAR_MAX, room))
        filled, cell = reading.bar_cells(width)
        bar: list[str | tuple[str, str]] = []
        for i in range(width):
            if i == cell:
                bar.append(("│", "bold $foreground"))
            elif i < filled:
                bar.append(("█", style))
            else:
                bar.append(("░", "$text-muted"))
        return Content.assemble(
            ("ctx ", "bold"),
            ("▕", "$text-muted"),
            *bar,
            ("▏", "$text-muted"),
            (used, text_style),
            ("· ", "$text-muted"),
            (tail, "$text-muted"),
            (spend, "$text-muted"),
        )
