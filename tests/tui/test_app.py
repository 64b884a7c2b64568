"""The app on the scripted model: a turn end to end, the gauge, resume, and sizes."""

from __future__ import annotations

import itertools

import pytest

from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.tui.conftest import UI
from tui.widgets.entries import UserEntry
from tui.widgets.gauge import TokenGauge
from tui.widgets.header import AppHeader
from tui.widgets.prompt import PromptArea
from tui.widgets.reply import AssistantEntry, Reasoning
from tui.widgets.timeline import TimelinePanel
from tui.widgets.tool_card import CardOutput, ToolCard
from tui.widgets.transcript import (
    MOUNTED_PAGES,
    PAGE,
    REPLAY_WINDOW,
    ShowEarlier,
    ShowLater,
    Transcript,
)


async def test_a_prompt_shows_the_message_tool_cards_and_the_answer(ui: UI) -> None:
    """Typing a prompt and Enter runs a turn; the transcript shows it all."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(*"what is here", "enter")
        await ui.settle(pilot)
        users = app.query(UserEntry)
        assert [u.text for u in users] == ["what is here"]
        cards = list(app.query(ToolCard))
        assert [c.command for c in cards] == [
            "ls -la",
            "find . -maxdepth 2 -type f -not -path '*/.*' | head -50",
            "wc -l -- README.md parser.py",
            "head -n 20 -- README.md",
        ]
        assert all(c.exit_code == 0 and not c.running for c in cards)
        assert "parse_header" not in cards[-1].output
        assert "# Sample project" in cards[-1].output
        answer = app.main.transcript.last_answer
        assert "I looked at" in answer
        assert any(answer.strip() == e.parts()[0] for e in app.query(AssistantEntry))
        assert app.query_one(PromptArea).text == ""
        assert app.main.status.activity == "idle"


async def test_the_gauge_follows_the_meter_and_marks_the_threshold(ui: UI) -> None:
    """The gauge shows used/window, percent and the auto-compact marker, and rises."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        gauge = app.query_one(TokenGauge)
        before = gauge.reading
        assert before is not None and before.window == app.runtime.meter.context_window
        await ui.send(pilot, "explore this")
        after = gauge.reading
        assert after is not None and after.total > before.total
        assert after.total == app.runtime.meter.measure().total
        assert after.threshold == app.runtime.threshold_tokens
        text = gauge.render().plain
        assert "│" in text and f"auto at {100 * after.threshold_fraction:.0f}%" in text
        assert after.used in text and after.percent in text
        assert ("measured" in text) == after.measured
        assert after.percent in app.query_one(AppHeader).render().plain


async def test_the_idle_gauge_counts_what_the_first_request_will_carry(ui: UI) -> None:
    """Before anything is sent the gauge already counts the system prompt and the tool
    schemas, as /context does: one reading of the next request everywhere."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        reading = app.query_one(TokenGauge).reading
        measurement = app.runtime.measure()
        assert reading is not None and measurement.header > 0
        assert reading.total == measurement.total >= measurement.header
        breakdown = measurement.breakdown
        assert breakdown["system"] > 0 and breakdown["tools"] > 0
        assert reading.total == sum(breakdown.values())  # what /context lists, summed
        assert "~0 /" not in app.query_one(TokenGauge).render().plain


async def test_an_unknown_window_says_so(ui: UI, openai_server) -> None:
    """A model whose window is unknown gets a gauge that says how to set it."""
    runtime = ui.runtime(base_url=openai_server.base_url, model="no-such-model-xyz", demo=False)
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = app.query_one(TokenGauge).render().plain
        assert "window unknown — set --context-window" in text


async def test_resume_renders_the_same_transcript(ui: UI) -> None:
    """A resumed session shows what the live session showed (plus the resume note)."""
    runtime = ui.runtime()
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "look around")
        await ui.send(pilot, "and the README.md")
        live = app.main.transcript.dump()
    session_id = runtime.session.id
    runtime.close()
    again = ui.app(ui.runtime(resume=session_id))
    async with again.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        resumed = again.main.transcript.dump()
    # The one line a resume says what it restored comes first (a notice of this start).
    said, resumed = resumed[:2], resumed[2:]
    assert said[0] == "info: " + live[0].removeprefix("info: ") and "Resumed " in said[1]
    assert resumed[: len(live) - 1] == live[1:]
    assert resumed[len(live) - 1 :] == ["context: Session resumed."]
    assert sum(line.startswith("$ ") for line in live) == 6


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_sizes_lay_out_without_zero_sized_widgets(ui: UI, size: tuple[int, int]) -> None:
    """At 80×24 and 200×60 every visible widget has room; the timeline opens when wide."""
    app = ui.app()
    async with app.run_test(size=size) as pilot:
        await ui.send(pilot, "look")
        assert app.query_one(TimelinePanel).display == (size[0] >= 120)
        for widget in app.screen.query("*"):
            if widget.display and widget.visible and widget.is_mounted:
                if any(not a.display for a in widget.ancestors_with_self if hasattr(a, "display")):
                    continue
                assert widget.size.width > 0, widget
        for name in ("#header", "#status", "#gauge", "#prompt", Transcript):
            region = app.query_one(name).region
            assert region.height > 0 and region.width > 0, name
        assert app.query_one("#prompt").region.bottom <= size[1]


async def test_scrolling_back_through_a_huge_session_keeps_a_window_mounted(ui: UI) -> None:
    """ "show earlier" all the way up keeps at most a few pages mounted: a page scrolled past
    is unmounted and "show later" brings it back; every entry stays in order and readable."""
    session = Session.create(ui.home, cwd=str(ui.workdir), registry=build_registry())
    total = REPLAY_WINDOW + PAGE * (MOUNTED_PAGES + 4) + 7
    for n in range(total):
        session.append("user/message", {"content": f"message {n}"})
    session.close()
    everything = [f"message {n}" for n in range(total)]
    limit = MOUNTED_PAGES * PAGE + REPLAY_WINDOW

    def mounted() -> list[str]:
        return [u.text for u in app.query(UserEntry)]

    def said() -> list[str]:
        return [line[5:] for line in app.main.transcript.dump() if line.startswith("you: ")]

    def gaps(texts: list[str]) -> int:
        numbers = [int(t.split()[1]) for t in texts]
        return sum(b != a + 1 for a, b in itertools.pairwise(numbers))

    app = ui.app(ui.runtime(resume=session.id))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        most = len(mounted())
        while app.query(ShowEarlier):
            await app.query_one(ShowEarlier).key_enter()
            await pilot.pause()
            most = max(most, len(mounted()))
            assert said() == everything  # unmounted entries are still there, in order
        assert most <= limit
        shown = mounted()
        assert shown[0] == "message 0"  # the top was reached
        assert app.query(ShowLater)  # pages scrolled past wait below
        # The history pages run on from the top; then, past one gap, the newest entries.
        assert gaps(shown) == 1
        assert shown[-1] == everything[-1] and len(shown) < total
        while app.query(ShowLater):
            await app.query_one(ShowLater).key_enter()
            await pilot.pause()
            assert len(mounted()) <= limit
        assert gaps(mounted()) == 0 and mounted()[-1] == everything[-1]
        assert said() == everything


async def test_a_long_session_opens_with_the_newest_entries_and_shows_earlier(ui: UI) -> None:
    """Resuming a long log mounts the newest entries; "show earlier" mounts the rest."""
    session = Session.create(ui.home, cwd=str(ui.workdir), registry=build_registry())
    total = REPLAY_WINDOW * 2 + 5
    for n in range(total):
        session.append("user/message", {"content": f"message {n}"})
    session.close()
    app = ui.app(ui.runtime(resume=session.id))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        shown = [u.text for u in app.query(UserEntry)]
        assert shown[-1] == f"message {total - 1}" and len(shown) < total
        assert sum(line.startswith("you: ") for line in app.main.transcript.dump()) == total
        while app.query(ShowEarlier):
            await app.query_one(ShowEarlier).key_enter()
            await pilot.pause()
        mounted = [u.text for u in app.query(UserEntry)]
        assert mounted[0] == "message 0" and mounted[-1] == f"message {total - 1}"
        said = [line[5:] for line in app.main.transcript.dump() if line.startswith("you: ")]
        assert said == [f"message {n}" for n in range(total)]


async def test_an_entry_builds_only_the_parts_it_shows(ui: UI, openai_server) -> None:
    """The reasoning line and the "show all" line exist only where they show, live and
    resumed alike (every widget mounted is laid out again with each page of history), and
    appear when they are first needed."""
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo short"}}]},
        {
            "reasoning": "first I count",
            "tool_calls": [{"name": "bash", "arguments": {"command": "seq 1 30"}}],
        },
        {"text": "done"},
    )
    settings = {"base_url": openai_server.base_url, "model": "m", "demo": False}
    runtime = ui.runtime(**settings, context_window=32_000)

    def parts(app) -> tuple[list[int], list[bool]]:
        reasoning = [int(e.line is not None) for e in app.query(AssistantEntry)]
        assert len(app.query(Reasoning)) == sum(reasoning)  # no line but those
        toggles = [c.query_one(CardOutput).long for c in app.query(ToolCard)]
        return reasoning, toggles

    app = ui.app(runtime)
    async with app.run_test(size=(100, 40)) as pilot:
        await ui.send(pilot, "count")
        reasoning, toggles = parts(app)
        assert reasoning == [1, 0] and toggles == [False, True]
        [line] = app.query(Reasoning)
        assert line.display and "first I count" in line.render().plain
        answer = app.query(AssistantEntry).first()
        assert line.parent is answer.parent  # just above the answer it belongs to
        siblings = list(answer.parent.children)
        assert siblings.index(line) + 1 == siblings.index(answer)
        long_card = list(app.query(ToolCard))[1]
        output = long_card.query_one(CardOutput)
        assert output.render().plain.endswith("30 lines · show all")
        assert "30" not in output.render().plain.split("\n")[-2]  # the first lines only
        assert len(long_card.children) == 1  # the toggle is the output's own last line
        await pilot.click(output, offset=(2, 0))  # a click elsewhere on the output is not it
        assert not long_card.expanded
        await pilot.click(output, offset=(2, output.content_size.height - 1))
        await pilot.pause()
        assert output.render().plain.endswith("30\n▾ show less")  # expanded
        output.key_enter()
        await pilot.pause()
        assert output.render().plain.endswith("show all")
        live = app.main.transcript.dump()
    runtime.close()
    resumed = ui.app(ui.runtime(**settings, context_window=32_000, resume=runtime.session.id))
    async with resumed.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        assert parts(resumed) == ([1, 0], [False, True])
        shown = [line for line in resumed.main.transcript.dump() if "Resumed " not in line]
        assert shown[: len(live)] == live


async def test_a_retried_reply_leaves_neither_its_partial_text_nor_its_reasoning(
    ui: UI, openai_server
) -> None:
    """A reply cut by the provider mid-stream is discarded, reasoning line and all, and the
    retried one is shown in its place."""
    openai_server.push(
        {
            "reasoning": "a first thought",
            "text": "partial words that never finish",
            "error_after": 3,
            "message": "overloaded",
            "type": "server_error",
        },
        {"reasoning": "a second thought", "text": "second try"},
    )
    settings = {"base_url": openai_server.base_url, "model": "m", "demo": False}
    app = ui.app(ui.runtime(**settings, context_window=32_000))
    async with app.run_test(size=(100, 30)) as pilot:
        await ui.send(pilot, "hi")
        lines = [line.text for line in app.query(Reasoning)]
        answers = [e.parts()[0] for e in app.query(AssistantEntry)]
        assert lines == ["a second thought"] and answers == ["second try"]
        assert not any("partial" in line or "first thought" in line
                       for line in app.main.transcript.dump())  # fmt: skip
