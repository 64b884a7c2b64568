"""``· N queued`` on the status line counts messages still waiting: once a queued message
is sent (delivered as steering at the next step, or run as the turn /compact held back),
the status line stops saying it while the turn goes on."""

from __future__ import annotations

import threading

from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI


def status_text(app) -> str:
    return app.main.status.render().plain


async def test_steering_delivered_is_no_longer_queued(ui: UI, openai_server: OpenAIServer) -> None:
    first, second = threading.Event(), threading.Event()
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}], "hold": first},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo two"}}], "hold": second},
        {"text": "done"},
    )
    app = ui.app(ui.runtime(base_url=openai_server.base_url, model="m", demo=False))
    async with app.run_test(size=(140, 40)) as pilot:
        await ui.type(pilot, "look around")
        await ui.until(pilot, lambda: len(openai_server.requests) == 1)
        await ui.type(pilot, "also check the tests")
        await ui.until(pilot, lambda: "1 queued" in status_text(app))
        first.set()
        # Step 2's request carries the message: it was sent, the turn still runs.
        await ui.until(pilot, lambda: len(openai_server.requests) == 2)
        sent = openai_server.requests[1]["messages"]
        assert any("also check the tests" in str(m.get("content")) for m in sent)
        await ui.until(pilot, lambda: app.main.status.activity == "thinking")
        await ui.until(pilot, lambda: "queued" not in status_text(app))
        assert app.runtime.agent.busy
        second.set()
        await ui.settle(pilot)
        assert "queued" not in status_text(app)


async def test_a_message_held_by_compact_is_not_queued_once_its_turn_runs(
    ui: UI, openai_server: OpenAIServer
) -> None:
    summary, answer = threading.Event(), threading.Event()
    openai_server.push(
        {"text": "A long answer.", "words": 900},
        {"text": "Short."},
        {"text": "## Primary request and intent\n- write a lot", "hold": summary},
        {"text": "Here you are.", "hold": answer},
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
        await ui.until(pilot, lambda: "1 queued" in status_text(app))
        summary.set()
        await ui.until(pilot, lambda: len(openai_server.requests) == 4)  # its turn asks
        await ui.until(pilot, lambda: "queued" not in status_text(app))
        assert app.runtime.agent.busy
        answer.set()
        await ui.settle(pilot)
