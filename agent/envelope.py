"""The envelope: the header of the coming request, as one frozen value.

The loop builds it once per step (before the pre-step hooks) and hands it to everything that
needs to know what the next request will carry: compaction (which replays the same header
for its summaries, so a provider's prefix cache still applies, and measures against it),
the meter, and the front ends. Nothing downstream reaches into the agent for these parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Envelope:
    provider: str
    model: str
    system: str
    tools: list[dict[str, Any]] = field(default_factory=list)
    window: int | None = None
    """The context window of ``model`` as the window owner resolved it for this step."""
