"""What the session has used and what it cost, as every view says it: the status gauge's
short form, ``/context``'s rows (the app and the plain REPL) and ``reefline sessions``.

The figures are the log's usage totals (:mod:`agent.usage_totals`); the cost is estimated
from list prices (:mod:`agent.llm.prices`) and said to be an estimate, or left out when a price
or a usage figure is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agent.formatting import fmt_tokens, plural
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
    miss_cost: float | None = None
    """Estimated dollars the cache misses cost over hits, None when unknown."""

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
        return cls(
            totals,
            totals.cost(price_of),
            origins or frozenset({"list"}),
            totals.miss_cost(price_of),
        )

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
        """The session's cached share: ``63% cached`` or ``cache not reported``."""
        share = self.totals.cached_share
        return f"cache {NOT_REPORTED}" if share is None else f"{100 * share:.0f}% cached"

    @property
    def last_cached(self) -> str:
        """The newest reply's cached share, as the status line says it: ``cache 96%`` or
        ``cache not reported``."""
        share = self.totals.last_cached_share
        return f"cache {NOT_REPORTED}" if share is None else f"cache {100 * share:.0f}%"

    @property
    def short(self) -> str:
        """The status line's ``in 41.2k · cache 96% · ~$0.12 est.`` (the newest reply's
        cached share); empty before any model call, and ``usage not reported`` when the
        server reports none."""
        return self._said(self.last_cached)

    @property
    def summary(self) -> str:
        """A whole session's line in ``reefline sessions``: ``in 41.2k · 63% cached · ~$0.12
        est.``, then its cache misses when it had some (``2 cache misses: 41k tokens billed
        in full, ~$0.09 est.``)."""
        said = self._said(self.cached)
        misses = self.totals.misses
        if not said or not misses:
            return said
        cost = "" if self.miss_cost is None else f", {format_cost(self.miss_cost)}"
        counted = plural(misses, "cache miss", "cache misses")
        return f"{said} · {counted}: {fmt_tokens(self.totals.missed)} tokens billed in full{cost}"

    def _said(self, cached: str) -> str:
        totals = self.totals
        if totals.calls == 0:
            return ""
        if not totals.reported:
            return f"usage {NOT_REPORTED}"
        parts = [f"in {fmt_tokens(totals.input)}", cached]
        if self.cost is not None:
            parts.append(format_cost(self.cost))
        return " · ".join(parts)

    def miss_row(self) -> tuple[str, str]:
        """``/context``'s line on cache misses (:mod:`agent.cache_misses`): how many, the
        tokens they billed in full that the cache should have served and what that cost;
        ``not reported`` when no call reported a cache figure."""
        totals = self.totals
        if totals.cached_share is None:
            return ("misses", NOT_REPORTED)
        if not totals.misses:
            return ("misses", "none")
        cost = "" if self.miss_cost is None else f" ({format_cost(self.miss_cost)})"
        return (
            "misses",
            f"{totals.misses}: {totals.missed:,} tokens billed in full that the cache should "
            f"have served{cost}",
        )

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
            self.miss_row(),
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
