"""The tool-result pruner on real sessions."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.log.events import Event, SurfaceReplace, ToolResult
from agent.turns import TurnCancelled, unanswered_tool_calls
from compact.parts.originals import MASK_PREFIX, TRIM_MARK
from tests.compact.conftest import Rig, add_turn


def big_result(
    rig: Rig, turn: int, chars: int, spill: str | None = None, body: str | None = None
) -> int:
    """A turn whose one bash result is ``chars`` of numbered lines (or ``body``), then its
    footer."""
    s = rig.session
    s.append("turn/start", {"turn": turn})
    s.append("user/message", {"content": f"show me file {turn}"})
    cid = f"big{turn}"
    s.append(
        "assistant/message",
        {
            "turn": turn,
            "step": 1,
            "finish_reason": "tool_calls",
            "model": "m",
            "tool_calls": [
                {"id": cid, "name": "bash", "arguments": f'{{"command": "cat file{turn}.log"}}'}
            ],
        },
    )
    if body is None:
        body = "".join(f"line {i:05d} of the log\n" for i in range(chars // 22 + 1))[:chars]
    seq = s.append(
        "tool/result",
        {
            "turn": turn,
            "step": 1,
            "call_id": cid,
            "name": "bash",
            "content": body + "[exit 0 · 0.2s]",
            "exit_code": 0,
            "truncated": bool(spill) or None,
            "spill_path": spill,
        },
    ).seq
    s.append(
        "assistant/message",
        {"turn": turn, "step": 2, "text": "seen", "finish_reason": "stop", "model": "m"},
    )
    s.append("turn/end", {"turn": turn, "reason": "completed"})
    return seq


def on_surface(rig: Rig, call_id: str) -> str:
    """The content the surface holds for the result of ``call_id`` (one, or the test fails)."""
    events = rig.session.events
    [content] = [
        events[n].data.content
        for n in rig.session.surface
        if events[n].type == "tool/result" and events[n].data.call_id == call_id
    ]
    return content


async def test_trim_keeps_head_and_tail_and_names_the_spill_file(make_rig, tmp_path: Path) -> None:
    rig = make_rig(pruner=True)
    seq = big_result(rig, 1, 20_000, spill="/spill/1.out")
    original = rig.session.events[seq].data.content
    report = await rig.service.pruner.prune(protect_from=0, trigger="pressure")
    assert report.results == 1 and report.saved_tokens > 0
    [prune] = [e for e in rig.session.events if e.type == "compact/prune"]
    assert prune.data.shadowed_seqs == [seq] and prune.data.kind == "trim"
    assert prune.data.shadowed_tokens == rig.meter.price(seq)
    replacement = rig.session.events[-1]
    assert replacement.type == "tool/result" and replacement.source_event_seqs == [prune.seq, seq]
    text = replacement.data.content
    assert text.startswith(original[:4096]) and text.endswith(original[-1024:])
    assert TRIM_MARK in text and "/spill/1.out" in text
    assert seq not in rig.session.surface and replacement.seq in rig.session.surface


async def test_mask_replaces_old_results_with_a_placeholder_and_a_readable_file(make_rig) -> None:
    rig = make_rig(pruner=True)
    seq = big_result(rig, 1, 3000)
    add_turn(rig.session, 2)
    await rig.service.pruner.prune(protect_from=len(rig.session.surface) - 3, trigger="pressure")
    masked = [
        e
        for e in rig.session.events
        if e.type == "tool/result" and e.data.content.startswith(MASK_PREFIX)
    ]
    first = next(m for m in masked if m.data.call_id == "big1")
    assert "`cat file1.log` exited 0" in first.data.content and "lines" in first.data.content
    path = first.data.content.split("full output: ")[1].rstrip("]")
    assert Path(path).read_text() == rig.session.events[seq].data.content
    assert oct(Path(path).stat().st_mode & 0o777) == "0o600"
    # The newest results (inside protect_from) are untouched.
    assert rig.session.events[rig.session.surface[-2]].data.content.startswith("w2_")


async def test_pruning_is_idempotent(make_rig) -> None:
    rig = make_rig(pruner=True)
    big_result(rig, 1, 20_000)
    big_result(rig, 2, 20_000)
    end = len(rig.session.surface)
    first = await rig.service.pruner.prune(protect_from=end, trigger="pressure")
    n = len(rig.session.events)
    again = await rig.service.pruner.prune(protect_from=end, trigger="pressure")
    assert first.results >= 2 and again.results == 0 and len(rig.session.events) == n


async def test_masking_comes_only_with_a_checkpoint_that_read_what_it_hides(
    make_rig, openai_server
) -> None:
    """Over the threshold, no pass of the pruner comes first: the compaction's summary reads
    the whole conversation, and then the retained tail's older outputs are masked (the
    newest step's stay), so what they said is in the checkpoint."""
    from tests.compact.conftest import server_model

    rig = make_rig(pruner=True, model=server_model(openai_server), window=16_000)
    openai_server.summarize = True
    for t in range(1, 4):
        lines = "".join(f"line {i:05d} of the log\n" for i in range(560))
        big_result(rig, t, 12_000, body=f"FACT-{t}-seen\n{lines}")
    add_turn(rig.session, 4)
    a = rig.agent
    assert rig.meter.measure(system=a.system_prompt(), tools=a.tool_schemas()).total >= 12_800
    result = await rig.service.compact_if_needed(rig.agent.envelope(), "pressure")
    assert result is not None
    kinds = [e.type for e in rig.session.events if e.type.startswith("compact/")]
    assert kinds[0] == "compact/start" and "compact/prune" in kinds
    assert kinds.index("compact/prune") > kinds.index("compact/end")
    events = rig.session.events
    kept = [events[n].data.content for n in rig.session.surface if events[n].type == "tool/result"]
    assert len(kept) >= 2  # a retained tail with an older output and the newest one
    assert all(text.startswith(MASK_PREFIX) for text in kept[:-1])
    checkpoint = rig.session.events[result.replacement_seq].data.content
    assert all(f"FACT-{t}-seen" in checkpoint for t in range(1, 4))
    assert on_surface(rig, "c4_1").startswith("w4_")  # the newest step's result as it was


async def test_manual_compaction_never_prunes(make_rig) -> None:
    rig = make_rig(pruner=True)
    for t in range(1, 4):
        big_result(rig, t, 9_000)
    add_turn(rig.session, 4)
    assert await rig.service.compact_now(rig.agent.envelope()) is not None
    assert "compact/prune" not in [e.type for e in rig.session.events]


async def test_a_trimmed_result_is_masked_later_and_its_placeholder_describes_the_original(
    make_rig,
) -> None:
    rig = make_rig(pruner=True)
    seq = big_result(rig, 1, 20_000)
    original = rig.session.events[seq].data.content
    pruner = rig.service.pruner
    await pruner.prune(protect_from=0, trigger="pressure")  # trims only
    add_turn(rig.session, 2)
    await pruner.prune(protect_from=len(rig.session.surface) - 3, trigger="pressure")
    kinds = [e.data.kind for e in rig.session.events if e.type == "compact/prune"]
    assert kinds[:2] == ["trim", "mask"]
    placeholder = on_surface(rig, "big1")
    assert placeholder.startswith(MASK_PREFIX)
    printed = original.removesuffix("[exit 0 · 0.2s]").splitlines()
    assert f", {len(printed)} lines; " in placeholder  # the footer is not a line it printed
    path = placeholder.split("full output: ")[1].rstrip("]")
    assert Path(path).read_text() == original


async def test_savings_prices_a_full_pass_before_it_runs(make_rig) -> None:
    rig = make_rig(pruner=True)
    for t in range(1, 4):
        big_result(rig, t, 3000)
    add_turn(rig.session, 4)
    protect = len(rig.session.surface) - 3
    before = rig.meter.measure().surface
    estimate = await rig.service.pruner.savings(protect)
    assert estimate > 0
    await rig.service.pruner.prune(protect_from=protect, trigger="pressure")
    assert before - rig.meter.measure().surface == estimate
    assert await rig.service.pruner.savings(protect) == 0


async def test_every_view_states_the_same_saving(make_rig) -> None:
    """The panel's fold (which can price events) and the CLI's and export's (which cannot)
    give a prune batch the same saving: the log records the replacement's price."""
    from agent.formatting import fmt_tokens
    from compact.reports.timeline import TimelineFold
    from tui.shell.timeline_report import timeline_json, timeline_table
    from tui.view.export import export_markdown

    rig = make_rig(pruner=True)
    big_result(rig, 1, 20_000)
    big_result(rig, 2, 20_000)
    report = await rig.service.pruner.prune(
        protect_from=len(rig.session.surface), trigger="pressure"
    )
    assert report.results >= 2
    priced = TimelineFold(price=lambda event: rig.meter.price(event.seq))
    priced.feed_all(rig.session.events)
    plain = TimelineFold()
    plain.feed_all(rig.session.events)
    assert [r.saved_tokens for r in priced.records] == [r.saved_tokens for r in plain.records]
    assert sum(r.saved_tokens or 0 for r in plain.records) == report.saved_tokens
    table, json_text, md = (
        timeline_table(plain.records),
        timeline_json(plain.records),
        export_markdown(rig.session),
    )
    for record in plain.records:
        assert record.tokens_after is not None and 0 < record.tokens_after < record.tokens_before
        before, after = fmt_tokens(record.tokens_before), fmt_tokens(record.tokens_after)
        assert f"{before}→{after}" in table
        assert f'"saved_tokens": {record.saved_tokens}' in json_text
        assert f"−{fmt_tokens(record.saved_tokens or 0)} tokens" in md
    # The view of the log settles a batch only once it stops growing.
    from tui.view.fold import LogView
    from tui.view.items import PruneBatch

    live, whole = LogView(), LogView()
    for event in rig.session.events:
        live.feed(event)
    whole.feed_all(rig.session.events)
    batches = [item.record for item in live.items if isinstance(item, PruneBatch)]
    assert live.items == whole.items and batches == plain.records


async def test_a_masked_placeholder_counts_the_lines_the_command_printed(make_rig) -> None:
    """A minified file is one line: "1 line", not "2 lines" with the footer, nor "1 lines"."""
    rig = make_rig(pruner=True)
    big_result(rig, 1, 0, body="{" + '"k": 1, ' * 800 + "}\n")
    add_turn(rig.session, 2)
    await rig.service.pruner.prune(protect_from=len(rig.session.surface) - 3, trigger="pressure")
    placeholder = on_surface(rig, "big1")
    assert placeholder.startswith(MASK_PREFIX)
    assert "`cat file1.log` exited 0, 1 line; full output: " in placeholder, placeholder


# --- stopping a pass between results ---------------------------------------------------------


def ten_old_results(rig: Rig) -> int:
    """Ten masking candidates and a newer turn; returns ``protect_from`` sparing that turn."""
    for turn in range(1, 11):
        big_result(rig, turn, 3000)
    add_turn(rig.session, 11)
    return len(rig.session.surface) - 3


def after_replacements(rig: Rig, n: int, act: Callable[[], object]) -> None:
    """Call ``act`` from the log as the ``n``-th prune replacement is appended."""
    seen = 0

    def observe(event: Event) -> None:
        nonlocal seen
        if isinstance(event, ToolResult) and isinstance(event.surface_op, SurfaceReplace):
            seen += 1
            if seen == n:
                act()

    rig.session.subscribe(observe)


def assert_pairs_whole(rig: Rig) -> list[int]:
    """Every ``compact/prune`` is followed by its replacement; returns the pruned seqs."""
    events = rig.session.events
    pruned = []
    for event in events:
        if event.type == "compact/prune":
            [seq] = event.data.shadowed_seqs  # type: ignore[attr-defined]
            replacement = events[event.seq + 1]
            assert isinstance(replacement, ToolResult)
            assert isinstance(replacement.surface_op, SurfaceReplace)
            assert replacement.surface_op.start == seq
            assert replacement.source_event_seqs == [event.seq, seq]
            pruned.append(seq)
    assert unanswered_tool_calls(rig.session.derive_messages()) == []
    return pruned


@pytest.mark.parametrize("how", ["cancel", "signal"])
async def test_a_stopped_pass_leaves_whole_pairs_and_the_next_one_finishes_it(
    make_rig, how: str
) -> None:
    rig = make_rig(pruner=True)
    protect = ten_old_results(rig)
    pruner = rig.service.pruner
    signal = asyncio.Event()
    task = asyncio.ensure_future(
        pruner.prune(protect_from=protect, trigger="pressure", signal=signal)
    )
    after_replacements(rig, 3, task.cancel if how == "cancel" else signal.set)
    if how == "cancel":
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        assert (await task).results == 3
    assert len(assert_pairs_whole(rig)) == 3
    # The next pass prunes the rest, and nothing twice.
    assert (await pruner.prune(protect_from=protect, trigger="pressure")).results == 7
    pruned = assert_pairs_whole(rig)
    assert len(pruned) == len(set(pruned)) == 10
    assert all(on_surface(rig, f"big{turn}").startswith(MASK_PREFIX) for turn in range(1, 11))


async def test_the_turn_signal_reaches_the_pruner_and_ends_the_turn(
    make_rig, openai_server
) -> None:
    """Overflow recovery is handed the turn's signal: set mid-prune, the pass stops after
    the result in hand, no summary starts, no failure is announced, and the turn ends
    cancelled without retrying the request."""
    from tests.compact.conftest import server_model
    from tests.compact.test_overflow_and_loop import OVERFLOW

    # No window known: no compaction under pressure comes first; the provider's refusal
    # starts the recovery.
    rig = make_rig(pruner=True, model=server_model(openai_server), window=None)
    ten_old_results(rig)
    rig.service.install(rig.agent.hooks)
    openai_server.push(OVERFLOW)
    signal = asyncio.Event()
    after_replacements(rig, 2, signal.set)
    with pytest.raises(TurnCancelled):
        await rig.agent.run_turn("go on", signal=signal)
    assert len(assert_pairs_whole(rig)) == 2
    types = [e.type for e in rig.session.events]
    assert "compact/start" not in types and rig.notices == []
    assert len(openai_server.requests) == 1  # the overflowing request was not sent again
    assert rig.session.events[-1].data.reason == "cancelled"  # type: ignore[attr-defined]
