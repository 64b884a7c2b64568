"""The bracketed transaction: the RFC's ``compact/start`` → summary → replacement →
``compact/end``, independent of how a backend chooses its range or writes its summary.

``compact/start`` is the lock (:class:`Lock` follows it in the log). The summary is written
while the bracket is open; then the framed checkpoint must be smaller than what it shadows,
the surface must be as it was (log-only appends are fine), and ``compact/summary``, the
replacement ``user/message`` (``surface_op replace``, citing the start, the summary and
every shadowed seq; its last lines name the recall transcripts, :mod:`compact.parts.recall`) and
``compact/end`` land in that order, then the transcript is written. Any failure writes exactly one
``compact/end {error}`` and leaves the surface untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent.log.events import Event
from agent.log.registry import EventError
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.contract.events import CompactEnd, CompactStart, Trigger
from compact.contract.service import CompactionError, CompactionResult
from compact.parts import recall
from compact.parts.checkpoint import Summary, frame


@dataclass(frozen=True)
class Condensed:
    """What a backend's summary step hands the bracket."""

    summary: Summary
    fallback_reason: str | None = None
    """Set when the model-free checkpoint took the model's place, and why."""
    read_all: bool = False
    """The model read the whole conversation (the retained tail too, originals of pruned
    results included): the checkpoint carries what the tail's outputs said."""


class Lock:
    """Open brackets of this process: ``compact/start`` without its ``compact/end`` since
    the newest ``session/resume`` (one before it is an inert crash orphan)."""

    def __init__(self, session: Session) -> None:
        self._open: set[str] = set()
        for event in session.events[session.last_resume_seq or 0 :]:
            self._track(event)
        self._unsubscribe = session.subscribe(self._track)

    def _track(self, event: Event) -> None:
        if isinstance(event, CompactStart):
            self._open.add(event.data.compaction_id)
        elif isinstance(event, CompactEnd):
            self._open.discard(event.data.compaction_id)
        elif event.type == "session/resume":
            self._open.clear()

    @property
    def held(self) -> bool:
        return bool(self._open)

    def close(self) -> None:
        self._unsubscribe()


@dataclass(frozen=True)
class Attempt:
    """What one compaction replaces, and why."""

    span: list[int]
    trigger: Trigger
    turn: int | None
    focus: str | None = None
    source_command_id: str | None = None
    ahead: bool = False
    """The summary was written in the background before the bracket opens (see
    :mod:`compact.basic.ahead`)."""
    mark: int | None = None
    """For an automatic compaction, the mark the context reached."""


Condense = Callable[[str, list[int], int], Awaitable[Condensed]]
"""``(compaction_id, span, shadowed_tokens)`` → the summary, written inside the bracket
(its ``compact/progress`` records carry the compaction id)."""


def append(session: Session, type: str, data: dict[str, Any], **kwargs: Any) -> Event:
    """``session.append`` with log failures as :class:`CompactionError`."""
    try:
        return session.append(type, data, **kwargs)
    except OSError as exc:
        raise CompactionError("persistence", f"writing the session log failed: {exc}") from exc
    except EventError as exc:
        raise CompactionError("commit", f"the replacement was refused: {exc}") from exc


async def bracketed(
    session: Session,
    meter: TokenMeter,
    lock: Lock,
    attempt: Attempt,
    condense: Condense,
    signal: asyncio.Event | None = None,
) -> CompactionResult:
    """Run ``attempt`` as one bracket (see the module docstring). Raises
    :class:`CompactionError`; cancellation closes the bracket and propagates.

    It is one function on purpose: the RFC's order (start, summary, checks, replacement, end)
    reads top to bottom, and one try block guarantees exactly one ``compact/end``.
    """
    if lock.held:
        raise CompactionError("busy", "another compaction is in progress")
    compaction_id = "cmp-" + os.urandom(4).hex()
    span, turn = attempt.span, attempt.turn
    snapshot = tuple(session.surface)
    shadowed_tokens = sum(meter.price(seq) for seq in span)
    chosen = set(span)
    kept = [seq for seq in snapshot if seq not in chosen]
    start = append(
        session,
        "compact/start",
        {
            "compaction_id": compaction_id,
            "trigger": attempt.trigger,
            "turn": turn,
            "focus": attempt.focus,
            "source_command_id": attempt.source_command_id,
            "items": len(span),
            "tokens": shadowed_tokens,
            "ahead": attempt.ahead,
            "context_tokens": meter.measure().total,
            "mark": attempt.mark,
            "kept_items": len(kept),
            "kept_tokens": sum(meter.price(seq) for seq in kept),
        },
    )

    def end(error: str | None, reread: int | None = None) -> Event:
        data = {"compaction_id": compaction_id, "turn": turn, "error": error}
        return append(session, "compact/end", {**data, "reread_tokens": reread})

    try:
        condensed = await condense(compaction_id, span, shadowed_tokens)
        summary = condensed.summary
        framed = frame(summary.text, recall.recall_lines(session, compaction_id, span))
        summary_tokens = meter.estimate_messages([{"role": "user", "content": framed}])
        if summary_tokens >= shadowed_tokens:
            raise CompactionError(
                "summary",
                f"the summary (~{summary_tokens} tokens) is not smaller than the history it "
                f"would replace (~{shadowed_tokens} tokens)",
            )
        if signal is not None and signal.is_set():
            raise CompactionError("cancelled")
        if tuple(session.surface) != snapshot:
            raise CompactionError(
                "changed", "the conversation changed while the summary was written"
            )
        summary_event = append(
            session,
            "compact/summary",
            {
                "compaction_id": compaction_id,
                "summary": summary.text,
                "shadowed_range": {"start": span[0], "end": span[-1]},
                "shadowed_seqs": span,
                "shadowed_tokens": shadowed_tokens,
                "summary_tokens": summary_tokens,
                "model": summary.model,
                "usage": summary.usage.model_dump() if summary.usage else None,
                "max_tokens": summary.max_tokens,
                "fallback_reason": condensed.fallback_reason,
            },
        )
        replacement = append(
            session,
            "user/message",
            {"content": framed, "source": "compact", "compaction_id": compaction_id},
            surface_op={"op": "replace", "start": span[0], "end": span[-1]},
            source_event_seqs=sorted({start.seq, summary_event.seq, *span}),
        )
    except asyncio.CancelledError:
        with contextlib.suppress(CompactionError):
            end("cancelled")
        raise
    except CompactionError as exc:
        end(exc.detail)
        raise
    except Exception as exc:
        with contextlib.suppress(CompactionError):
            end(f"internal error: {exc}")
        raise
    closed = end(None, meter.measure().surface)  # the checkpoint is at the head
    # Committed: now its transcript (after, so no file names what the log lacks). A write
    # that fails is rebuilt from the log at the next open (compact.parts.recall.rebuild_missing).
    with contextlib.suppress(OSError):
        recall.write(session, compaction_id, span, session.spill)
    return CompactionResult(
        compaction_id=compaction_id,
        trigger=attempt.trigger,
        start_seq=start.seq,
        summary_seq=summary_event.seq,
        replacement_seq=replacement.seq,
        end_seq=closed.seq,
        shadowed_range=(span[0], span[-1]),
        shadowed_seqs=list(span),
        shadowed_tokens=shadowed_tokens,
        summary_tokens=summary_tokens,
        summary=summary.text,
        model=summary.model,
    )
