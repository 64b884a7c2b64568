"""The loop's output cap, cut replies, a window lowered by the server's own overflow error,
and usage a server does not report: against a real loopback server and real sessions."""

from __future__ import annotations

from pathlib import Path

from agent.llm.client import OpenAICompatible
from agent.llm.replies import Notice
from agent.llm.retry import RetryPolicy
from agent.llm.windows import WindowBook
from agent.log.session import Session
from agent.loop import Agent
from agent.loop_settings import LoopSettings, default_output_cap
from agent.meter import TokenMeter
from agent.tokens import Estimator
from tests.openai_server import OpenAIServer
from tools.bash import BashTool


def agent_for(
    server: OpenAIServer, session: Session, tmp_path: Path, window: int | WindowBook | None
) -> tuple[Agent, TokenMeter]:
    model = OpenAICompatible(
        server.base_url, None, "local", retry=RetryPolicy(max_attempts=1), request_timeout=10
    )
    meter = TokenMeter(session, Estimator(), window)
    bash = BashTool(cwd=tmp_path, spill_dir=session.spill_dir, policy="auto")
    agent = Agent(
        session,
        model,
        "m",
        [bash],
        settings=LoopSettings(),
        context_window=meter.windows,
        estimate_tokens=meter.estimate_messages,
    )
    return agent, meter


def test_the_default_cap_is_a_quarter_of_the_window_up_to_8192() -> None:
    assert default_output_cap(None) == 8192
    assert default_output_cap(128_000) == 8192
    assert default_output_cap(4096) == 1024


async def test_every_request_carries_a_cap_within_what_the_window_leaves(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    agent, meter = agent_for(openai_server, session, tmp_path, 4096)
    await agent.run_turn("hi")
    (body,) = openai_server.requests
    assert body["max_tokens"] == 4096 // 4
    assert body["tool_choice"] == "auto"  # said whenever tools are offered
    # A prompt that leaves less than the default: the cap shrinks to what is left.
    await agent.run_turn("word " * 3000)
    prompt = meter.estimate_messages(openai_server.requests[1]["messages"])
    assert openai_server.requests[1]["max_tokens"] == max(1, 4096 - prompt)


async def test_a_final_reply_cut_at_the_cap_is_reported_in_the_result(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    agent, _ = agent_for(openai_server, session, tmp_path, 8000)
    openai_server.push({"text": "Once upon a", "finish_reason": "length"})
    result = await agent.run_turn("a story")
    assert result.reason == "completed" and result.cut_at == 8000 // 4
    # Cut while calling a tool, then finished: the turn went on past the cut.
    openai_server.push(
        {
            "tool_calls": [{"name": "bash", "arguments": {"command": "true"}}],
            "finish_reason": "length",
        },
        {"text": "Done."},
    )
    assert (await agent.run_turn("go on")).cut_at is None


async def test_an_overflow_that_states_the_limit_lowers_the_window(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    book = WindowBook("m", configured=8192)
    agent, meter = agent_for(openai_server, session, tmp_path, book)
    seen: list[object] = []
    agent.listen(seen.append)
    message = "request (5000 tokens) exceeds the available context size (3000 tokens)"
    openai_server.push({"status": 400, "message": message, "type": "exceed_context_size_error"})
    result = await agent.run_turn("hi")
    assert result.reason == "error"
    assert meter.context_window == agent.context_window == 3000  # one owner, both read it
    assert book.current.where == "from the server's error"
    notices = [item.text for item in seen if isinstance(item, Notice)]
    assert len(notices) == 1 and "3,000 tokens" in notices[0]
    await agent.run_turn("again")
    headers = [e.data for e in session.events if e.type == "request/header"]
    assert headers[-1].context_window == 3000  # the log says what the next request assumed
    assert openai_server.requests[-1]["max_tokens"] <= 3000 // 4


async def test_usage_a_server_never_reports_is_not_reported(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    agent, meter = agent_for(openai_server, session, tmp_path, 8000)
    openai_server.push({"text": "a", "usage": False}, {"text": "b", "usage": False})
    await agent.run_turn("one")
    await agent.run_turn("two")
    usage = meter.session_usage
    assert (usage.calls, usage.reports, usage.reported) == (2, 0, False)
    await agent.run_turn("three")  # the server's default reply carries usage
    assert meter.session_usage.reported and meter.session_usage.reports == 1
