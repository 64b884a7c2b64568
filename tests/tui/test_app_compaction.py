"""/compact, automatic compaction, the timeline panel, markers and the summary modal."""

from __future__ import annotations

from textual.widgets import Markdown, OptionList

from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.summary import SummaryScreen
from tui.widgets.entries import Notice, UserEntry
from tui.widgets.gauge import TokenGauge
from tui.widgets.marker import CompactionMarker
from tui.widgets.timeline import TimelinePanel


def rows(app) -> list[str]:
    """The panel's rows as a person reads them (its no-break spaces as spaces)."""
    options = app.query_one(TimelinePanel).query_one(OptionList).options
    return [str(o.prompt).replace("\u00a0", " ") for o in options]


async def test_manual_compact_goes_running_then_done(ui: UI) -> None:
    """/compact shows a running row, then a done row, a marker, a notice, and a lower gauge."""
    app = ui.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "now parser.py")
        before = app.query_one(TokenGauge).reading
        assert before is not None
        app.runtime.model.delay_s = 0.01  # the summary streams slowly enough to watch
        await ui.type(pilot, "/compact keep the parser")
        panel = app.query_one(TimelinePanel)
        await ui.until(pilot, lambda: any(r.status == "running" for r in panel.records))
        assert app.main.status.activity == "compacting"
        assert "⟳" in rows(app)[0] and "manual" in rows(app)[0]
        await ui.settle(pilot)
        [record] = panel.records
        assert record.status == "done" and record.trigger == "manual"
        assert record.focus == "keep the parser"
        row = rows(app)[0]
        assert "✓" in row and 'focus: "keep the parser"' in row and "items" in row
        [marker] = app.query(CompactionMarker)
        assert marker.record == record
        assert "#1 context compacted (manual)" in marker.label()
        assert f"{record.items_before} items" in marker.label()
        assert any(n.plain.startswith("Compacted ") for n in app.query(Notice))
        after = app.query_one(TokenGauge).reading
        assert after is not None and after.total < before.total
        assert after.total == app.runtime.meter.measure().total
        assert [u.text for u in app.query(UserEntry)] == ["explore the README.md", "now parser.py"]
        assert app.main.status.activity == "idle"


async def test_summary_modal_from_the_timeline_and_from_the_marker(ui: UI) -> None:
    """Enter on a row (or a click on the marker) opens the summary, focus, model and items."""
    app = ui.app()
    async with app.run_test(size=(140, 44)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "now parser.py")
        await ui.send(pilot, "/compact the parser")
        rows_list = app.query_one(TimelinePanel).query_one(OptionList)
        rows_list.focus()
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SummaryScreen)
        record = screen.record
        facts = screen.query_one(".facts").render().plain
        assert "the parser" in facts and "scripted-demo" in facts and "done" in facts
        summary = screen.query_one(Markdown).source
        assert "## Primary request and intent" in summary
        shadowed = screen.query_one(".shadowed").render().plain
        assert "you: explore the README.md" in shadowed
        assert "$ ls -la" in shadowed
        assert len(shadowed.splitlines()) == len(record.shadowed_seqs)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SummaryScreen)
        await pilot.click(CompactionMarker)
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen) and app.screen.record == record


async def test_demo_auto_compaction_keeps_what_was_read(ui: UI) -> None:
    """In the demo the gauge rises, auto compaction fires within a few prompts, the gauge
    drops under the threshold, and every earlier message is still in the transcript."""
    app = ui.app(ui.runtime(context_window=2_500))  # the demo's small window, smaller still
    prompts = [f"look at README.md and parser.py, round {n}" for n in range(1, 9)]
    async with app.run_test(size=(140, 40)) as pilot:
        sent = []
        for prompt in prompts:
            await ui.send(pilot, prompt)
            sent.append(prompt)
            if any(r.kind == "compaction" for r in app.main.view.timeline.records):
                break
        autos = [r for r in app.main.view.timeline.records if r.kind == "compaction"]
        assert autos and autos[0].trigger == "auto" and autos[0].status == "done"
        assert len(sent) <= 6
        assert [u.text for u in app.query(UserEntry)] == sent
        assert app.query(CompactionMarker)
        reading = app.query_one(TokenGauge).reading
        assert reading is not None and reading.threshold is not None
        assert reading.total < reading.threshold
        assert any("auto" in row for row in rows(app))


async def test_a_failed_compaction_shows_failed_with_its_reason(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """A summarizer that returns nothing: the row says failed, the notice says why."""
    openai_server.push({"text": "A long answer.", "words": 900}, {"text": "Short."}, {"text": ""})
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(140, 40)) as pilot:
        await ui.send(pilot, "write a lot")
        await ui.send(pilot, "thanks")
        await ui.send(pilot, "/compact")
        [record] = app.query_one(TimelinePanel).records
        assert record.status == "failed" and record.error
        row = rows(app)[0]
        assert "✗ failed" in row
        assert any("could not produce a useful summary" in n.plain for n in app.query(Notice))
        assert not app.query(CompactionMarker)
        assert app.main.status.activity == "idle"


async def test_a_running_compaction_says_what_it_is_doing(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """The status line and the timeline row follow the summarizer's calls: a cut reply, then
    the terser retry in flight, with the elapsed time; then the outcome."""
    openai_server.push(
        *({"text": f"Answer {n}.", "words": 600} for n in range(2)),
        {"text": "## Primary", "finish_reason": "length"},
        {"text": "## Primary request and intent\n- terse", "stall_after": 1, "stall_s": 120},
        {"text": "Short."},
    )
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=3_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(140, 40)) as pilot:
        for n in range(2):  # ~2.9k of a 3k window: the next step compacts first
            await ui.send(pilot, f"write a lot, part {n}")
        await ui.type(pilot, "thanks")
        panel = app.query_one(TimelinePanel)
        await ui.until(pilot, lambda: any(r.note for r in panel.records), timeout=30)
        assert app.main.status.activity == "compacting"
        assert "auto" in app.main.status.detail and "terser" in app.main.status.detail
        assert "terser" in rows(app)[0]
        openai_server.unstalled.set()  # seen in flight: now let the terser retry finish
        await ui.settle(pilot)
        [record] = [r for r in panel.records if r.kind == "compaction"]
        assert record.status == "done", record.error
        assert record.calls == 2 and record.note is None
        assert app.main.status.activity == "idle"


async def test_a_message_typed_during_compact_waits_queued_not_thinking(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """The model is not asked until /compact ends: the message shows queued, the status
    stays on the compaction with "1 queued", then the turn runs with it."""
    import threading

    from tui.widgets.entries import UserEntry

    gate = threading.Event()
    openai_server.push(
        {"text": "A long answer.", "words": 900},
        {"text": "Short."},
        {"text": "## Primary request and intent\n- write a lot", "hold": gate},
        {"text": "Here you are."},
    )
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(140, 40)) as pilot:
        await ui.send(pilot, "write a lot")
        await ui.send(pilot, "thanks")
        await ui.type(pilot, "/compact")
        await ui.until(pilot, lambda: app.main.status.activity == "compacting")
        await ui.type(pilot, "and now?")
        await pilot.pause()
        assert app.main.status.activity == "compacting"
        assert app.main.status.queued == 1
        [waiting] = [e for e in app.query(UserEntry) if e.raw == "and now?"]
        assert waiting.queued and "compaction" in waiting.note
        gate.set()
        await ui.until(pilot, lambda: not waiting.queued, timeout=30)
        await ui.settle(pilot)
        assert [e.raw for e in app.query(UserEntry)].count("and now?") == 1
        assert app.main.status.queued == 0
        assert "Here you are." in "\n".join(app.main.transcript.dump())


async def test_a_summarizer_retry_shows_in_the_status_line(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """An HTTP 500 on the summary request: while the retry runs, the status line says so
    (and the transcript has the notice)."""
    import threading

    gate = threading.Event()
    openai_server.push(
        {"text": "A long answer.", "words": 900},
        {"text": "Short."},
        {"status": 500, "message": "upstream crashed", "retry_after": 0.05},
        {"text": "## Primary request and intent\n- write a lot", "hold": gate},
    )
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(140, 40)) as pilot:
        await ui.send(pilot, "write a lot")
        await ui.send(pilot, "thanks")
        await ui.type(pilot, "/compact")
        await ui.until(pilot, lambda: "retry 1" in app.main.status.detail)
        assert app.main.status.activity == "compacting"
        assert any("Summarizer request retry 1" in n.plain for n in app.query(Notice))
        gate.set()
        await ui.settle(pilot)
        [record] = app.query_one(TimelinePanel).records
        assert record.status == "done", record.error


async def test_a_summary_written_ahead_is_quiet_progress_on_the_status_line(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """Eight tool steps: the summary starts ahead before the final answer and is still
    running (held by the server) once the turn has ended. The status line says so quietly,
    beside "ready", never "compacting"; then "summary ready ahead"."""
    (ui.workdir / "data.txt").write_text("\n".join(f"record {i}: value {i * 7}" for i in range(60)))
    openai_server.summarize = True
    openai_server.summary_stall_s = 120
    openai_server.agent_commands = ["cat data.txt"] * 8
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=6000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(140, 40)) as pilot:
        await ui.send(pilot, "read data.txt again and again")
        await ui.until(pilot, lambda: "summarizing ahead" in str(app.main.status.render()))
        assert app.main.status.activity == "idle"
        await ui.until(pilot, openai_server.stalled.is_set)  # its call is in flight, held
        openai_server.unstalled.set()
        await ui.until(pilot, lambda: "summary ready ahead" in str(app.main.status.render()))
        assert app.main.status.activity == "idle"


async def test_u_on_a_timeline_row_and_in_the_summary_modal_undoes_a_compaction(ui: UI) -> None:
    """The marker says why it compacted and what it kept; ``u`` on the row undoes it (an
    undo row, the checkpoint's items back in the gauge); after a second /compact, ``u`` in
    its summary modal undoes that one too."""
    app = ui.app()
    async with app.run_test(size=(160, 44)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "now parser.py")
        await ui.send(pilot, "/compact")
        panel = app.query_one(TimelinePanel)
        assert len(panel.records) == 1
        [marker] = app.query(CompactionMarker)
        assert "kept" in marker.label() and "verbatim" in marker.label()
        compacted = app.runtime.meter.measure().total
        panel.query_one(OptionList).focus()
        await pilot.pause()
        await pilot.press("u")
        await ui.settle(pilot)
        await ui.until(pilot, lambda: any(r.kind == "undo" for r in panel.records))
        assert panel.records[0].undone_by is not None
        assert app.runtime.meter.measure().total > compacted
        await ui.send(pilot, "/compact")
        second = panel.records[-1]
        assert second.kind == "compaction" and second.status == "done"
        rows_list = panel.query_one(OptionList)
        rows_list.focus()
        rows_list.highlighted = len(panel.records) - 1
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen) and app.screen.record == second
        facts = app.screen.query_one(".facts").render().plain
        assert "why" in facts and "kept verbatim" in facts
        await pilot.press("u")
        await ui.settle(pilot)
        await ui.until(pilot, lambda: sum(r.kind == "undo" for r in panel.records) == 2)
        assert not isinstance(app.screen, SummaryScreen)
