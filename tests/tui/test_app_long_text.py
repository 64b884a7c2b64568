"""A text far longer than a screen — a 50 MB prompt in a resumed log, a reply as long as a
reply may be as it streams — is drawn as its head and tail with a note, and the app stays usable.

The bounds are generous (a loaded machine): drawing such a text whole took the app about
two minutes before it took input.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import pytest

from agent.llm.call_bounds import MAX_TEXT_CHARS
from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tests.tui.test_app_tmux import (  # noqa: F401  (fixtures)
    REEFLINE,
    Tmux,
    app_env,
    tiktoken_cache,
    tmux,
)
from tui.widgets.entries import Notice, UserEntry
from tui.widgets.reply import AssistantEntry

USABLE_S = 20.0
"""From start to a prompt that takes input; it was about 116 s."""


def long_line(size: int) -> str:
    """One line of ``size`` characters, with a marker at each end."""
    return "HEAD-MARK " + "word " * ((size - 20) // 5) + "TAIL-MARK"


def write_log(home: Path, cwd: Path, *, prompt: str, answer: str) -> str:
    session = Session.create(home, cwd=str(cwd), registry=build_registry())
    session.append("turn/start", {"turn": 1})
    session.append("user/message", {"content": prompt})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "text": answer, "finish_reason": "stop", "model": "scripted-demo",
         "tool_calls": []},
    )  # fmt: skip
    session.append("step/end", {"turn": 1, "step": 1})
    session.append("turn/end", {"turn": 1, "reason": "completed"})
    session.close()
    return session.id


@pytest.mark.parametrize("where", ["prompt", "answer"])
def test_resuming_a_50_mb_line_draws_its_ends_and_takes_input(
    tmux: Tmux,  # noqa: F811
    app_env: dict[str, str],  # noqa: F811
    workdir: Path,
    where: str,
) -> None:
    """``reefline --continue`` in a terminal on a log with one 50 MB line."""
    big = long_line(50_000_000)
    home = Path(app_env["REEFLINE_HOME"])
    write_log(home, workdir, prompt=big if where == "prompt" else "a short question",
              answer=big if where == "answer" else "A short answer.")  # fmt: skip
    command = shlex.join([REEFLINE, "--continue", "--demo"])
    started = time.monotonic()
    tmux.start(f"cd {shlex.quote(str(workdir))} && {command}", width=120, height=40, env=app_env)
    screen = tmux.wait_for("not drawn", "Message reefline", timeout=USABLE_S)
    assert "characters not drawn" in screen and "reefline export" in screen
    assert "TAIL-MARK" in screen  # the end of the text, just above the note's line
    tmux.type("/help")
    tmux.wait_for("Leave reefline", timeout=max(1.0, USABLE_S - (time.monotonic() - started)))


async def test_a_reply_at_the_text_bound_streams_as_its_head_and_ends_drawn(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """A server streams an answer as long as a reply may be (4 MB): the entry draws its head
    while it streams, and its head, a note and its tail once complete; the prompt then
    takes the next message."""
    answer = long_line(MAX_TEXT_CHARS)
    openai_server.push({"text": answer, "chunk_size": 1_000_000}, {"text": "Short again."})
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        started = time.monotonic()
        await ui.type(pilot, "write a lot")
        await ui.settle(pilot, timeout=USABLE_S)
        [entry] = app.query(AssistantEntry)
        shown, _ = entry.parts()
        assert shown.startswith("HEAD-MARK") and shown.endswith("TAIL-MARK")
        assert "not drawn · the full text is in the session log" in shown
        assert len(shown) < 100_000
        assert app.main.transcript.last_answer == shown  # ctrl+y copies what is drawn
        await ui.send(pilot, "and now?")
        assert time.monotonic() - started < 2 * USABLE_S
        assert [e.text for e in app.query(UserEntry)][-1] == "and now?"
        assert any("Short again." in e.parts()[0] for e in app.query(AssistantEntry))
        assert not [n for n in app.query(Notice) if n.level == "error"]
    events = runtime.session.events
    assert any(getattr(e.data, "text", None) == answer for e in events)  # logged whole
