"""Prompts of the conformance scenarios, shared with their replays in the default run (a
replay must send what the recording run sent for its exchanges to line up)."""

from __future__ import annotations

REPEAT_CALL = (
    '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -S | head -3"}}\n</tool_call>\n'
    "Repeat the tool call above exactly."
)
"""SmolLM2 at temperature 0 repeats a tool call it is shown."""

STORY = "Write a long story about the sea, at least three paragraphs."


def facts(first: int, count: int) -> str:
    """About 15 tokens per line of distinct, checkable text."""
    colours = ["red", "green", "blue", "amber", "violet", "silver"]
    return "\n".join(
        f"Fact {i}: the {colours[i % len(colours)]} box on shelf {i * 7 % 31} holds "
        f"{i * 13} marbles."
        for i in range(first, first + count)
    )


REMEMBER = "Remember these:\n" + facts(1, 55)
AND_THESE = "And these:\n" + facts(60, 55)
"""Two turns that do not fit a 2,048-token context together."""
