"""One summary written ahead (:mod:`compact.basic.ahead`): what it covers, the surface it
read, the ``compact/progress`` records of its calls held in memory, and the bracket a
discarded one leaves in the log."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from agent.log.session import Session
from compact.contract.service import CompactionError
from compact.parts.checkpoint import SummaryJob
from compact.parts.transaction import Condensed, append


class AheadJob:
    """One summary written in the background: what it covers, the surface it read, and the
    ``compact/progress`` records of its calls (held until its bracket is written)."""

    def __init__(self, span: list[int], snapshot: tuple[int, ...], turn: int, tokens: int) -> None:
        self.span = span
        self.snapshot = snapshot
        self.turn = turn
        self.tokens = tokens
        """The estimated price of ``span``."""
        self.since = time.monotonic()
        self.records: list[dict[str, Any]] = []
        self.sink: Any = None
        """Set when its bracket is open: records go to the log as they come."""
        self.calling: tuple[SummaryJob, float, int] | None = None
        """The summarizer call in flight: its job, start, and the estimated tokens it reads."""
        self.read = asyncio.Event()
        """Set once the summary has read what it needs from the session (its first call)."""
        self.sent = asyncio.Event()
        """Set when the step it started before began its reply (its prompt, which the summary
        continues, is then in the server's cache), or when that step is over: its call goes."""
        self.task: asyncio.Task[Condensed] | None = None

    def record(self, data: dict[str, Any]) -> None:
        if self.sink is not None:
            self.sink(data)
        else:
            self.records.append(data)

    def intact(self, surface: tuple[int, ...]) -> bool:
        """The surface it read is still the head of ``surface`` (only appended to since)."""
        return surface[: len(self.snapshot)] == self.snapshot

    @property
    def failure(self) -> str | None:
        """Why it failed, once it has; None while it runs or after it succeeded."""
        task = self.task
        if task is None or not task.done() or task.cancelled():
            return None
        exc = task.exception()
        if exc is None:
            return None
        return exc.detail if isinstance(exc, CompactionError) else f"internal error: {exc}"

    def cancel(self) -> None:
        """Stop its summary, if it still runs."""
        if self.task is not None and not self.task.done():
            self.task.cancel()


def log_discarded(session: Session, job: AheadJob, why: str) -> None:
    """Stop ``job`` and log what it spent as a discarded bracket (log-only events, outside
    any step): ``compact/start`` (``ahead``), its calls (one cut short recorded as failed),
    ``compact/end`` (``discarded``, with ``why``). Raises :class:`CompactionError` when the
    log cannot be written."""
    records = list(job.records)
    if job.calling is not None:
        summary_job, started, reads = job.calling
        records.append(
            {
                "chunk": len(records) + 1,
                "chunks": max([1, *(r.get("chunks", 1) for r in records)]),
                "items": len(job.span),
                "input_tokens": reads,
                "status": "failed",
                "reason": "stopped when the summary was discarded; the server reported "
                "no usage for it",
                "model": summary_job.model,
                "usage": None,
                "max_tokens": summary_job.max_tokens,
                "elapsed_s": time.monotonic() - started,
            }
        )
    job.cancel()
    compaction_id = "cmp-" + os.urandom(4).hex()
    head = {"compaction_id": compaction_id, "turn": job.turn}
    append(
        session,
        "compact/start",
        {**head, "trigger": "auto", "items": len(job.span), "tokens": job.tokens, "ahead": True},
    )
    for data in records:
        append(session, "compact/progress", {"compaction_id": compaction_id, **data})
    append(session, "compact/end", {**head, "error": f"discarded: {why}", "discarded": True})
