"""One tool call run: ``tool/start`` logged, then the tool, or the error the model reads.

A call naming no known tool, or with arguments that do not parse, never reaches a tool: the
model gets an error result that says what was wrong and what it may use instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agent.llm.call_bounds import parse_arguments
from agent.llm.replies import StreamEvent, ToolOutputDelta
from agent.log.events import ToolCall
from agent.log.session import Session
from agent.redaction import StreamRedactor
from agent.turns import TurnState
from tools.base import Tool, ToolOutput


async def run_tool_call(
    session: Session,
    tools: Mapping[str, Tool],
    state: TurnState,
    call: ToolCall,
    emit: Callable[[StreamEvent], None],
) -> ToolOutput:
    """Log ``tool/start`` for ``call``, mark it running in ``state`` and run it; its output
    goes to ``emit`` as :class:`ToolOutputDelta` while it runs, any key in it masked. A tool
    interrupted with output raises :class:`~tools.base.ToolInterrupted` (the turn's closers
    log it)."""
    session.append(
        "tool/start",
        {
            "turn": state.turn,
            "step": state.step,
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
        },
    )
    state.running_call = call.id
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return ToolOutput(
            f"error: there is no tool named {call.name!r}. Available tools: {known}.",
            is_error=True,
        )
    arguments = parse_arguments(call.arguments)
    if isinstance(arguments, ToolOutput):
        return arguments
    # What is shown live is redacted like a reply (the result is, on its way to the log).
    redactor = StreamRedactor()

    def show(text: str) -> None:
        if shown := redactor.feed(text):
            emit(ToolOutputDelta(call.id, shown))

    return await tool.run(arguments, show)
