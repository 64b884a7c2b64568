"""The compaction timeline: a pure fold of real session logs."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import ConfigDict

from agent.formatting import fmt_duration, fmt_tokens
from agent.log.events import Data, Event, Usage
from agent.log.session import Session
from compact.contract.events import (
    CompactEnd,
    CompactEndData,
    CompactStart,
    CompactStartData,
    CompactSummary,
)
from compact.reports.records import MISSING_REPLACEMENT, MISSING_SUMMARY, TimelineRecord
from compact.reports.timeline import TimelineFold, timeline
from compact.reports.wording import describe
from tests.compact import (
    answer,
    bash_step,
    compaction,
    failed_compaction,
    new_session,
    prune,
    registry,
    reopen,
    start_compaction,
    user_turn,
)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    s = new_session(tmp_path)
    yield s
    s.close()


def explored(session: Session, turn: int = 1, steps: int = 2) -> list[Event]:
    """A turn whose first ``steps`` steps each ran a command; returns their tool/results."""
    user_turn(session, turn, "find why the build fails")
    results = [
        bash_step(session, turn, step, f"make step{step}", f"output {step}\n" * 5)[1]
        for step in range(1, steps + 1)
    ]
    answer(session, turn, steps + 1, "The header parser was renamed.")
    return results


# --- statuses ---------------------------------------------------------------------------------


def test_done_compaction_record(session: Session) -> None:
    explored(session)
    ev = compaction(session, "c1", keep=1, focus="the parser")

    [record] = timeline(session.events)
    shadowed = session.shadowed(ev["checkpoint"].seq)
    assert record.number == 1
    assert record.kind == "compaction"
    assert record.compaction_id == "c1"
    assert record.trigger == "auto"
    assert record.status == "done"
    assert record.items_before == len(shadowed) > 1
    assert record.items_after == 1
    assert record.shadowed_seqs == shadowed
    assert (record.tokens_before, record.tokens_after) == (38_100, 2_300)
    assert record.saved_tokens == 35_800
    assert record.summary == "## Primary request and intent\nfix the build"
    assert record.focus == "the parser"
    assert record.model == "summarizer-m"
    assert record.usage == Usage(prompt_tokens=900, completion_tokens=120)
    assert record.error is None
    assert record.turn is None
    assert record.start_seq == ev["start"].seq
    assert record.replacement_seq == ev["checkpoint"].seq
    assert record.end_seq == ev["end"].seq
    assert record.started_at == ev["start"].time
    assert record.ended_at == ev["end"].time
    assert record.duration_s is not None and record.duration_s >= 0


def test_failed_compaction_keeps_its_error(session: Session) -> None:
    explored(session)
    failed_compaction(session, "c1", "the summarizer returned nothing", trigger="manual")

    [record] = timeline(session.events)
    assert record.status == "failed"
    assert record.error == "the summarizer returned nothing"
    assert record.summary is None
    assert (record.items_before, record.items_after, record.replacement_seq) == (0, 0, None)
    assert describe(record) == "#1 manual · failed: the summarizer returned nothing"


def test_end_without_error_but_without_summary_is_not_done(session: Session) -> None:
    explored(session)
    start_compaction(session, "c1")
    session.append("compact/end", {"compaction_id": "c1"})

    [record] = timeline(session.events)
    assert record.status == "failed"
    assert record.error == MISSING_SUMMARY


def test_running_until_end_then_done(session: Session) -> None:
    explored(session)
    fold = TimelineFold()
    fold.feed_all(session.events)
    start = start_compaction(session, "c1", trigger="manual", focus="the parser")
    assert fold.feed(start)
    [record] = fold.records
    assert record.status == "running"
    assert record.ended_at is None and record.duration_s is None
    assert record.elapsed(start.time + 4.0) == pytest.approx(4.0)
    assert describe(record) == '#1 manual · running · focus "the parser"'


def test_orphan_before_resume_is_interrupted(session: Session) -> None:
    explored(session, steps=1)
    user_turn(session, 2, "go on")
    start_compaction(session, "crashed", turn=2)
    assert [r.status for r in timeline(session.events)] == ["running"]

    # A viewer that only reads the log cannot tell a crash from a live compaction...
    viewer = Session.open(session.home, session.id, registry=registry(), readonly=True)
    assert [r.status for r in timeline(viewer.events)] == ["running"]
    # ...unless it knows no process writes the log any more.
    assert [r.status for r in timeline(viewer.events, closed=True)] == ["interrupted"]

    resumed = reopen(session)  # repairs turn 2 and appends session/resume
    try:
        assert resumed.report.repaired  # the crash left the turn open
        [record] = timeline(resumed.events)
        assert record.status == "interrupted"
        assert record.ended_at is None
        assert record.turn == 2
        assert describe(record) == "#1 auto · interrupted"

        # The orphan is inert: the next compaction is an ordinary new record.
        compaction(resumed, "c2", keep=1)
        orphan, done = timeline(resumed.events)
        assert (orphan.status, done.status, done.number) == ("interrupted", "done", 2)
    finally:
        resumed.close()


def test_checkpoint_without_compaction_id_is_matched_by_citation(session: Session) -> None:
    explored(session)
    nodes = list(session.surface)
    start = start_compaction(session, "c1")
    summary = session.append(
        "compact/summary",
        {
            "compaction_id": "c1",
            "summary": "s",
            "shadowed_range": {"start": nodes[0], "end": nodes[-2]},
            "shadowed_seqs": nodes[:-1],
            "shadowed_tokens": 500,
            "summary_tokens": 20,
            "model": "m",
        },
    )
    checkpoint = session.append(
        "user/message",
        {"content": "framed", "source": "compact"},
        surface_op={"op": "replace", "start": nodes[0], "end": nodes[-2]},
        source_event_seqs=[start.seq, summary.seq, *nodes[:-1]],
    )
    session.append("compact/end", {"compaction_id": "c1"})
    [record] = timeline(session.events)
    assert (record.status, record.replacement_seq, record.items_after) == (
        "done",
        checkpoint.seq,
        1,
    )


# --- prune batches ----------------------------------------------------------------------------


def test_consecutive_prunes_form_one_batch(session: Session) -> None:
    results = explored(session, steps=3)
    replacements = [
        prune(session, r, f"[output of make step{i} masked]", tokens=3_000 + i)[1]
        for i, r in enumerate(results)
    ]

    [batch] = timeline(session.events)
    assert batch.kind == "prune"
    assert batch.compaction_id is None
    assert batch.trigger == "pressure"
    assert batch.status == "done"
    assert batch.items_before == batch.items_after == 3
    assert batch.tokens_before == 9_003
    assert batch.tokens_after is None
    assert batch.saved_tokens == 9_003
    assert batch.shadowed_seqs == [r.seq for r in results]
    assert batch.replacement_seq == replacements[-1].seq
    assert batch.started_at <= batch.ended_at  # type: ignore[operator]
    assert describe(batch) == "#1 prune · done · 3 results · −9k tokens"


def test_batches_are_split_by_any_other_event(session: Session) -> None:
    results = explored(session, steps=3)
    user_turn(session, 2, "and now?")
    prune(session, results[0], "[masked]", trigger="overflow")
    prune(session, results[1], "[masked]", trigger="overflow")
    session.append("step/start", {"turn": 2, "step": 1})
    prune(session, results[2], "[masked]")
    session.append("step/end", {"turn": 2, "step": 1})
    compaction(session, "c1", keep=1)

    records = timeline(session.events)
    assert [(r.number, r.kind, r.trigger, r.items_before) for r in records] == [
        (1, "prune", "overflow", 2),
        (2, "prune", "pressure", 1),
        (3, "compaction", "auto", records[2].items_before),
    ]
    assert all(r.status == "done" for r in records)
    assert describe(records[0]).startswith("#1 prune (overflow) · done · 2 results")


def test_a_pricer_gives_prunes_their_after_tokens(session: Session) -> None:
    results = explored(session, steps=2)
    for r in results:
        prune(session, r, "x" * 40, tokens=1_000)

    def price(event: Event) -> int:
        return len(event.data.content) // 4  # type: ignore[attr-defined]

    [batch] = timeline(session.events, price=price)
    assert (batch.tokens_before, batch.tokens_after, batch.saved_tokens) == (2_000, 20, 1_980)


def test_prune_without_replacement_fails_or_is_interrupted(session: Session) -> None:
    results = explored(session, steps=2)
    seq = results[0].seq
    prune_data = {
        "shadowed_range": {"start": seq, "end": seq},
        "shadowed_seqs": [seq],
        "shadowed_tokens": 700,
    }
    session.append("compact/prune", prune_data)
    [batch] = timeline(session.events)
    assert batch.status == "running"

    session.append("turn/start", {"turn": 2})  # the replacement never came
    [batch] = timeline(session.events)
    assert (batch.status, batch.error, batch.items_after) == ("failed", MISSING_REPLACEMENT, 0)

    # Overflow recovery prunes inside a step; a crash there leaves step and turn open.
    session.append("step/start", {"turn": 2, "step": 1})
    seq = results[1].seq
    session.append(
        "compact/prune",
        {**prune_data, "shadowed_range": {"start": seq, "end": seq}, "shadowed_seqs": [seq]},
    )
    resumed = reopen(session)  # repair: step/end, turn/end interrupted; then session/resume
    try:
        assert [e.type for e in resumed.events[-3:]] == ["step/end", "turn/end", "session/resume"]
        first, second = timeline(resumed.events)
        assert (first.status, first.error) == ("failed", MISSING_REPLACEMENT)
        assert (second.status, second.error, second.items_after) == ("interrupted", None, 0)
    finally:
        resumed.close()


# --- incremental fold -------------------------------------------------------------------------


def test_incremental_fold_equals_full_fold_after_every_event(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    fold = TimelineFold()
    fold.feed_all(session.events)
    checked = 0

    def observe(event: Event) -> None:
        nonlocal checked
        before = fold.records
        changed = fold.feed(event)
        after = fold.records
        assert after == timeline(session.events)
        assert changed == (after != before), event.type
        checked += 1

    unsubscribe = session.subscribe(observe)
    results = explored(session, steps=3)
    prune(session, results[0], "[masked]")
    prune(session, results[1], "[masked]")
    compaction(session, "c1", keep=1, trigger="overflow", turn=1)
    failed_compaction(session, "c2", "changed")
    user_turn(session, 2, "again")
    results = [bash_step(session, 2, 1, "ls", "a\nb")[1]]
    start_compaction(session, "c3", turn=2)
    unsubscribe()
    assert checked > 30

    resumed = reopen(session)  # the crash orphan c3 turns interrupted on resume
    try:
        fold = TimelineFold()
        for event in resumed.events:
            fold.feed(event)
            assert fold.records == timeline(resumed.events[: event.seq + 1])
        assert [r.status for r in fold.records] == ["done", "done", "failed", "interrupted"]
        assert fold.record("c1") == fold.records[1]
        assert fold.record("nope") is None
    finally:
        resumed.close()


# --- robustness -------------------------------------------------------------------------------


class _LegacyData(Data):
    model_config = ConfigDict(frozen=True, extra="allow")


class _LegacyStart(Event):
    """A ``compact/start`` as an older version wrote it (no compaction_id)."""

    type: Literal["compact/start"] = "compact/start"
    data: _LegacyData


class _ForeignMarker(Event):
    """A ``compact/*`` type some other package registered."""

    type: Literal["compact/marker"] = "compact/marker"
    data: _LegacyData


def test_legacy_and_unknown_compact_events_are_ignored(tmp_path: Path) -> None:
    reg = registry()
    reg.register(_ForeignMarker)
    session = Session.create(tmp_path / "home", cwd=str(tmp_path), registry=reg)
    try:
        explored(session)
        session.append("compact/marker", {"note": "x"})
        # Closers for brackets that never started, and a start without an id.
        session.append("compact/end", {"compaction_id": "ghost", "error": "x"})
        session.append(
            "compact/summary",
            {
                "compaction_id": "ghost",
                "summary": "s",
                "shadowed_range": {"start": 1, "end": 1},
                "shadowed_seqs": [1],
                "shadowed_tokens": 1,
                "model": "m",
            },
        )
        start_compaction(session, "")
        assert timeline(session.events) == []

        fold = TimelineFold()
        fold.feed_all(session.events)
        n = len(session.events)
        legacy = _LegacyStart(seq=n, time=1.0, data=_LegacyData(trigger="auto"))  # type: ignore[call-arg]
        assert fold.feed(legacy) is False
        # A start repeated with the same id does not open a second record.
        first = CompactStart(
            seq=n + 1, time=2.0, data=CompactStartData(compaction_id="c", trigger="auto")
        )
        again = CompactStart(
            seq=n + 2, time=3.0, data=CompactStartData(compaction_id="c", trigger="auto")
        )
        assert fold.feed(first) is True
        assert fold.feed(again) is False
        end = CompactEnd(seq=n + 3, time=4.0, data=CompactEndData(compaction_id="c", error="boom"))
        assert fold.feed(end) is True
        [record] = fold.records
        assert (record.started_at, record.ended_at, record.status) == (2.0, 4.0, "failed")
        assert fold.feed(end) is False  # a second end for a closed bracket
        assert isinstance(CompactSummary, type)
    finally:
        session.close()


# --- formatting -------------------------------------------------------------------------------


def _record(**changes: object) -> TimelineRecord:
    base: dict[str, object] = {
        "number": 1,
        "kind": "compaction",
        "compaction_id": "c1",
        "trigger": "auto",
        "status": "done",
        "started_at": 100.0,
        "ended_at": 104.2,
        "items_before": 42,
        "items_after": 1,
        "tokens_before": 38_100,
        "tokens_after": 2_300,
        "summary": "s",
        "model": "gpt-4.1",
    }
    base.update(changes)
    return TimelineRecord(**base)  # type: ignore[arg-type]


def test_describe_lines() -> None:
    assert describe(_record()) == "#1 auto · done · 42 items · 38.1k → 2.3k tokens · 4.2s"
    prune_batch = _record(
        number=2,
        kind="prune",
        compaction_id=None,
        trigger="pressure",
        items_before=3,
        items_after=3,
        tokens_before=9_700,
        tokens_after=None,
        model=None,
    )
    assert describe(prune_batch) == "#2 prune · done · 3 results · −9.7k tokens"
    failed = _record(number=3, trigger="manual", status="failed", error="no summary\nat all")
    assert describe(failed) == "#3 manual · failed: no summary at all"
    fallback = _record(number=4, trigger="overflow", model="fallback", items_before=1)
    assert describe(fallback) == (
        "#4 overflow · done · 1 item · 38.1k → 2.3k tokens · model-free fallback · 4.2s"
    )
    running = _record(number=5, status="running", ended_at=None, tokens_after=None, items_before=0)
    assert describe(running) == "#5 auto · running · 38.1k tokens"


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"),
        (950, "950"),
        (999, "999"),
        (1_000, "1k"),
        (1_234, "1.23k"),
        (2_300, "2.3k"),
        (9_700, "9.7k"),
        (38_100, "38.1k"),
        (38_149, "38.1k"),
        (128_000, "128k"),
        (999_999, "1M"),
        (1_050_000, "1.05M"),
        (-9_700, "-9.7k"),
    ],
)
def test_fmt_tokens(n: int, text: str) -> None:
    assert fmt_tokens(n) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (0.004, "4ms"),
        (0.44, "0.4s"),
        (4.2, "4.2s"),
        (42.4, "42s"),
        (185, "3m 05s"),
        (3725, "1h 02m"),
    ],
)
def test_fmt_duration(seconds: float | None, text: str) -> None:
    assert fmt_duration(seconds) == text


def test_record_dict_round_trip() -> None:
    record = _record(usage=Usage(prompt_tokens=5, completion_tokens=2), shadowed_seqs=[3, 4])
    assert TimelineRecord.from_dict({**record.to_dict(), "saved_tokens": 1}) == record


def progress(
    session: Session, cid: str, chunk: int, chunks: int, status: str, **kw: object
) -> None:
    session.append(
        "compact/progress",
        {
            "compaction_id": cid,
            "chunk": chunk,
            "chunks": chunks,
            "items": 4,
            "input_tokens": 900,
            "status": status,
            **kw,
        },
    )


def test_progress_records_show_chunks_usage_and_what_went_wrong(session: Session) -> None:
    explored(session, steps=3)
    fold = TimelineFold()
    fold.feed_all(session.events)
    start_compaction(session, "c1", trigger="auto", turn=1)
    usage = {"prompt_tokens": 900, "completion_tokens": 100}
    progress(session, "c1", 1, 3, "ok", model="m", usage=usage)
    fold.feed_all(session.events[-2:])
    [running] = fold.records
    assert (running.status, running.calls, running.chunks, running.chunks_done) == (
        "running",
        1,
        3,
        1,
    )
    assert "chunk 2/3" in describe(running)
    assert running.usage == Usage(prompt_tokens=900, completion_tokens=100)
    progress(session, "c1", 2, 3, "cut", reason="the summary was cut off at its 400-token limit")
    fold.feed(session.events[-1])
    [cut] = fold.records
    assert cut.calls == 2 and cut.note is not None and "asking for a terser one" in cut.note
    progress(session, "c1", 2, 3, "failed", reason="the summarizer did not finish within 2m 00s")
    fold.feed(session.events[-1])
    assert fold.records[0].note == "the summarizer did not finish within 2m 00s"
    # The model-free checkpoint covers the rest: recorded with its reason.
    nodes = list(session.surface)[:-1]
    summ = session.append(
        "compact/summary",
        {
            "compaction_id": "c1",
            "summary": "## Primary request and intent\n- find why the build fails",
            "shadowed_range": {"start": nodes[0], "end": nodes[-1]},
            "shadowed_seqs": nodes,
            "shadowed_tokens": 3000,
            "summary_tokens": 200,
            "model": "fallback",
            "usage": {"prompt_tokens": 1800, "completion_tokens": 100},
            "fallback_reason": "the summarizer did not finish within 2m 00s",
        },
    )
    session.append(
        "user/message",
        {"content": "<compacted-summary>x</compacted-summary>", "source": "compact",
         "compaction_id": "c1"},
        surface_op={"op": "replace", "start": nodes[0], "end": nodes[-1]},
        source_event_seqs=[summ.seq - 4, summ.seq, *nodes],
    )  # fmt: skip
    session.append("compact/end", {"compaction_id": "c1", "turn": 1})
    fold.feed_all(session.events[-3:])
    [done] = fold.records
    assert done == timeline(session.events)[0]  # incremental and full folds agree
    assert (done.status, done.model, done.calls, done.note) == ("done", "fallback", 3, None)
    assert done.fallback_reason == "the summarizer did not finish within 2m 00s"
    assert done.usage == Usage(prompt_tokens=1800, completion_tokens=100)
    line = describe(done)
    assert "3 chunks" in line and "model-free fallback (the summarizer did not finish" in line
    assert TimelineRecord.from_dict(done.to_dict()) == done
