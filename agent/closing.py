"""Closing what a turn opened, so the log stays well-formed whatever happens.

Every tool call the model asked for gets a logged result (a cancelled or failed turn gives
the unanswered ones an error result: providers refuse a history with a call and no answer),
an open step gets its ``step/end`` and the turn its ``turn/end`` with how it ended. A part
of the loop (it reads the turn's state), writing to the log below it.
"""

from __future__ import annotations

import dataclasses

from agent.log.events import ToolCall, TurnEndReason
from agent.log.session import Session
from agent.turns import TurnResult, TurnState
from tools.base import ToolOutput


def files_record(output: ToolOutput) -> dict[str, object] | None:
    """The ``files`` of a ``tool/result``: the snapshots around the command, what changed."""
    if output.files is None:
        return None
    changes = [{k: v for k, v in vars(c).items() if v is not None} for c in output.files.changes]
    return {"before": output.files.before, "after": output.files.after, "changes": changes}


INTERRUPTED_RUNNING = "error: interrupted by the user while running"
"""How a result the user's interruption cut short begins (the front ends label it so)."""
NOT_RUN_ERROR = "error: not run:"
"""How the result of a call that never ran begins."""


def append_result(session: Session, state: TurnState, call: ToolCall, output: ToolOutput) -> None:
    """Log ``output`` as the ``tool/result`` answering ``call``."""
    session.append(
        "tool/result",
        {
            "turn": state.turn,
            "step": state.step,
            "call_id": call.id,
            "name": call.name,
            "content": output.content,
            "is_error": output.is_error,
            "exit_code": output.exit_code,
            "duration_s": output.duration_s,
            "truncated": output.truncated or None,
            "spill_path": output.spill_path,
            "cwd": output.cwd,
            "approval": output.approval,
            "interrupted": output.interrupted or None,
            "sandbox": output.sandbox,
            "files": files_record(output),
        },
    )


def close_step(session: Session, state: TurnState) -> None:
    if state.step_open:
        session.append("step/end", {"turn": state.turn, "step": state.step})
        state.step_open = False


def end_turn(
    session: Session, state: TurnState, reason: TurnEndReason, *, max_steps: int
) -> TurnResult:
    """Close the step and log ``turn/end``; returns how the turn ended."""
    close_step(session, state)
    error = state.error
    if reason == "max-steps":
        error = (
            f"stopped after {max_steps} steps without a final answer; "
            "send another message to continue"
        )
    session.append("turn/end", {"turn": state.turn, "reason": reason, "error": error})
    cut_at = state.cut_at if reason == "completed" else None
    return TurnResult(state.turn, reason, state.text, error, cut_at)


def keep_partial_reply(session: Session, state: TurnState, model: str) -> None:
    """Log what the user saw of a reply cut short by Esc (``finish_reason: cancelled``)."""
    if state.partial and state.step_open:
        session.append(
            "assistant/message",
            {
                "turn": state.turn,
                "step": state.step,
                "text": "".join(state.partial),
                "finish_reason": "cancelled",
                "model": model,
            },
        )
        state.partial = []


def answer_pending_calls(
    session: Session,
    state: TurnState,
    failure: str | None = None,
    *,
    printed: ToolOutput | None = None,
) -> None:
    """Give every unanswered tool call of the step an error result (pairing stays balanced).
    ``failure``: the turn failed with this error rather than being cancelled by the user.
    ``printed``: what the running call printed before the user interrupted it; its result
    is that output, marked interrupted, after the sentence that says so."""
    for call in state.pending_calls:
        if printed is not None and call.id == state.running_call and failure is None:
            said = f"{INTERRUPTED_RUNNING}; its effects may be partial."
            content = f"{said} Its output until then:\n{printed.content}"
            append_result(session, state, call, dataclasses.replace(printed, content=content))
            continue
        if failure is not None:
            text = (
                f"error: the turn failed while this call ran or its result was being "
                f"recorded ({failure}); its effects may be partial."
                if call.id == state.running_call
                else f"{NOT_RUN_ERROR} the turn failed ({failure})."
            )
        else:
            text = (
                f"{INTERRUPTED_RUNNING}; its effects may be partial."
                if call.id == state.running_call
                else f"{NOT_RUN_ERROR} the user interrupted the turn."
            )
        append_result(session, state, call, ToolOutput(text, is_error=True))
    state.pending_calls.clear()
