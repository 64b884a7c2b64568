"""What the session has used and what it cost, as every view says it: the status gauge's
short form, ``/context``'s rows (the app and the plain REPL) and ``reefline sessions``.

The figures are the log's usage totals (:mod:`agent.usage_totals`); the cost is estimated
from list prices (:mod:`agent.llm.prices`) and said to be an estimate, or left out when a price
or a usage figure is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agent.formatting import fmt_tokens
from agent.llm.prices import ModelPrice, PriceOf, format_cost, price_origin
from agent.usage_totals import UsageTotals

NOT_REPORTED = "not reported"


@dataclass(frozen=True)
class UsageReading:
    totals: UsageTotals
    cost: float | None
    """Estimated dollars, None when unknown."""
    origins: frozenset[str] = frozenset({"list"})
    """Where the prices of the models used came from: ``config``, ``list`` (built in)."""

    @classmethod
    def of(
        cls,
        totals: UsageTotals,
        price_of: PriceOf,
        configured: Mapping[str, ModelPrice] | None = None,
    ) -> UsageReading:
        """The reading of ``totals``; ``configured``: the config's ``prices``, to say
        which prices the cost comes from."""
        origins = frozenset(price_origin(model, configured) for model, _ in totals.by_model)
        return cls(totals, totals.cost(price_of), origins or frozenset({"list"}))

    @property
    def priced_from(self) -> str:
        """``estimated from the prices in your config`` (or the built-in list prices, or
        both): where the cost's figures came from."""
        if self.origins == {"config"}:
            return "estimated from the prices in your config"
        if "config" in self.origins:
            return "estimated from the prices in your config and built-in list prices"
        return "estimated from built-in list prices"

    @property
    def cached(self) -> str:
        """``63% cached`` or ``cache not reported``."""
        share = self.totals.cached_share
        return f"cache {NOT_REPORTED}" if share is None else f"{100 * share:.0f}% cached"

    @property
    def short(self) -> str:
        """``in 41.2k · 63% cached · ~$0.12 est.``; empty before any model call, and
        ``usage not reported`` when the server reports none."""
        totals = self.totals
        if totals.calls == 0:
            return ""
        if not totals.reported:
            return f"usage {NOT_REPORTED}"
        parts = [f"in {fmt_tokens(totals.input)}", self.cached]
        if self.cost is not None:
            parts.append(format_cost(self.cost))
        return " · ".join(parts)

    @property
    def short_cost(self) -> str:
        """``~$0.12 est.``, or empty when :attr:`short` shows no cost."""
        if self.totals.calls == 0 or not self.totals.reported or self.cost is None:
            return ""
        return format_cost(self.cost)

    def rows(self) -> list[tuple[str, str]]:
        """``/context``'s lines for the session's usage: (label, value)."""
        totals = self.totals
        if not totals.reported:
            return [("usage", f"{NOT_REPORTED} by the server")]
        summaries = totals.summary_calls
        calls = f"{totals.calls} model call{'s' if totals.calls != 1 else ''}"
        if summaries:
            calls += f", {summaries} of them summaries"
        share = totals.cached_share
        rows = [
            ("input", f"{totals.input:,} tokens ({calls})"),
            (
                "cached",
                NOT_REPORTED
                if share is None
                else f"{100 * share:.0f}% ({totals.cached:,} tokens reported cached)",
            ),
            ("output", f"{totals.output:,} tokens"),
        ]
        if totals.reports < totals.calls:
            missing = totals.calls - totals.reports
            rows.append(("", f"{missing} of {totals.calls} calls reported no usage"))
        if self.cost is not None:
            rows.append(("cost", f"{format_cost(self.cost)} ({self.priced_from})"))
        else:
            rows.append(("cost", "unknown (no price for a model used, or usage missing)"))
        return rows
