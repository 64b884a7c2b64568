"""A finished command as the model sees it: the output, the notes around it, the footer."""

from __future__ import annotations

from tools import footer as footers
from tools.base import ToolOutput
from tools.bwrap import Jail
from tools.capture import Capture
from tools.sandbox import blocked_note


def outcome(
    capture: Capture,
    before: list[str],
    after: list[str],
    returncode: int | None,
    duration: float,
    timed_out: float | None,
    lost: str | None,
    jail: Jail | None,
) -> ToolOutput:
    """What the model is told of a finished command: its output as captured (notes above
    and below it), then one footer line. ``returncode`` is None when the user interrupted
    it; ``timed_out``: the timeout the command ran into (None: it did not); ``lost``: why
    its end is unknown (its jail died under it), said in place of the footer."""
    text, truncated = capture.render()
    exit_code: int | None
    if timed_out is not None:
        exit_code = None
        footer = footers.timed_out(timed_out, duration)
    elif lost is not None:
        exit_code, footer = None, lost
    elif returncode is None:  # interrupted by the user
        exit_code = None
        footer = footers.interrupted(duration)
    else:
        assert returncode is not None, "bash exited without a return code"
        exit_code = 128 - returncode if returncode < 0 else returncode
        footer = footers.exited(exit_code, duration)
    shown = [text.removesuffix("\n")] if text else []
    if jail and (note := blocked_note(jail.mode, jail.network, jail.workspace, text)):
        after = [*after, note]
    content = "\n".join([*before, *shown, *after, footer])
    return ToolOutput(
        content=content,
        is_error=exit_code is None,
        exit_code=exit_code,
        duration_s=duration,
        truncated=truncated,
        spill_path=capture.spill_path if truncated and not capture.spill_error else None,
        interrupted=returncode is None and timed_out is None and lost is None,
        sandbox=jail.mode if jail else "off",
    )
