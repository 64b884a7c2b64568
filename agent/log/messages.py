"""How surface events become OpenAI chat messages: the model's view of one node, and of the
whole surface as it grows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.log.events import (
    AssistantMessage,
    ContextMessage,
    Event,
    SteeringMessage,
    ToolResult,
    UserMessage,
)
from agent.log.surface import Surface

ChatMessage = dict[str, Any]


def event_message(event: Event) -> ChatMessage | None:
    """The chat message a surface node contributes, or None (e.g. an empty assistant reply).

    Reasoning is never sent back: it is shown to the user, not replayed to the model.
    """
    if isinstance(event, UserMessage | ContextMessage | SteeringMessage):
        return {"role": "user", "content": event.data.content}
    if isinstance(event, AssistantMessage):
        data = event.data
        if not data.text and not data.tool_calls:
            return None
        # "" rather than null beside tool calls: llama-cpp-python refuses a null content.
        message: ChatMessage = {"role": "assistant", "content": data.text}
        if data.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in data.tool_calls
            ]
        return message
    if isinstance(event, ToolResult):
        return {"role": "tool", "tool_call_id": event.data.call_id, "content": event.data.content}
    return None


def node_message(surface: Surface, events: Sequence[Event], seq: int) -> ChatMessage | None:
    """The chat message surface node ``seq`` contributes as it stands: its event's message,
    with the text of its newest revision (:class:`agent.log.events.SurfaceRevise`) if any."""
    message = event_message(events[seq])
    text = surface.text(seq)
    if message is None or text is None:
        return message
    return {**message, "content": text}


def checkpoint_index(nodes: Sequence[int], events: Sequence[Event]) -> int | None:
    """The index, among the chat messages of the surface ``nodes``, of the newest checkpoint
    a compaction put there (a user message of source ``compact``), or None: where a prompt
    cache's breakpoint goes. Checkpoints sit near the head: the count before one is short."""
    for position in range(len(nodes) - 1, -1, -1):
        event = events[nodes[position]]
        if isinstance(event, UserMessage) and event.data.source == "compact":
            return sum(1 for seq in nodes[:position] if event_message(events[seq]) is not None)
    return None


class SurfaceMessages:
    """The chat messages of a surface, in order (system prompt not included), kept between
    reads: a read extends them with the nodes appended since; a replace (a new generation
    of the surface) rebuilds them."""

    def __init__(self) -> None:
        self._messages: list[ChatMessage] = []
        self._nodes = 0
        self._generation = 0

    def read(self, surface: Surface, events: Sequence[Event]) -> list[ChatMessage]:
        """The messages of ``surface`` now (``events[seq]`` is the event of node ``seq``).
        The returned list is new; the message dicts are shared and must not be mutated."""
        nodes = surface.nodes
        if self._generation != surface.generation:
            self._messages = []
            self._nodes = 0
            self._generation = surface.generation
        for seq in nodes[self._nodes :]:
            message = node_message(surface, events, seq)
            if message is not None:
                self._messages.append(message)
        self._nodes = len(nodes)
        return list(self._messages)
