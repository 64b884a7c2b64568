"""The gauge's view model: what the token gauge, the header percentage, ``/context`` and
the REPL's gauge line show, derived from a measurement and the auto-compact threshold."""

from __future__ import annotations

from dataclasses import dataclass

from agent.formatting import fmt_tokens
from agent.measurement import BREAKDOWN_KEYS, Measurement
from tui.runtime.compaction_outlook import soon_words
from tui.runtime.runtime import Runtime


@dataclass(frozen=True)
class GaugeReading:
    """What the gauge shows, derived from a :class:`Measurement` and the auto threshold."""

    total: int
    window: int | None
    threshold: int | None
    measured: bool
    where: str = ""
    """Where the window figure came from: ``from server``, ``from table``, ``set``..."""
    spend: str = ""
    """What the session used and cost so far (:attr:`tui.runtime.usage_reading.UsageReading.short`),
    said after the details; the first thing a narrow line drops."""
    soon: bool = False
    """Automatic compaction is expected within about two steps (:mod:`compact.reports.forecast`)."""
    cost: str = ""
    """The estimated cost alone (``~$0.12 est.``), what a narrow line keeps of :attr:`spend`."""
    outlook: str = ""
    """While :attr:`soon`: what that compaction costs and saves (``costs …; saves …``,
    :func:`tui.runtime.compaction_outlook.soon_words`); empty otherwise."""

    @classmethod
    def of(
        cls,
        measurement: Measurement,
        threshold: int | None,
        spend: str = "",
        soon: bool = False,
        cost: str = "",
        outlook: str = "",
    ) -> GaugeReading:
        where = measurement.window.where if measurement.window is not None else ""
        return cls(
            measurement.total,
            measurement.context_window,
            threshold,
            measurement.measured,
            where,
            spend,
            soon,
            cost,
            outlook,
        )

    @property
    def soon_line(self) -> str:
        """``compacting soon: costs …; saves …`` while it is soon and its cost is known."""
        return f"compacting soon: {self.outlook}" if self.soon and self.outlook else ""

    @property
    def fraction(self) -> float | None:
        return None if not self.window else self.total / self.window

    @property
    def threshold_fraction(self) -> float | None:
        if not self.window or self.threshold is None:
            return None
        return self.threshold / self.window

    @property
    def zone(self) -> str:
        """``ok``, ``warn`` (nearing the auto threshold), ``hot`` (at or past it) or ``over``
        (past the window); ``unknown`` without a window."""
        fraction = self.fraction
        if fraction is None:
            return "unknown"
        if fraction >= 1:
            return "over"
        limit = self.threshold_fraction or 0.8
        if fraction >= limit:
            return "hot"
        return "warn" if fraction >= limit * 0.75 else "ok"

    @property
    def used(self) -> str:
        """``~52.4k / 128k`` (``~`` while the figure is an estimate)."""
        mark = "" if self.measured else "~"
        if not self.window:
            return f"{mark}{fmt_tokens(self.total)} tokens"
        return f"{mark}{fmt_tokens(self.total)} / {fmt_tokens(self.window)}"

    @property
    def percent(self) -> str:
        fraction = self.fraction
        return "" if fraction is None else f"{100 * fraction:.0f}%"

    @property
    def details(self) -> list[str]:
        """The parts after the bar: percent, the auto threshold, measured or estimated."""
        if not self.window:
            return ["window unknown — set --context-window"]
        return self.details_upto(len(self._detail_parts()))

    def _detail_parts(self) -> list[str]:
        parts = [self.percent]
        threshold = self.threshold_fraction
        parts.append(f"auto at {100 * threshold:.0f}%" if threshold is not None else "auto off")
        if self.soon:
            parts.append("compacting soon")
        parts.append("measured" if self.measured else "~estimated")
        if self.where:
            parts.append(f"window {self.where}")
        return parts

    def details_upto(self, n: int) -> list[str]:
        """The first ``n`` details, in order of use: the percent, the auto mark, ``compacting
        soon``, then ``measured`` (the ``~`` of the figure says it too) and where the window
        came from (``/context`` says it too)."""
        return self._detail_parts()[:n]

    def narrowing(self) -> list[tuple[list[str], str]]:
        """(details, spend) from the fullest line to the barest, each a step a narrower
        gauge takes: where the window came from goes first, then measured/estimated, then
        the input and cached share (the cost stays), the auto mark, and the cost last."""
        full = len(self._detail_parts())
        core = 3 if self.soon else 2
        cost = self.cost  # no cost known: the spend goes whole
        steps = [
            (self.details_upto(full), self.spend),
            (self.details_upto(core + 1), self.spend),
            (self.details_upto(core), self.spend),
            (self.details_upto(core), cost),
            (self.details_upto(1), cost),
            (self.details_upto(1), ""),
        ]
        return [step for i, step in enumerate(steps) if step not in steps[:i]]

    def bar_cells(self, width: int) -> tuple[int, int | None]:
        """(filled cells, threshold cell or None) for a bar ``width`` cells wide."""
        fraction = self.fraction or 0.0
        filled = min(width, round(fraction * width))
        threshold = self.threshold_fraction
        cell = None if threshold is None else min(width - 1, int(threshold * width))
        return filled, cell

    def line(self, width: int = 20) -> str:
        """One plain line for the REPL: ``ctx [█████░░░|░░] ~5.2k / 12k · 43% · auto at 80%``."""
        tail = " · ".join([*self.details, self.spend] if self.spend else self.details)
        if not self.window:
            return f"ctx {self.used} · {tail}"
        filled, cell = self.bar_cells(width)
        bar = ["█" if i < filled else "░" for i in range(width)]
        if cell is not None:
            bar[cell] = "|"
        return f"ctx [{''.join(bar)}] {self.used} · {tail}"


BREAKDOWN_LABELS = {
    "system": "system prompt",
    "tools": "tool schemas",
    "checkpoints": "checkpoints",
    "user": "user & context",
    "assistant": "assistant",
    "tool_results": "tool results",
}


def breakdown_rows(measurement: Measurement) -> list[tuple[str, int, float]]:
    """(label, tokens, share of the estimate) per category, in display order."""
    total = max(1, sum(measurement.breakdown.values()))
    return [
        (BREAKDOWN_LABELS[key], tokens, tokens / total)
        for key in BREAKDOWN_KEYS
        for tokens in [measurement.breakdown.get(key, 0)]
    ]


def current_reading(runtime: Runtime) -> GaugeReading:
    """What the gauge shows now: the next request's size, the auto mark, the spend, and
    whether automatic compaction is near."""
    measurement = runtime.measure()
    soon = runtime.compacting_soon(measurement.total)
    usage = runtime.usage()
    outlook = soon_words(runtime) if soon else ""
    return GaugeReading.of(
        measurement, runtime.threshold_tokens, usage.short, soon, usage.short_cost, outlook
    )
