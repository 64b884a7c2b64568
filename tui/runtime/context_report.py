"""``/context``'s report: what the next request is made of, the window and what is left of
it, the sandbox, and the session's provider-reported totals.

One value, built from the runtime by :meth:`ContextReport.of`; the app draws it in a modal
(:class:`tui.screens.context.ContextScreen`) and the plain REPL and headless print it
(:func:`report_lines`): the same rows in every front end, only the drawing differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.formatting import fmt_tokens
from agent.memory import find_memory
from tui.runtime.compaction_outlook import soon_words
from tui.runtime.gauge_reading import GaugeReading, breakdown_rows
from tui.runtime.memory_report import MemoryRow, memory_rows
from tui.runtime.runtime import Runtime


@dataclass(frozen=True)
class Part:
    """One category of the next request: its tokens and its share of the estimate."""

    label: str
    tokens: int
    share: float


@dataclass(frozen=True)
class Fact:
    """A labelled fact about the window or the sandbox. ``joint`` joins label and value when
    the row is said as a line (``window 4,096 from server``, ``sandbox: workspace-write``)."""

    label: str
    value: str
    joint: str = ": "

    @property
    def line(self) -> str:
        return f"{self.label}{self.joint}{self.value}"


@dataclass(frozen=True)
class ContextReport:
    """See the module docstring."""

    reading: GaugeReading
    """The headline: used / window, percent, the auto threshold (and the spend)."""
    parts: tuple[Part, ...]
    facts: tuple[Fact, ...]
    """The window, what is free of it, where auto-compaction starts, the sandbox."""
    usage: tuple[tuple[str, str], ...]
    """The session's totals (:meth:`tui.runtime.usage_reading.UsageReading.rows`)."""
    estimated: bool
    """The figures are the local tokenizer's estimate (no provider reading yet)."""
    memory: tuple[MemoryRow, ...] = ()
    """The instruction files sent with the workspace context, each with its tokens."""

    @classmethod
    def of(cls, runtime: Runtime) -> ContextReport:
        measurement = runtime.measure()
        threshold = runtime.threshold_tokens
        usage = runtime.usage()
        soon = runtime.compacting_soon(measurement.total)
        outlook = soon_words(runtime) if soon else ""
        reading = GaugeReading.of(measurement, threshold, usage.short, soon, outlook=outlook)
        parts = tuple(Part(*row) for row in breakdown_rows(measurement))
        window = measurement.window
        facts: list[Fact] = []
        if window is not None and window.tokens:
            how = f" ({window.detail})" if window.detail else ""
            facts.append(Fact("window", f"{window.tokens:,} {window.where}".rstrip() + how, " "))
        else:
            facts.append(Fact("window", "unknown — set --context-window", " "))
        if measurement.context_window:
            free = max(0, measurement.context_window - measurement.total)
            facts.append(Fact("free", fmt_tokens(free)))
        if threshold is not None:
            facts.append(Fact("auto-compact at", fmt_tokens(threshold), " "))
        if reading.soon_line:
            facts.append(Fact("compacting soon", outlook))
        facts.append(Fact("sandbox", runtime.sandbox_summary))
        memory = memory_rows(find_memory(runtime.session.cwd), runtime.estimator.count)
        return cls(
            reading, parts, tuple(facts), tuple(usage.rows()), not measurement.measured, memory
        )


ESTIMATED = "~ estimated with the local tokenizer"
TOTALS = "session totals (provider-reported)"
MEMORY = "instruction files (in the workspace context; /memory lists them)"


def report_lines(report: ContextReport) -> list[str]:
    """The report as plain lines (the REPL, headless): the gauge line, then every row."""
    lines = [report.reading.line()]
    for part in report.parts:
        lines.append(f"  {part.label:<15} {fmt_tokens(part.tokens):>7}  {100 * part.share:3.0f}%")
    lines += [f"  {fact.line}" for fact in report.facts]
    if report.memory:
        lines.append(f"  {MEMORY}:")
        lines += [f"    {row.line}" for row in report.memory]
    lines.append(f"  {TOTALS}:")
    lines += [f"    {label:<8} {value}" for label, value in report.usage]
    if report.estimated:
        lines.append(f"  {ESTIMATED}")
    return lines
