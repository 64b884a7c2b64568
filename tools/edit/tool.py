"""The ``edit`` tool: replace exact text in a file of the workspace, or create a new one.

One approval policy for commands and edits: the edit reads the policy, the approver and the
sandbox mode from its :class:`Gate` (the bash tool), so ``/approve`` and an "always" answer
govern both. ``auto`` applies an edit unless the sandbox is ``read-only`` (which refuses
it), ``ask`` shows the person the unified diff of exactly what will be written, ``deny``
refuses. The bytes written are the ones the diff was made from: when the file changed
between the question and the write, nothing is written and the model is told so.

Snapshots are taken before and after a written edit as around a command, so the card, the
diff, rewind and export see it. All file work is :mod:`tools.edit.files`' (descriptor-based,
no link followed, nothing outside the workspace).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path
from typing import Any, Protocol

from tools.base import (
    ApprovalDecision,
    ApprovalPolicy,
    Approver,
    OutputListener,
    SandboxMode,
    ToolNotStarted,
    ToolOutput,
)
from tools.edit.call import NOT_MADE, EditCall, edit_schema, parse_edit
from tools.edit.files import MAX_BYTES, EditRefused, Place, place, read, text_of, write
from tools.edit.text import Replaced, account, proposal, replace
from tools.question import ProposedEdit
from tools.snapshots.recording import Recorder


class Gate(Protocol):
    """Where an edit's approval comes from: the bash tool's policy, approver, sandbox and
    snapshots (:class:`tools.bash.BashTool`)."""

    policy: ApprovalPolicy
    approver: Approver | None
    snapshots: Recorder | None

    @property
    def sandbox_mode(self) -> SandboxMode: ...


@dataclasses.dataclass(frozen=True)
class _Planned:
    """An edit ready to be asked about: where, what was read, what will be written."""

    where: Place
    before: bytes | None
    after: str
    new: bytes
    """``after`` as written."""
    count: int
    shown: ProposedEdit


class EditTool:
    """The ``edit`` tool (see the module docstring and :func:`tools.edit.call.edit_schema`).

    Args:
        workspace: The session's working directory: paths are relative to it, and nothing
            outside it is edited.
        gate: The approval policy, approver, sandbox mode and snapshots it shares.
        max_bytes: The largest file it reads or writes.
    """

    name: str = "edit"

    def __init__(self, *, workspace: str | Path, gate: Gate, max_bytes: int = MAX_BYTES) -> None:
        self.workspace = Path(workspace).resolve()
        self.gate = gate
        self.max_bytes = max_bytes

    def schema(self) -> dict[str, Any]:
        """Return the OpenAI Chat Completions tool entry for ``edit``."""
        return edit_schema(self.name, max_bytes=self.max_bytes)

    async def run(
        self, arguments: dict[str, Any], on_output: OutputListener | None = None
    ) -> ToolOutput:
        """Check the call, make the diff, get approval, write, and say what changed.

        Every failure the model can act on is an error output: bad arguments, a path
        outside the workspace or through a link, a binary or oversize file, ``old_string``
        not found or found several times, a refusal by the policy, the sandbox or the
        person, the file changed since the diff was shown.

        Raises:
            ToolNotStarted: cancelled while the person was being asked (nothing written).
            Exception: whatever the approver raises (a front-end bug) propagates.
        """
        call = parse_edit(arguments)
        if isinstance(call, str):
            return _error(call)
        mode = self.gate.sandbox_mode
        stopped = self._policy_refusal(mode)
        if stopped is not None:
            return stopped
        try:
            planned = await asyncio.to_thread(self._plan, call)
        except EditRefused as exc:
            return _error(str(exc))
        if isinstance(planned, str):
            return _error(f"{planned} ({call.path}; nothing was changed)")
        asked = self.gate.policy == "ask"
        refusal = await self._approve(planned.shown)
        if refusal is not None:
            return refusal
        output = await self._write(planned, mode)
        approval: ApprovalDecision | None = None
        if asked:
            approval = "always" if self.gate.policy == "auto" else "once"
        return dataclasses.replace(output, approval=approval)

    def _policy_refusal(self, mode: SandboxMode) -> ToolOutput | None:
        if mode == "read-only":
            return _error(
                f"{NOT_MADE}: the sandbox is read-only, so nothing in the workspace may be "
                "written. The user can change that with `--sandbox workspace-write`."
            )
        if self.gate.policy == "deny":
            return _error(
                f"{NOT_MADE}: the user's approval policy denies all commands and edits. The "
                "user can allow them with `--approve auto` or `/approve auto`."
            )
        if self.gate.policy == "ask" and self.gate.approver is None:
            return _error(
                f"{NOT_MADE}: edits need the user's approval, and no one can approve them in "
                "this session. The user can allow them with `--approve auto`."
            )
        return None

    def _plan(self, call: EditCall) -> _Planned | str:
        """Read the file and make the new text and its diff (in a thread: file work)."""
        where = place(self.workspace, call.path)
        data = read(where, self.max_bytes)
        if call.old_string == "":
            if data is not None:
                return (
                    f"{where.shown} already exists: an empty `old_string` only creates a new "
                    "file. Give the text to replace"
                )
            after, count, before_text = call.new_string, 1, None
        else:
            if data is None:
                return f"{where.shown} does not exist: to create it, give an empty `old_string`"
            before_text = text_of(where, data)
            done = replace(before_text, call.old_string, call.new_string, call.replace_all)
            if not isinstance(done, Replaced):
                return done.rstrip(".")
            after, count = done.text, done.count
        try:
            new = after.encode("utf-8")
        except UnicodeEncodeError:
            return "`new_string` holds a lone surrogate, which is no text a file can hold"
        if len(new) > self.max_bytes:
            return f"the file would be over the edit limit of {self.max_bytes:,} bytes"
        shown = proposal(where.shown, before_text, after)
        return _Planned(where, data, after, new, count, shown)

    async def _approve(self, shown: ProposedEdit) -> ToolOutput | None:
        approver = self.gate.approver
        if self.gate.policy == "auto" or approver is None:
            return None  # no approver under ``ask`` was refused before the file was read
        try:
            decision = await approver(shown)
        except asyncio.CancelledError:
            raise ToolNotStarted() from None  # interrupted while asking: nothing written
        if decision == "always":
            self.gate.policy = "auto"
        elif decision != "once":
            return dataclasses.replace(
                _error("The user declined this edit; nothing was written."), approval="deny"
            )
        return None

    async def _write(self, planned: _Planned, mode: SandboxMode) -> ToolOutput:
        """Write between the snapshots before and after (as around a command)."""
        recorder = self.gate.snapshots
        before = None if recorder is None else await recorder.before(mode)
        started = time.monotonic()
        try:
            await asyncio.to_thread(write, planned.where, planned.before, planned.new)
        except EditRefused as exc:
            output = _error(str(exc))
        else:
            text = None if planned.before is None else planned.before.decode("utf-8")
            said = account(planned.where.shown, text, planned.after, planned.count)
            output = ToolOutput(said, duration_s=time.monotonic() - started)
        if recorder is not None:
            output = dataclasses.replace(output, files=await recorder.after(before))
        return output


def _error(message: str) -> ToolOutput:
    return ToolOutput(content=message, is_error=True)
