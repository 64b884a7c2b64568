"""The bridge from the core to Textual: core callbacks become Textual messages.

Session observers and stream listeners are called synchronously inside the core (on the event
loop thread, from the turn's worker). They must not touch widgets, so the bridge only posts a
typed message to the app; handlers then update widgets in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.message import Message
from textual.message_pump import MessagePump

from agent.llm.replies import StreamEvent
from agent.log.events import Event
from compact.contract.service import CompactNotice
from tui.runtime.runtime import Runtime


@dataclass
class SessionEventAppended(Message):
    """An event was appended to the session log."""

    event: Event


@dataclass
class StreamItemReceived(Message):
    """A transient streaming item (text, reasoning or tool-call delta, retry, completion)."""

    item: StreamEvent


@dataclass
class CompactionNoticed(Message):
    """The compaction backend has something to tell the user (breaker, thrash guard...)."""

    notice: CompactNotice


class RuntimeBridge:
    """Subscribes ``target`` to a runtime (:meth:`~tui.runtime.runtime.Runtime.observe`)."""

    def __init__(self, runtime: Runtime, target: MessagePump) -> None:
        self.runtime = runtime
        self.target = target
        self._detach: Callable[[], None] | None = None

    def attach(self) -> None:
        self._detach = self.runtime.observe(self._on_event, self._on_stream, self._on_notice)

    def detach(self) -> None:
        if self._detach is not None:
            self._detach()
            self._detach = None

    def _on_event(self, event: Event) -> None:
        self.target.post_message(SessionEventAppended(event))

    def _on_stream(self, item: StreamEvent) -> None:
        self.target.post_message(StreamItemReceived(item))

    def _on_notice(self, notice: CompactNotice) -> None:
        self.target.post_message(CompactionNoticed(notice))
