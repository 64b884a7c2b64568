"""Correcting the summary: the summary modal's editor, ``/compact --edit``, ``/summary edit``.

The newest checkpoint still standing is corrected by one appended ``compact/edit`` whose
``revise`` surface op gives the checkpoint node the person's text (framed as before: the
preamble and the lines naming its recall transcripts stay, so the transcript is untouched).
One durable line: a crash leaves the checkpoint as it was or as corrected, never between.
The model reads the corrected text from the next request on; ``/uncompact`` takes the edit
back like a compaction (the newest standing record first).

Refused, with the reason, when a turn or a compaction runs, no checkpoint stands, the text
is empty or unchanged, or it would not fit: more tokens than the checkpoint's summary was
allowed (the summarizer's output cap), or a context past the window. A refused text is kept
in a draft file in the session's folder, which the refusal names: nothing typed is lost.

Every function here takes and returns plain values; front ends word nothing themselves.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from agent.envelope import Envelope
from agent.formatting import fmt_tokens
from agent.log.events import CommandDoneData, CommandRunData
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.commands.uncompact import busy_refusal
from compact.contract.events import CompactEdit, CompactSummary
from compact.parts.checkpoint import reframe
from compact.reports.records import TimelineRecord
from compact.reports.timeline import timeline


@dataclass(frozen=True)
class Checkpoint:
    """The newest checkpoint standing: its compaction's record, its node, the raw summary
    it shows now (the newest edit's, else the summarizer's) and the cap that summary had."""

    record: TimelineRecord
    seq: int
    summary: str
    budget: int | None


@dataclass(frozen=True)
class EditOutcome:
    """What saving an edit tells the person; ``draft`` names the file a refused text was
    kept in (None when it was saved, or when nothing needed keeping)."""

    ok: bool
    text: str
    draft: Path | None = None


def newest_checkpoint(session: Session) -> Checkpoint | str:
    """The checkpoint an edit corrects, or the sentence saying why there is none."""
    records = timeline(session.events)
    surface = set(session.surface)
    for record in reversed(records):
        seq = record.replacement_seq
        if record.kind != "compaction" or record.status != "done" or seq not in surface:
            continue
        assert seq is not None and record.compaction_id is not None
        summary = record.summary or ""
        revision = session.revised_by(seq)
        if revision is not None:
            edit = session.events[revision]
            assert isinstance(edit, CompactEdit)
            summary = edit.data.summary
        return Checkpoint(record, seq, summary, _budget(session, record.compaction_id))
    return "No checkpoint to edit: no compaction's summary is in the context now."


def _budget(session: Session, compaction_id: str) -> int | None:
    for event in reversed(session.events):
        if isinstance(event, CompactSummary) and event.data.compaction_id == compaction_id:
            return event.data.max_tokens
    return None


def edit_refusal(
    session: Session, meter: TokenMeter, envelope: Envelope, point: Checkpoint, text: str
) -> str | None:
    """Why ``text`` cannot take the place of ``point``'s summary, or None."""
    if (busy := busy_refusal(session, "edited", "edit")) is not None:
        return busy
    if not text.strip():
        return "An empty summary would leave the model nothing of the earlier conversation."
    if text.strip() == point.summary.strip():
        return "Nothing changed: the summary stays as it was."
    tokens = meter.estimator.message_tokens({"role": "user", "content": text})
    if point.budget is not None and tokens > point.budget:
        return (
            f"The corrected summary is ~{fmt_tokens(tokens)} tokens, more than the "
            f"{fmt_tokens(point.budget)} the checkpoint's summary may take "
            "(compaction.max_tokens): shorten it."
        )
    after = meter.measure(envelope).total - meter.price(point.seq) + _price(meter, point, text)
    if envelope.window is not None and after > envelope.window:
        return (
            f"With the corrected summary the context would be ~{fmt_tokens(after)} tokens, more "
            f"than the {fmt_tokens(envelope.window)}-token window: shorten it."
        )
    return None


def _framed(session: Session, point: Checkpoint, text: str) -> str:
    message = session.node_message(point.seq)
    current = str((message or {}).get("content") or "")
    return reframe(current, text)


def _price(meter: TokenMeter, point: Checkpoint, text: str) -> int:
    framed = _framed(meter.session, point, text)
    return meter.estimator.message_tokens({"role": "user", "content": framed})


def apply_edit(
    session: Session, meter: TokenMeter, point: Checkpoint, text: str, command_id: str | None
) -> None:
    """Append the ``compact/edit`` that puts ``text`` in ``point``'s place (one durable
    line). Raises ``OSError`` when the log cannot be written (the surface is unchanged)."""
    assert point.record.compaction_id is not None
    framed = _framed(session, point, text)
    session.append(
        "compact/edit",
        {
            "compaction_id": point.record.compaction_id,
            "checkpoint_seq": point.seq,
            "summary": text,
            "tokens_before": meter.price(point.seq),
            "tokens_after": meter.estimator.message_tokens({"role": "user", "content": framed}),
            "source_command_id": command_id,
        },
        surface_op={"op": "revise", "target": point.seq, "content": framed},
    )


def keep_draft(session: Session, text: str) -> Path | None:
    """Write ``text`` to a new draft file in the session's folder (0600); its path, or None
    when it could not be written."""
    name = f"summary-draft-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}.md"
    try:
        with session.spill.create(name) as f:
            f.write(text.encode("utf-8", "replace"))
    except OSError:
        return None
    return Path(session.spill.name_of(name))


def edit_summary(session: Session, meter: TokenMeter, envelope: Envelope, text: str) -> EditOutcome:
    """Save ``text`` as the newest checkpoint's summary, as one call: logged as
    ``command/run`` / ``command/done`` (the text itself is in the ``compact/edit``, or in
    the draft file a refusal names)."""
    command_id = f"cmd-{uuid.uuid4().hex[:12]}"
    session.append(
        "command/run", CommandRunData(command_id=command_id, name="summary", args="edit")
    )
    point = newest_checkpoint(session)
    refused = point if isinstance(point, str) else None
    if isinstance(point, Checkpoint):
        refused = edit_refusal(session, meter, envelope, point, text)
    if refused is None and isinstance(point, Checkpoint):
        try:
            apply_edit(session, meter, point, text, command_id)
            outcome = EditOutcome(True, done_text(point))
        except OSError as exc:
            refused = f"Could not write the edit to the session log: {exc}"
    if refused is not None:
        outcome = refused_outcome(session, refused, text)
    session.append(
        "command/done", CommandDoneData(command_id=command_id, ok=outcome.ok, text=outcome.text)
    )
    return outcome


def refused_outcome(session: Session, reason: str, text: str) -> EditOutcome:
    """``reason``, and where ``text`` was kept (nothing to keep when it is empty)."""
    if not text.strip():
        return EditOutcome(False, f"Not saved: {reason}")
    draft = keep_draft(session, text)
    kept = f" Your text is kept in {draft}." if draft else ""
    return EditOutcome(False, f"Not saved: {reason}{kept}", draft)


def done_text(point: Checkpoint) -> str:
    """``Corrected the summary of compaction #1: …``"""
    return (
        f"Corrected the summary of compaction #{point.record.number}: the model reads it from "
        "the next request. /uncompact takes the edit back."
    )
