"""One tool of an MCP server as a :class:`~tools.base.Tool` named ``mcp__<server>__<tool>``.

A call goes through the session's approval policy (the bash tool's: ``auto`` runs it,
``deny`` refuses it, ``ask`` shows the server, the tool and the arguments; "always" is
remembered for this tool only), then its arguments are checked against the tool's schema,
then it is sent, bounded by the server's ``tool_timeout_s``. Cancellation (Esc, Ctrl+C)
cancels the call. MCP servers are not inside the bash sandbox.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools.base import ApprovalDecision, ApprovalPolicy, Approver, OutputListener, ToolOutput
from tools.mcp.result import capped, content_text
from tools.mcp.server import ListedTool, McpServer, ServerGone
from tools.mcp.spec import tool_name
from tools.question import ToolQuestion
from tools.spill import SpillFolder

NOT_CALLED = "MCP tool not called"
SUMMARY = 60
"""The most characters of a tool's description a deferred listing shows."""
HINT = "The user can allow tool calls with `--approve auto` or `/approve auto`."


@dataclass
class Gate:
    """What every MCP call shares: the session's approval policy and approver (read at each
    call: the bash tool owns them and the front ends set them), the tools the person said
    "always" to, and where long results spill."""

    policy: Callable[[], ApprovalPolicy]
    approver: Callable[[], Approver | None]
    spill: SpillFolder
    max_output_chars: int = 16_000
    always: set[str] = field(default_factory=set)


class McpTool:
    """``mcp__<server>__<tool>``: see the module docstring."""

    def __init__(self, server: McpServer, listed: ListedTool, gate: Gate) -> None:
        self.server = server
        self.listed = listed
        self.gate = gate
        self.name = tool_name(server.name, listed.name)

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.listed.description,
                "parameters": self.listed.input_schema,
            },
        }

    def summary(self) -> str:
        """The description's first sentence, short: what a deferred listing shows."""
        line = (self.listed.description.strip().splitlines() or [""])[0]
        line = line.split(". ")[0].rstrip(".")
        return line if len(line) <= SUMMARY else line[: SUMMARY - 1].rstrip() + "…"

    def approval_text(self, arguments: dict[str, Any]) -> ToolQuestion:
        """What the person is asked about: server, tool and arguments (untrusted: the
        front ends show it through the terminal sanitizer)."""
        shown = json.dumps(arguments, ensure_ascii=False, indent=1)
        return ToolQuestion(
            f"MCP server `{self.server.name}` · tool `{self.listed.name}`\narguments: {shown}",
            asks="Call this MCP tool?",
            where="unsandboxed",
            always=f"From now on {self.name} runs without asking, for the rest of this session.",
        )

    async def run(
        self, arguments: dict[str, Any], on_output: OutputListener | None = None
    ) -> ToolOutput:
        invalid = check_arguments(self.listed.input_schema, arguments)
        if invalid is not None:
            schema = json.dumps(self.listed.input_schema, ensure_ascii=False)
            return ToolOutput(
                f"error: the arguments do not fit {self.name}'s schema: {invalid}. "
                f"Its schema: {schema}",
                is_error=True,
            )
        decision = await self._approve(arguments)
        if isinstance(decision, ToolOutput):
            return decision
        started = time.monotonic()
        try:
            result = await self.server.call(self.listed.name, arguments)
        except ServerGone as exc:
            return _error(f"MCP server `{self.server.name}` is not running: {exc}")
        except TimeoutError:
            limit = self.server.spec.tool_timeout_s
            return _error(f"{self.name} did not answer within {limit:g} s (tool_timeout_s)")
        except Exception as exc:  # the server's JSON-RPC error, a result that does not parse
            return _error(f"{self.name} failed: {' '.join(str(exc).split())}")
        text, truncated, spill = capped(
            content_text(result), self.gate.max_output_chars, self.gate.spill
        )
        return ToolOutput(
            text or "(no content)",
            is_error=bool(getattr(result, "is_error", False)),
            duration_s=time.monotonic() - started,
            truncated=truncated,
            spill_path=spill,
            approval=decision,
        )

    async def _approve(self, arguments: dict[str, Any]) -> ApprovalDecision | ToolOutput | None:
        """None: no one was asked; the person's answer; or the refusal the model reads."""
        policy = self.gate.policy()
        if policy == "auto" or self.name in self.gate.always:
            return None
        if policy == "deny":
            return _error(f"{NOT_CALLED}: the user's approval policy denies all tool calls. {HINT}")
        approver = self.gate.approver()
        if approver is None:
            return _error(
                f"{NOT_CALLED}: tool calls need the user's approval, and no one can approve "
                f"them in this session. {HINT}"
            )
        from tools.base import ToolNotStarted

        try:
            decision = await approver(self.approval_text(arguments))
        except asyncio.CancelledError:
            raise ToolNotStarted() from None  # interrupted while asking: nothing was sent
        if decision == "always":
            self.gate.always.add(self.name)
        elif decision != "once":
            return dataclasses.replace(_error("The user declined this tool call."), approval="deny")
        return decision


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """What is wrong with ``arguments`` under ``schema`` (None: they fit, or the schema
    itself cannot be checked, in which case the server judges)."""
    import jsonschema

    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
        error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(arguments))
    except jsonschema.exceptions.SchemaError:
        return None
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def _error(text: str) -> ToolOutput:
    return ToolOutput(text, is_error=True)
