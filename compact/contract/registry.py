"""The event registry a session is opened with: the core's events and compaction's.

Its own module so that opening a log (the session tools, a viewer) loads nothing of the model
client or the front ends."""

from __future__ import annotations

from agent.log.registry import EventRegistry
from compact.contract.events import register_events


def build_registry() -> EventRegistry:
    """Core events plus the ones the compaction package declares."""
    return register_events(EventRegistry())
