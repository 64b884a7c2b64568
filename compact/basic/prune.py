"""The tool-result pruner: model-free, cheaper than a summary, tried first.

Two passes over the tool results on the surface, oldest first, checking after each pruned
result whether the context is back where it should be:

- *trim*: a result longer than ``trim_over`` characters keeps its first ``keep_head`` and
  last ``keep_tail`` characters around a marker naming the file with the full output;
- *mask*: a result older than the retained tail becomes a one-line placeholder naming the
  command, its exit code, its line count and the file with the full output (the model can
  read it again with bash).

Each pruned result is a ``compact/prune`` event (its shadow price) followed by the
replacement ``tool/result`` (``surface_op`` replace of that one result, same data, new
content). Pruning is idempotent: a masked result is never pruned again, a trimmed one only
masked (a placeholder always describes the original output and names its file).

A pass is linear in the surface (the commands are looked up once per pass, not per result)
and yields to the event loop before each result: a pass over thousands of results takes
seconds, and a signal handler, a cancel or the screen must not wait for it. A pass stops
there, between results, when cancelled or when its ``signal`` is set; a result's
``compact/prune`` and its replacement are appended with nothing awaited between them, so a
stopped pass leaves whole pairs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from agent.formatting import plural
from agent.log.events import AssistantMessage, ToolResult
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.contract.events import PruneKind, PruneTrigger
from compact.parts.originals import (
    KEEP_HEAD,
    KEEP_TAIL,
    MASK_PREFIX,
    TRIM_MARK,
    command_text,
    ensure_spill,
    head_tail,
    original,
    spill_path,
)
from tools import footer


@dataclass(frozen=True)
class PruneReport:
    results: int = 0
    """How many tool results were pruned."""
    saved_tokens: int = 0
    """Estimated tokens taken off the surface."""


class Pruner:
    """Prunes one session's tool results (see the module docstring)."""

    def __init__(
        self,
        session: Session,
        meter: TokenMeter,
        *,
        trim_over: int = 8192,
        keep_head: int = KEEP_HEAD,
        keep_tail: int = KEEP_TAIL,
    ) -> None:
        if keep_head + keep_tail >= trim_over:
            raise ValueError("keep_head + keep_tail must be below trim_over")
        self.session = session
        self.meter = meter
        self.trim_over = trim_over
        self.keep_head = keep_head
        self.keep_tail = keep_tail

    async def prune(
        self,
        *,
        protect_from: int,
        trigger: PruneTrigger,
        done: Callable[[], bool] | None = None,
        signal: asyncio.Event | None = None,
        kinds: tuple[PruneKind, ...] = ("trim", "mask"),
        carried_by: str | None = None,
    ) -> PruneReport:
        """Trim, then mask results at surface positions before ``protect_from``, stopping as
        soon as ``done()`` is true or ``signal`` is set (checked between results). Returns
        what was pruned. Cancelling the task stops it between results too. ``carried_by``:
        the compaction whose checkpoint read these results (recorded on each prune, so a
        later summary need not read their originals again)."""
        results = saved = 0
        commands = self._commands()
        for kind in kinds:
            for seq in self._candidates(kind, protect_from):
                await asyncio.sleep(0)
                if (signal is not None and signal.is_set()) or (done is not None and done()):
                    return PruneReport(results, saved)
                gained = self._prune_one(seq, kind, trigger, commands, carried_by)
                if gained is not None:
                    results += 1
                    saved += gained
        return PruneReport(results, saved)

    def _candidates(self, kind: str, protect_from: int) -> list[int]:
        events = self.session.events
        nodes = list(self.session.surface)
        if kind == "mask":
            nodes = nodes[: max(0, protect_from)]
        out = []
        for seq in nodes:
            event = events[seq]
            if not isinstance(event, ToolResult):
                continue
            content = event.data.content
            if content.startswith(MASK_PREFIX):
                continue
            if kind == "trim" and (TRIM_MARK in content or len(content) <= self.trim_over):
                continue
            out.append(seq)
        return out

    async def savings(self, protect_from: int) -> int:
        """Estimated tokens a full pass (``done`` never true) would take off the surface.
        Yields to the event loop between results, as a pass does."""
        commands = self._commands()
        after: dict[int, int] = {}
        for kind in ("trim", "mask"):
            for seq in self._candidates(kind, protect_from):
                await asyncio.sleep(0)
                # A trimmed result may be masked too: the mask's price stands.
                after[seq] = self._price_of(self._replacement(seq, kind, commands), seq)
        return sum(max(0, self.meter.price(seq) - price) for seq, price in after.items())

    def _commands(self) -> dict[str, str]:
        """The command of every tool call on the surface, by call id (one walk per pass)."""
        events = self.session.events
        out: dict[str, str] = {}
        for seq in self.session.surface:
            event = events[seq]
            if isinstance(event, AssistantMessage):
                for call in event.data.tool_calls:
                    out[call.id] = command_text(call.name, call.arguments)
        return out

    def _replacement(self, seq: int, kind: PruneKind, commands: dict[str, str]) -> str:
        """The content that replaces result ``seq`` (its full text goes to ``_path(seq)``)."""
        data = original(self.session, self._result(seq)).data
        path = self._path(seq)
        if kind == "trim":
            return head_tail(data.content, self.keep_head, self.keep_tail, path)
        lines = footer.output_lines(data.content)
        exit_code = data.exit_code
        if exit_code is None:
            exit_code = footer.last_exit(data.content)
        status = f"exited {exit_code}" if exit_code is not None else "no exit code"
        if data.is_error:
            status = "failed"
        return (
            f"{MASK_PREFIX}: `{commands.get(data.call_id, 'tool call')}` {status}, "
            f"{plural(lines, 'line')}; full output: {path}]"
        )

    def _price_of(self, content: str, seq: int) -> int:
        """The price of ``content`` as the tool message that replaces result ``seq``."""
        call_id = self._result(seq).data.call_id
        return self.meter.estimate_messages(
            [{"role": "tool", "tool_call_id": call_id, "content": content}]
        )

    def _result(self, seq: int) -> ToolResult:
        event = self.session.events[seq]
        assert isinstance(event, ToolResult)
        return event

    def _path(self, seq: int) -> str:
        first = original(self.session, self._result(seq))
        return first.data.spill_path or str(spill_path(self.session, first.seq))

    def _prune_one(
        self,
        seq: int,
        kind: PruneKind,
        trigger: PruneTrigger,
        commands: dict[str, str],
        carried_by: str | None = None,
    ) -> int | None:
        data = self._result(seq).data
        content = self._replacement(seq, kind, commands)
        before = self.meter.price(seq)
        after = self._price_of(content, seq)
        if after >= before:
            return None
        first = original(self.session, self._result(seq))
        if first.data.spill_path is None:
            ensure_spill(self.session, first.seq, first.data.content)
        prune = self.session.append(
            "compact/prune",
            {
                "shadowed_range": {"start": seq, "end": seq},
                "shadowed_seqs": [seq],
                "shadowed_tokens": before,
                "kind": kind,
                "trigger": trigger,
                "replacement_tokens": after,
                "carried_by": carried_by,
            },
        )
        self.session.append(
            "tool/result",
            {**data.model_dump(), "content": content},
            surface_op={"op": "replace", "start": seq, "end": seq},
            source_event_seqs=[prune.seq, seq],
        )
        return before - after
