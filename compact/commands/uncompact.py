"""Undoing a compaction: ``/uncompact [N]``, a key on a timeline row, ``reefline uncompact``.

An edit of a checkpoint's summary (``compact/edit``) is undone the same way: the newest
standing record first, so ``/uncompact`` after an edit brings back the summary as it was.

The newest checkpoint still standing is reversed by one appended ``compact/undo`` whose
``restore`` surface op puts back exactly the items it shadowed (the same seqs: the messages
the model sees again are byte for byte the ones it saw before the compaction). The log keeps
both; the timeline shows the undo as a row of its own.

Refused, with the reason, when: a turn or a compaction is running; #N is not a compaction
that landed; it was undone already; a later compaction merged its checkpoint or still stands
after it (the newest is undone first); or what comes back would not fit the window.

After an undo, automatic compaction does not redo it at once: :class:`Excused` tells the
schedule how many tokens the undo brought back, and the mark moves up by that much until a
compaction lands again, so it waits until new content grows the context past the threshold.

Every function here takes and returns plain values; front ends word nothing themselves.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from agent.envelope import Envelope
from agent.formatting import fmt_tokens, plural
from agent.log.events import CommandDoneData, CommandRunData
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.contract.events import CompactSummary, CompactUndo
from compact.parts.transaction import Lock
from compact.reports.records import TimelineRecord
from compact.reports.timeline import timeline


@dataclass(frozen=True)
class UndoPlan:
    """What undoing compaction ``record`` puts back, and the context it leaves."""

    record: TimelineRecord
    restored_seqs: list[int]
    restored_tokens: int
    checkpoint_tokens: int
    total_before: int
    total_after: int
    window: int | None


@dataclass(frozen=True)
class UndoOutcome:
    """What ``/uncompact`` tells the person; ``plan`` is set when it undid one."""

    ok: bool
    text: str
    plan: UndoPlan | None = None


def plan_undo(
    session: Session, meter: TokenMeter, envelope: Envelope, number: int | None = None
) -> UndoPlan | str:
    """The undo of timeline record ``number`` (None: the newest standing checkpoint), or
    the sentence saying why it cannot be done."""
    if (busy := busy_refusal(session, "undone", "undo")) is not None:
        return busy
    records = timeline(session.events)
    landed = [r for r in records if _standing(session, r)]
    if number is None:
        if not landed:
            return "Nothing to undo: no checkpoint of a compaction is in the context now."
        record = landed[-1]
    elif not 1 <= number <= len(records):
        return f"There is no #{number} in the timeline (/timeline lists it)."
    else:
        record = records[number - 1]
    refused = _refusal(session, records, record)
    if refused is not None:
        return refused
    assert record.replacement_seq is not None
    if record.kind == "edit":
        restored = list(record.shadowed_seqs)
        restored_tokens = record.tokens_before
        checkpoint_tokens = meter.price(restored[0])
    else:
        restored = session.shadowed(record.replacement_seq)
        restored_tokens = sum(meter.price(seq) for seq in restored)
        checkpoint_tokens = meter.price(record.replacement_seq)
    before = meter.measure(envelope).total
    after = before - checkpoint_tokens + restored_tokens
    window = envelope.window
    if window is not None and after > window:
        return (
            f"Undoing #{record.number} would bring the context to ~{fmt_tokens(after)} tokens, "
            f"more than the {fmt_tokens(window)}-token window: it stays compacted. Its "
            "transcript (named in the checkpoint) holds every original."
        )
    return UndoPlan(record, restored, restored_tokens, checkpoint_tokens, before, after, window)


def busy_refusal(session: Session, done: str, do: str) -> str | None:
    """Why the newest checkpoint cannot be changed now (a turn or a compaction runs), or
    None: ``done``/``do`` name the change (``undone``/``undo``, ``edited``/``edit``)."""
    if session.open_turn is not None:
        return f"A turn is running: a compaction is {done} between turns."
    lock = Lock(session)
    try:
        if lock.held:
            return f"A compaction is running: {do} once it has finished."
    finally:
        lock.close()
    return None


def _standing(session: Session, record: TimelineRecord) -> bool:
    seq = record.replacement_seq
    if record.kind == "edit":
        [checkpoint] = record.shadowed_seqs
        return (
            seq is not None
            and session.revised_by(checkpoint) == seq
            and checkpoint in session.surface
        )
    return (
        record.kind == "compaction"
        and record.status == "done"
        and seq is not None
        and session.shadowed(seq) != []
        and seq in session.surface
    )


def _refusal(session: Session, records: list[TimelineRecord], record: TimelineRecord) -> str | None:
    n = record.number
    if record.kind == "edit":
        return _edit_refusal(session, records, record)
    if record.kind != "compaction":
        return f"#{n} is not a compaction (a prune or an undo): only a compaction is undone."
    if record.status != "done" or record.replacement_seq is None:
        return f"#{n} did not land ({record.status}): the context never changed, nothing to undo."
    if record.undone_by is not None and record.replacement_seq not in session.surface:
        return f"#{n} was undone already (#{record.undone_by})."
    later = [r for r in records[n:] if r.kind == "compaction" and r.status == "done"]
    for edit in records[n:]:
        if edit.kind == "edit" and edit.edits == n and _standing(session, edit):
            return (
                f"#{edit.number} corrected its summary and still stands: undo #{edit.number} first."
            )
    for other in later:
        if record.replacement_seq in other.shadowed_seqs:
            m = other.number
            return f"#{m} merged the checkpoint of #{n} into its own: undo #{m} first."
        if _standing(session, other):
            return f"#{other.number} is newer and still stands: undo #{other.number} first."
    if record.replacement_seq not in session.surface:
        return f"The checkpoint of #{n} is no longer in the context: nothing to undo."
    return None


def _edit_refusal(
    session: Session, records: list[TimelineRecord], record: TimelineRecord
) -> str | None:
    if _standing(session, record):
        return None
    n = record.number
    if record.undone_by is not None:
        return f"#{n} was undone already (#{record.undone_by})."
    newer = [r for r in records[n:] if r.kind == "edit" and _standing(session, r)]
    if newer and newer[-1].shadowed_seqs == record.shadowed_seqs:
        m = newer[-1].number
        return f"#{m} corrected the summary again and still stands: undo #{m} first."
    return f"The checkpoint #{n} corrected is no longer in the context: nothing to undo."


def apply_undo(session: Session, plan: UndoPlan, source_command_id: str | None = None) -> None:
    """Append the ``compact/undo`` that carries out ``plan`` (one durable line).

    Raises ``OSError`` when the log cannot be written (the surface is then unchanged)."""
    record = plan.record
    assert record.compaction_id is not None and record.replacement_seq is not None
    session.append(
        "compact/undo",
        {
            "compaction_id": record.compaction_id,
            "replacement_seq": record.replacement_seq,
            "restored_seqs": plan.restored_seqs,
            "restored_tokens": plan.restored_tokens,
            "checkpoint_tokens": plan.checkpoint_tokens,
            "source_command_id": source_command_id,
        },
        surface_op={"op": "restore", "replacement": record.replacement_seq},
    )


def done_text(plan: UndoPlan) -> str:
    """``Undid compaction #2: 42 history items are back (~2.3k → 38.1k tokens) …``"""
    if plan.record.kind == "edit":
        edited = f" of compaction #{plan.record.edits}" if plan.record.edits else ""
        return (
            f"Undid edit #{plan.record.number}: the summary{edited} is back as it was before "
            f"the edit (~{fmt_tokens(plan.checkpoint_tokens)} → "
            f"{fmt_tokens(plan.restored_tokens)} tokens); the model reads it from the next "
            "request."
        )
    items = plural(len(plan.restored_seqs), "history item")
    back = "is" if len(plan.restored_seqs) == 1 else "are"
    return (
        f"Undid compaction #{plan.record.number}: {items} {back} back "
        f"(~{fmt_tokens(plan.checkpoint_tokens)} → {fmt_tokens(plan.restored_tokens)} tokens); "
        f"the context is ~{fmt_tokens(plan.total_after)} tokens. Automatic compaction waits "
        "until new messages grow it past the threshold."
    )


def parse_number(args: str) -> int | str | None:
    """``/uncompact [N]``'s argument: N, None for none, or the usage sentence."""
    arg = args.strip().lstrip("#")
    if not arg:
        return None
    if arg.isdigit() and int(arg) >= 1:
        return int(arg)
    return "Usage: /uncompact [N] — N is a compaction's number in /timeline (default: the newest)."


def uncompact(
    session: Session, meter: TokenMeter, envelope: Envelope, args: str = ""
) -> UndoOutcome:
    """``/uncompact [N]`` as one call: logged as ``command/run`` / ``command/done``."""
    command_id = f"cmd-{uuid.uuid4().hex[:12]}"
    session.append(
        "command/run", CommandRunData(command_id=command_id, name="uncompact", args=args)
    )
    number = parse_number(args)
    plan = number if isinstance(number, str) else plan_undo(session, meter, envelope, number)
    if isinstance(plan, str):
        outcome = UndoOutcome(False, plan)
    else:
        try:
            apply_undo(session, plan, command_id)
            outcome = UndoOutcome(True, done_text(plan), plan)
        except OSError as exc:
            outcome = UndoOutcome(False, f"Could not write the undo to the session log: {exc}")
    done = CommandDoneData(command_id=command_id, ok=outcome.ok, text=outcome.text)
    session.append("command/done", done)
    return outcome


class Excused:
    """Tokens an undo brought back, which automatic compaction does not count until a
    compaction lands again (:attr:`compact.basic.schedule.Schedule.excused`). Folded from the log,
    each event once."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._seen = 0
        self._tokens = 0

    def __call__(self) -> int:
        events = self.session.events
        for event in events[self._seen :]:
            if isinstance(event, CompactSummary):
                self._tokens = 0
            elif isinstance(event, CompactUndo):
                data = event.data
                self._tokens += max(0, data.restored_tokens - data.checkpoint_tokens)
        self._seen = len(events)
        return self._tokens
