"""What the token meter reads out: the size of the next request (the session's usage is
:mod:`agent.usage_totals`).

Values only (frozen); the meter (:mod:`agent.meter`) computes them from the log, and the gauge,
``/context`` and compaction read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.llm.windows import Window

BREAKDOWN_KEYS = ("system", "tools", "checkpoints", "user", "assistant", "tool_results")
"""Keys of :attr:`Measurement.breakdown`, in display order."""


@dataclass(frozen=True)
class Measurement:
    """One reading of the context size of the next request.

    ``total`` is what to compare with the window: provider-anchored when ``measured`` is True,
    else the estimate ``header + surface``. ``breakdown`` is always the estimated composition
    (system, tools, checkpoints, user, assistant, tool_results); it sums to ``total`` only for
    an estimated reading.
    """

    total: int
    surface: int
    header: int
    measured: bool
    context_window: int | None
    breakdown: dict[str, int]
    window: Window | None = field(default=None, compare=False)
    """``context_window`` with where it came from, for the gauge and /context."""

    @property
    def percent(self) -> float | None:
        """``total`` as a percentage of the window, or None when the window is unknown."""
        if not self.context_window:
            return None
        return 100.0 * self.total / self.context_window
