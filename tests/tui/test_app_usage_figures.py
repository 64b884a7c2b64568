"""A session whose log holds a usage figure no server could have meant (``prompt_tokens`` of
401 digits, as versions before the check logged what a server sent) opens in the app: the
gauge, the transcript and ``/context`` say its usage was not reported, where the app used to
die of an ``OverflowError`` at every start on it."""

from __future__ import annotations

import json

from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.tui.conftest import UI
from tui.screens.context import ContextScreen
from tui.widgets.entries import UserEntry

HUGE = "1" + "0" * 400


def session_with_a_huge_figure(ui: UI) -> str:
    session = Session.create(ui.home, cwd=str(ui.workdir), registry=build_registry())
    session.append("user/message", {"content": "count them"})
    usage = {"prompt_tokens": 7, "completion_tokens": 3}
    reply = {"turn": 1, "step": 1, "text": "hello", "finish_reason": "stop", "model": "m"}
    session.append("assistant/message", {**reply, "usage": usage})
    session.close()
    lines = session.path.read_text().splitlines()
    lines = [line.replace('"prompt_tokens":7', f'"prompt_tokens":{HUGE}') for line in lines]
    session.path.write_text("\n".join(lines) + "\n")
    assert any(HUGE in json.dumps(json.loads(line)) for line in lines)
    return session.id


async def test_the_app_opens_a_session_whose_log_holds_a_huge_usage_figure(ui: UI) -> None:
    sid = session_with_a_huge_figure(ui)
    app = ui.app(ui.runtime(resume=sid))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.until(pilot, lambda: bool(app.query(UserEntry)))
        assert [u.text for u in app.query(UserEntry)] == ["count them"]
        await ui.send(pilot, "/context")
        screen = app.screen
        assert isinstance(screen, ContextScreen)
        text = "\n".join(line.plain for line in screen.lines)
        assert "not reported" in text, text
        await pilot.press("escape")
        await ui.send(pilot, "look around")  # and the session goes on
        assert app.runtime.session.id == sid
