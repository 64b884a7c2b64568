"""Pure text helpers shared by the Textual app and the plain REPL (no Textual import).

Everything shown to a person that came from a model, a command or a file goes through
:func:`clean` first: escape sequences and control characters are removed so they can neither
break the layout nor reach the terminal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from agent.meter import BREAKDOWN_KEYS, Measurement
from compact.timeline import fmt_tokens

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS / SOS / PM / APC
    r"|\x1b[ -/]*[0-~]?"  # two-character escapes (and a lone ESC)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def clean(text: str) -> str:
    """``text`` without escape sequences or control characters (``\\n`` and ``\\t`` stay;
    a ``\\r\\n`` becomes ``\\n``)."""
    if not text:
        return ""
    text = _ESCAPES.sub("", text.replace("\r\n", "\n"))
    return _CONTROLS.sub("", text)


def one_line(text: str, limit: int = 80) -> str:
    """The first non-empty line of ``text``, cleaned and cut to ``limit`` characters."""
    line = next((ln.strip() for ln in clean(text).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def fmt_elapsed(seconds: float) -> str:
    """``4ms``, ``2.5s``, ``12s``, ``3:05``, ``1:02:03``."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


_FOOTER = re.compile(r"\n?\[exit -?\d+ · [^\]\n]*\]\n?$")


def strip_footer(output: str) -> str:
    """Command output without the bash tool's last ``[exit 0 · 0.01s]`` line (the tool card
    shows the exit code and duration itself)."""
    return _FOOTER.sub("", output)


def bash_command(arguments: str) -> str:
    """The ``command`` of a bash call's raw JSON arguments (the raw text if it is not JSON)."""
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return clean(arguments)
    if isinstance(args, dict) and isinstance(args.get("command"), str):
        return clean(args["command"])
    return clean(arguments)


@dataclass(frozen=True)
class GaugeReading:
    """What the gauge shows, derived from a :class:`Measurement` and the auto threshold."""

    total: int
    window: int | None
    threshold: int | None
    measured: bool

    @classmethod
    def of(cls, measurement: Measurement, threshold: int | None) -> GaugeReading:
        return cls(measurement.total, measurement.context_window, threshold, measurement.measured)

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
        parts = [self.percent]
        threshold = self.threshold_fraction
        parts.append(f"auto at {100 * threshold:.0f}%" if threshold is not None else "auto off")
        parts.append("measured" if self.measured else "~estimated")
        return parts

    def bar_cells(self, width: int) -> tuple[int, int | None]:
        """(filled cells, threshold cell or None) for a bar ``width`` cells wide."""
        fraction = self.fraction or 0.0
        filled = min(width, round(fraction * width))
        threshold = self.threshold_fraction
        cell = None if threshold is None else min(width - 1, int(threshold * width))
        return filled, cell

    def line(self, width: int = 20) -> str:
        """One plain line for the REPL: ``ctx [█████░░░|░░] ~5.2k / 12k · 43% · auto at 80%``."""
        if not self.window:
            return f"ctx {self.used} · " + " · ".join(self.details)
        filled, cell = self.bar_cells(width)
        bar = ["█" if i < filled else "░" for i in range(width)]
        if cell is not None:
            bar[cell] = "|"
        return f"ctx [{''.join(bar)}] {self.used} · " + " · ".join(self.details)


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
