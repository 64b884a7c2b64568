"""Typing while the agent works queues a steering message, delivered at the next step."""

from __future__ import annotations

from agent.log.events import SteeringMessage
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.widgets.entries import UserEntry
from tui.widgets.prompt import PromptArea


async def test_typing_while_busy_queues_steering(ui: UI, openai_server: OpenAIServer) -> None:
    """The message shows as queued, then delivered; the next request carries it."""
    # The command runs until the test has seen the message queued (an event, not a delay
    # that a loaded machine can outlast).
    wait = "for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done"
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": wait}}]},
        {"text": "Done, and I took your note into account."},
    )
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "start working")
        await ui.until(pilot, lambda: runtime.bash.running)
        await ui.type(pilot, "also check the tests")
        await pilot.pause()
        entry = app.query(UserEntry).last()
        assert entry.steering and entry.queued
        assert "queued" in entry.render().plain
        assert runtime.agent.pending_steering == ["also check the tests"]
        assert app.main.status.queued == 1
        (ui.workdir / "go").touch()
        await ui.settle(pilot)
        assert not entry.queued and "queued" not in entry.render().plain
        steering = [e for e in runtime.session.events if isinstance(e, SteeringMessage)]
        assert [e.data.content for e in steering] == ["also check the tests"]
        last_request = openai_server.requests[-1]["messages"]
        assert any(m.get("content") == "also check the tests" for m in last_request)
        assert [u.text for u in app.query(UserEntry)] == ["start working", "also check the tests"]
        assert "took your note" in app.main.transcript.last_answer


async def test_text_typed_during_a_final_answer_becomes_the_next_message(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """No tool is running, so no later step is certain: the text waits for the turn to end
    and is then sent as the next message (never as a steering message nobody reads)."""
    openai_server.push(
        {"text": "First answer, streamed slowly. " * 8, "chunk_size": 4, "delay_s": 0.03},
        {"text": "Second answer."},
    )
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "first")
        await ui.until(pilot, lambda: "First answer" in app.main.transcript.dump()[-1])
        assert app.busy
        await ui.type(pilot, "follow up")
        await ui.settle(pilot)
        await ui.settle(pilot)
        assert [u.text for u in app.query(UserEntry)] == ["first", "follow up"]
        assert not any(isinstance(e, SteeringMessage) for e in runtime.session.events)
        assert openai_server.requests[-1]["messages"][-1]["content"] == "follow up"
        assert app.main.transcript.last_answer == "Second answer."


async def test_text_held_when_the_turn_is_interrupted_goes_back_to_the_prompt(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """Esc during the answer: the held text is put back in the prompt, not sent."""
    openai_server.push({"text": "Slow answer. " * 20, "chunk_size": 4, "delay_s": 0.05})
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "first")
        await ui.until(pilot, lambda: "Slow answer" in app.main.transcript.dump()[-1])
        await ui.type(pilot, "never mind")
        await pilot.press("escape")
        await ui.settle(pilot)
        assert app.query_one(PromptArea).text == "never mind"
        assert [u.text for u in app.query(UserEntry)] == ["first"]
        assert len(openai_server.requests) == 1
