"""How surface events become OpenAI chat messages (the model's view of one node)."""

from __future__ import annotations

from typing import Any

from agent.log.events import (
    AssistantMessage,
    ContextMessage,
    Event,
    SteeringMessage,
    ToolResult,
    UserMessage,
)

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
