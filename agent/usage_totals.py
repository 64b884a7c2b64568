"""The session's usage totals: a fold of the log over every model call it records.

The log is the truth: each call a provider billed is one event there, carrying the usage
the server reported (:data:`CALL_TYPES`: an assistant reply, and each summarizer call of a
compaction). The totals are the sum of those: prompt tokens in, output tokens, the part of
the prompt the provider served from its cache (over the calls that reported a cache figure),
and the same per model, so that a cost can be estimated from a price table
(:mod:`agent.llm.prices`), the newest reply's cache figure (the status line's share), and
the cache misses (:mod:`agent.cache_misses`: replies whose expected cached prefix the
provider mostly did not serve) with the tokens they billed in full. Every view (the gauge
line, ``/context``, ``reefline sessions``) reads these totals; none adds usage up on its own.

The fold reads an event's type and data as the log spells them (plain JSON values), so a
listing of many sessions can fold raw lines without loading the event models
(:func:`usage_of_log`); a live session feeds its typed events (:meth:`UsageFold.feed`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.cache_misses import cache_miss
from agent.llm.prices import PriceOf
from agent.log.usage_figures import usage_figures

if TYPE_CHECKING:
    from agent.log.events import Event


@dataclass(frozen=True)
class CallType:
    """An event type that records one model call: whether it is a summarizer call, and the
    data field and value that mark a call that billed nothing when it has no usage."""

    summary: bool
    void_field: str
    void_value: str


CALL_TYPES: Mapping[str, CallType] = {
    # A reply the user cut short before the server said anything carries no usage.
    "assistant/message": CallType(False, "finish_reason", "cancelled"),
    # The compaction package's record of one summarizer call (named here as the log spells
    # it; the core does not import that package). A failed call that reported nothing (the
    # connection failed, the server refused) has nothing to add and nothing known missing.
    "compact/progress": CallType(True, "status", "failed"),
}


@dataclass(frozen=True)
class ModelUsage:
    """The calls of one model, summed (``cached`` 0 for calls with no cache figure)."""

    input: int = 0
    cached: int = 0
    output: int = 0
    missed: int = 0
    """Prompt tokens billed in full that the cache should have served (cache misses)."""


@dataclass(frozen=True)
class UsageTotals:
    """Provider-reported usage summed over every model call in the log."""

    input: int = 0
    """Prompt tokens, summary calls included."""
    output: int = 0
    cached: int = 0
    """Prompt tokens served from the provider's prompt cache (calls that reported it)."""
    cache_input: int = 0
    """Prompt tokens of the calls that reported a cache figure: what ``cached`` is a share of."""
    calls: int = 0
    """Model calls the log records (replies, summarizer calls)."""
    reports: int = 0
    """How many of them carried usage; 0 of N: the server reports none ("not reported")."""
    summary_calls: int = 0
    """Of ``calls``, those of the summarizer (compactions)."""
    by_model: tuple[tuple[str, ModelUsage], ...] = field(default=(), compare=False)
    """Usage per model name ("" for a call that named none), for :meth:`cost`."""
    misses: int = 0
    """Replies whose expected cached prefix the provider mostly did not serve
    (:func:`agent.cache_misses.cache_miss`)."""
    missed: int = 0
    """The tokens those misses billed in full that the cache should have served."""
    last_prompt: int = 0
    """Prompt tokens of the newest reply that reported usage (0: none did)."""
    last_cached: int | None = None
    """Its cache figure (None: not reported, or no reply reported usage)."""

    @property
    def reported(self) -> bool:
        """False when calls were made and none carried usage (the totals mean nothing)."""
        return self.reports > 0 or self.calls == 0

    @property
    def total(self) -> int:
        return self.input + self.output

    @property
    def cached_share(self) -> float | None:
        """The cached part of the prompt tokens, 0..1, over the calls that reported a cache
        figure; None when none did (the provider does not say: "not reported")."""
        if self.cache_input <= 0:
            return None
        return min(1.0, self.cached / self.cache_input)

    @property
    def last_cached_share(self) -> float | None:
        """The cached part of the newest reply's prompt, 0..1 (summarizer calls left out:
        the status line speaks of the conversation's requests); None when it reported no
        cache figure."""
        if self.last_cached is None or self.last_prompt <= 0:
            return None
        return min(1.0, self.last_cached / self.last_prompt)

    def miss_cost(self, price_of: PriceOf) -> float | None:
        """Estimated dollars the misses cost over a hit: their tokens billed in full at the
        input price rather than the cached one; None when a model with misses has no known
        price."""
        dollars = 0.0
        for model, usage in self.by_model:
            if not usage.missed:
                continue
            price = price_of(model) if model else None
            if price is None:
                return None
            dollars += price.cost(usage.missed, 0, 0) - price.cost(usage.missed, usage.missed, 0)
        return dollars

    def cost(self, price_of: PriceOf) -> float | None:
        """Estimated dollars for every call, or None when it cannot be told without
        inventing: a call reported no usage, or a model has no known price."""
        if not self.reported or self.reports < self.calls:
            return None
        dollars = 0.0
        for model, usage in self.by_model:
            price = price_of(model) if model else None
            if price is None:
                return None
            dollars += price.cost(usage.input, usage.cached, usage.output)
        return dollars


class UsageFold:
    """Incremental :class:`UsageTotals`: feed each event in log order and read
    :attr:`totals`; O(1) per event. Folding a whole log gives :func:`usage_totals` of it."""

    def __init__(self) -> None:
        self._totals = UsageTotals()
        self._models: dict[str, ModelUsage] = {}

    @property
    def totals(self) -> UsageTotals:
        return self._totals

    def feed(self, event: Event) -> bool:
        """Fold one typed event; True when the totals changed."""
        if event.type not in CALL_TYPES:
            return False
        return self.feed_logged(event.type, event.data.model_dump(include=_FIELDS))

    def feed_logged(self, kind: str, data: Mapping[str, Any]) -> bool:
        """Fold one event given as its type and data as logged; True when the totals
        changed. Values that are not what the log would hold are ignored, not trusted: a
        usage whose figures are not token counts (:func:`usage_figures`) was not reported."""
        call = CALL_TYPES.get(kind)
        if call is None:
            return False
        usage = usage_figures(data.get("usage"))
        old = self._totals
        summary = old.summary_calls + call.summary
        if usage is None:
            if data.get(call.void_field) == call.void_value:
                return False
            self._totals = dataclasses.replace(old, calls=old.calls + 1, summary_calls=summary)
            return True
        prompt, output = usage["prompt_tokens"], usage["completion_tokens"]
        cached = usage["cached_tokens"]
        model = data.get("model")
        name = model if isinstance(model, str) else ""
        miss = cache_miss(cached, data.get("cache_expected"))
        missed = 0 if miss is None else miss.billed_in_full
        seen = self._models.get(name, ModelUsage())
        self._models[name] = ModelUsage(
            seen.input + prompt,
            seen.cached + (cached or 0),
            seen.output + output,
            seen.missed + missed,
        )
        reply = not call.summary
        self._totals = UsageTotals(
            input=old.input + prompt,
            output=old.output + output,
            cached=old.cached + (cached or 0),
            cache_input=old.cache_input + (prompt if cached is not None else 0),
            calls=old.calls + 1,
            reports=old.reports + 1,
            summary_calls=summary,
            by_model=tuple(self._models.items()),
            misses=old.misses + (miss is not None),
            missed=old.missed + missed,
            last_prompt=prompt if reply else old.last_prompt,
            last_cached=cached if reply else old.last_cached,
        )
        return True


_FIELDS = {"usage", "model", "finish_reason", "status", "cache_expected"}
"""The data fields the fold reads."""


def usage_totals(events: Iterable[Event]) -> UsageTotals:
    """The usage totals of a log (see the module docstring)."""
    fold = UsageFold()
    for event in events:
        fold.feed(event)
    return fold.totals


_MARKERS = tuple(f'"type":"{kind}"'.encode() for kind in CALL_TYPES)
"""How a logged line of a call type spells its type (the log's compact JSON)."""


def records_a_call(line: bytes) -> bool:
    """Whether a raw log line may be one of :data:`CALL_TYPES` (a cheap test before parsing)."""
    return any(marker in line for marker in _MARKERS)


def usage_of_log(lines: Iterable[bytes]) -> UsageTotals:
    """:func:`usage_totals` of a log read as raw lines, for a listing of many sessions: only
    the lines of :data:`CALL_TYPES` are parsed, as plain JSON. A line that does not parse is
    skipped (a torn last line, a damaged log): the listing is no load, which reports it."""
    fold = UsageFold()
    for line in lines:
        if not records_a_call(line):
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and isinstance(event.get("data"), dict):
            fold.feed_logged(str(event.get("type")), event["data"])
    return fold.totals
