"""The one check of a token figure a server reported, wherever it is read: off the wire
(:mod:`agent.llm.wire_usage`), from a logged event (:class:`agent.log.events.Usage`'s loaders)
and from a raw log line (:mod:`agent.usage_totals`, which a listing of many sessions folds
without pydantic).

A server's numbers are data: a figure is a whole number (an int, or a float with no
fraction), finite, from 0 to :data:`MAX_TOKENS`; anything else (``1e400``, ``NaN``, ``-3``,
``"12"``, a JSON integer of 400 digits) is not reported. A usage whose prompt or output figure
is not one is not reported as a whole: its other figures describe a call nobody can tell the
size of. Logs written before this check may hold such a figure; they load, with that usage
as not reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_TOKENS = 10**9
"""More tokens than any one model call has used or billed (windows are ~10**6): a larger
figure is a server's mistake, and would overflow the float arithmetic of costs and shares."""

FIELDS = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")
"""A logged usage's figures, as :class:`agent.log.events.Usage` names them."""


def token_figure(value: object) -> int | None:
    """``value`` as a token count, or None when it is not one (see the module docstring)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not value.is_integer():  # NaN and the infinities are not integers either
            return None
        value = int(value)
    if not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_TOKENS else None


def usage_figures(raw: object) -> dict[str, Any] | None:
    """A logged usage (a mapping of :data:`FIELDS`), checked: None when it is not a mapping
    or its prompt or output figure is not a token figure; a cached figure that is not one
    is None ("not reported"), a reasoning figure 0; the cached part is at most the prompt.
    Keys other than :data:`FIELDS` are left out."""
    if not isinstance(raw, Mapping):
        return None
    prompt = token_figure(raw.get("prompt_tokens"))
    output = token_figure(raw.get("completion_tokens"))
    if prompt is None or output is None:
        return None
    cached = token_figure(raw.get("cached_tokens"))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "cached_tokens": None if cached is None else min(cached, prompt),
        "reasoning_tokens": token_figure(raw.get("reasoning_tokens")) or 0,
    }
