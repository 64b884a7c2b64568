"""How a failed chat request is retried: which errors, how often, how long apart."""

from __future__ import annotations

import random
from dataclasses import dataclass

from agent.llm.errors import ConnectionFailed, LLMError


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter for retryable errors, within one ``stream()`` call.

    ``connect_attempts`` caps attempts when the server cannot be reached at all: that is
    usually a wrong URL or a server that is not running, which waiting rarely fixes.
    """

    max_attempts: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    jitter: float = 0.25
    connect_attempts: int = 2

    def attempts_for(self, error: LLMError) -> int:
        """How many attempts in total ``error`` deserves (1 = no retry)."""
        if not error.retryable:
            return 1
        if isinstance(error, ConnectionFailed):
            return min(self.max_attempts, self.connect_attempts)
        return self.max_attempts

    def delay(self, failed_attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after attempt ``failed_attempt`` (1-based) failed. A provider's
        Retry-After is honoured as given, capped at ``max_delay_s``."""
        if retry_after_s is not None:
            return min(retry_after_s, self.max_delay_s)
        backoff = min(self.base_delay_s * 2.0 ** (failed_attempt - 1), self.max_delay_s)
        spread = random.uniform(1 - self.jitter, 1 + self.jitter)
        return max(0.0, min(backoff * spread, self.max_delay_s))
