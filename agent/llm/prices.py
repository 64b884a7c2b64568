"""What model calls cost: list prices per million tokens, built in for the models of the
window table (:mod:`agent.llm.window_table`) and given in the config's ``prices`` for others.

The built-in figures are the vendors' public list prices for their own API as last known
here; providers change them, resell models at other prices and bill batch or priority
traffic differently, so every cost computed from them is an **estimate** and is labelled
so wherever it is shown. Self-hosted models (llama, qwen, smollm2) have no price: a model
without one has an unknown cost, which views leave out rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agent.llm.window_table import model_entry

PER = 1_000_000
"""Prices are per this many tokens."""


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens: prompt tokens billed in full, prompt tokens the
    provider served from its prompt cache, and output tokens (reasoning included)."""

    input: float
    cached_input: float
    output: float

    def cost(self, input_tokens: int, cached_tokens: int, output_tokens: int) -> float:
        """Dollars for one call (or a sum of calls): ``cached_tokens`` of ``input_tokens``
        at the cached price, the rest at the input price. A call whose cache figure was not
        reported is passed with ``cached_tokens`` 0: all its input at the full price."""
        cached = min(cached_tokens, input_tokens)
        return (
            (input_tokens - cached) * self.input
            + cached * self.cached_input
            + output_tokens * self.output
        ) / PER


PriceOf = Callable[[str], ModelPrice | None]
"""A model's price, or None when it is not known."""


BUILT_IN_PRICES: Mapping[str, ModelPrice] = {
    # OpenAI, standard tier (estimates from the public price list).
    "gpt-5": ModelPrice(1.25, 0.125, 10.00),
    "gpt-5-mini": ModelPrice(0.25, 0.025, 2.00),
    "gpt-5-nano": ModelPrice(0.05, 0.005, 0.40),
    "gpt-5-chat": ModelPrice(1.25, 0.125, 10.00),
    "gpt-4.1": ModelPrice(2.00, 0.50, 8.00),
    "gpt-4.1-mini": ModelPrice(0.40, 0.10, 1.60),
    "gpt-4.1-nano": ModelPrice(0.10, 0.025, 0.40),
    "gpt-4o": ModelPrice(2.50, 1.25, 10.00),
    "gpt-4o-mini": ModelPrice(0.15, 0.075, 0.60),
    "gpt-4-turbo": ModelPrice(10.00, 10.00, 30.00),  # no prompt-cache discount
    "gpt-3.5-turbo": ModelPrice(0.50, 0.50, 1.50),  # no prompt-cache discount
    "o1": ModelPrice(15.00, 7.50, 60.00),
    "o1-mini": ModelPrice(1.10, 0.55, 4.40),
    "o1-preview": ModelPrice(15.00, 7.50, 60.00),
    "o3": ModelPrice(2.00, 0.50, 8.00),
    "o3-mini": ModelPrice(1.10, 0.55, 4.40),
    "o4-mini": ModelPrice(1.10, 0.275, 4.40),
    # DeepSeek API: one price for both names (cache hit / cache miss / output).
    "deepseek-chat": ModelPrice(0.28, 0.028, 0.42),
    "deepseek-reasoner": ModelPrice(0.28, 0.028, 0.42),
}


def price_of(model: str, configured: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``model``: the config's ``prices`` first, then the built-in table,
    matched like context windows (case, owner prefix, dated variants); None when unknown."""
    return model_entry(model, BUILT_IN_PRICES, configured)


def price_origin(model: str, configured: Mapping[str, ModelPrice] | None = None) -> str:
    """Where :func:`price_of` finds ``model``'s price: ``"config"`` (the config's ``prices``,
    which win) or ``"list"`` (the built-in list prices; also when there is none)."""
    return "config" if configured and model_entry(model, {}, configured) else "list"


def price_book(configured: Mapping[str, ModelPrice] | None = None) -> PriceOf:
    """:func:`price_of` with the configured prices bound in."""
    return lambda model: price_of(model, configured)


def format_cost(dollars: float) -> str:
    """``~$0.12 est.``: a cost, always marked as an estimate (cents below a dollar,
    fractions of a cent shown as ``<$0.01``)."""
    if dollars < 0.005:
        return "~<$0.01 est." if dollars > 0 else "~$0.00 est."
    if dollars < 100:
        return f"~${dollars:.2f} est."
    return f"~${dollars:,.0f} est."
