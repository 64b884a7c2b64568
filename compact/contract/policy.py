"""Compaction policy: when to compact and how much history to keep verbatim.

Validated at load: unknown keys are errors, and the retained tail must stay strictly below
the threshold, or the history left after a compaction would trigger the next one at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent.config_file import did_you_mean

MIN_SUMMARY_TOKENS = 256
"""A smaller output cap cannot hold the checkpoint's sections."""
SUMMARY_SHARE = 0.25
"""A summary may cost about this share of what it replaces."""
RETIRED_KEYS = frozenset({"prune_ratio"})
"""Keys that no longer mean anything, accepted (and ignored) so old config files load."""


class CompactionSettings(BaseModel):
    """Compaction policy. Unknown keys are errors; retention must stay below the threshold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = "basic"
    """The compaction backend, by its name in :mod:`compact.backends` (which checks it)."""
    threshold_ratio: float = Field(default=0.8, gt=0, le=1)
    """Compact when the context reaches this share of the window."""
    threshold_tokens: int | None = Field(default=None, gt=0)
    """Compact at this many tokens when that comes before ``threshold_ratio``: a cap on
    what each request costs with a large window. The prune mark and the retained tail keep
    their proportions to the threshold, as if the window were ``threshold_tokens /
    threshold_ratio``."""
    cache_price: float = Field(default=0.1, ge=0, le=1)
    """What an input token a provider already saw in an earlier request's prefix costs,
    against a new one (about 0.1 at Anthropic, DeepSeek and OpenAI; a local server that
    reuses its KV cache is as cheap). It sets how early compaction pays for itself
    (:mod:`compact.basic.schedule`); 0: only the threshold triggers it."""
    retain_ratio: float = Field(default=0.16, ge=0, lt=1)
    """Share of the window kept verbatim at the tail (unless ``retain_tokens`` is set)."""
    retain_tokens: int | None = Field(default=None, ge=0)
    max_tokens: int = Field(default=8192, gt=0)
    """Cap on the summary's length. Each summary is also capped at about a quarter of what
    it replaces, and clamped to what the window leaves."""
    summary_timeout_s: float = Field(default=120.0, gt=0, le=3600)
    """Time budget of one summarizer call; past it the call fails (automatic and overflow
    compactions then use the model-free checkpoint)."""
    retries: int = Field(default=1, ge=0, le=10)
    """Extra compactions in one check while still over the threshold."""
    max_overflow_retries: int = Field(default=1, ge=0, le=5)
    auto: bool = True
    """False: install no listener (``/compact`` still works)."""
    ahead: bool = True
    """Write the automatic compaction's summary in the background, as many steps before its
    mark as the summary takes (one until a summary was timed; :mod:`compact.basic.pace`), so
    the step that reaches the mark need not wait (:mod:`compact.basic.ahead`). False:
    summarize only at the mark, in the foreground."""
    summarizer_model: str | None = None
    """Summarize with this model instead of the conversation's."""
    instructions: str | None = Field(default=None, max_length=4000)
    """Standing instructions for every summary (automatic, manual and overflow alike), added
    to the built-in instruction, never in its place; a ``/compact`` focus comes after."""

    @model_validator(mode="before")
    @classmethod
    def _retired_keys(cls, raw: Any) -> Any:
        # Outputs are masked only inside a compaction, whose checkpoint carries what they
        # said: ``prune_ratio`` set a mark nothing reads any more. A config file that still
        # has it loads as before.
        if isinstance(raw, dict) and RETIRED_KEYS.intersection(raw):
            return {key: value for key, value in raw.items() if key not in RETIRED_KEYS}
        return raw

    @model_validator(mode="after")
    def _retention_below_threshold(self) -> CompactionSettings:
        if self.retain_tokens is None and self.retain_ratio >= self.threshold_ratio:
            raise ValueError(
                f"retain_ratio ({self.retain_ratio}) must be below threshold_ratio "
                f"({self.threshold_ratio}), or history would be compacted again at once"
            )
        return self

    def threshold(self, window: int) -> int:
        by_ratio = math.floor(window * self.threshold_ratio)
        return by_ratio if self.threshold_tokens is None else min(by_ratio, self.threshold_tokens)

    def effective_window(self, window: int) -> float:
        """The window the ratios apply to (the prune mark, the retained tail, the margins
        of the thrash guard): ``window``, or less when ``threshold_tokens`` puts the
        threshold below ``threshold_ratio`` of it."""
        if self.threshold_tokens is None:
            return window
        return min(window, self.threshold_tokens / self.threshold_ratio)

    def summary_cap(self, replaced_tokens: int, window: int | None) -> int:
        """The output cap of a summary replacing ``replaced_tokens``: about a quarter of
        them, at least :data:`MIN_SUMMARY_TOKENS`, within ``max_tokens`` and a fifth of the
        window (the rest of the window is for what the summarizer reads)."""
        cap = max(MIN_SUMMARY_TOKENS, math.floor(replaced_tokens * SUMMARY_SHARE))
        cap = min(cap, self.max_tokens)
        if window is not None:
            cap = min(cap, max(MIN_SUMMARY_TOKENS, window // 5))
        return cap

    def retain(self, window: int) -> int:
        if self.retain_tokens is not None:
            return self.retain_tokens
        return math.floor(self.effective_window(window) * self.retain_ratio)

    def check_window(self, window: int | None) -> None:
        """Reject a retention that reaches the threshold for this window."""
        if window is not None and self.retain(window) >= self.threshold(window):
            how = (
                "threshold_tokens"
                if self.threshold(window) == self.threshold_tokens
                else f"{self.threshold_ratio} × {window}"
            )
            raise ValueError(
                f"retain_tokens ({self.retain(window)}) must be below the threshold "
                f"({self.threshold(window)} tokens = {how})"
            )


def load_compaction_settings(
    raw: Mapping[str, Any], window: int | None = None
) -> CompactionSettings:
    """Validate user settings; the error has one line per bad key, named under
    ``compaction.`` (an unknown one with the nearest known key)."""
    try:
        settings = CompactionSettings.model_validate(dict(raw))
        settings.check_window(window)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                near = did_you_mean(key, CompactionSettings.model_fields)
                message = f"not a compaction setting{near}"
            lines.append(f"compaction{'.' + key if key else ''}: {message}")
        # The rules between keys (retention below the threshold) run only once every key is
        # valid: check them on the valid keys too, so that all errors come in one round.
        bad = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
        if bad:
            try:
                load_compaction_settings({k: v for k, v in raw.items() if k not in bad}, window)
            except ValueError as rest:
                lines += [line for line in str(rest).splitlines() if line not in lines]
        raise ValueError("\n".join(lines)) from None
    except ValueError as exc:
        raise ValueError(f"compaction: {exc}") from None
    return settings
