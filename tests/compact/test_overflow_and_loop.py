"""Compaction driven by the real loop: overflow recovery, pre-step placement, failures."""

from __future__ import annotations

from pathlib import Path

from agent.log.events import Event
from agent.loop import Agent
from compact.parts.checkpoint import SummaryJob
from tests.compact.conftest import Rig, add_turn, server_model
from tests.openai_server import OpenAIServer
from tui.demo import ScriptedModel

OVERFLOW = {
    "status": 400,
    "message": "This model's maximum context length is 8000 tokens. However, you requested 9100",
    "code": "context_length_exceeded",
}


def installed(rig: Rig) -> Agent:
    rig.service.install(rig.agent.hooks)
    return rig.agent


def history(rig: Rig, turns: int = 8) -> None:
    for t in range(1, turns + 1):
        add_turn(rig.session, t)


async def test_overflow_is_recovered_by_compaction_and_the_step_retried(
    make_rig, openai_server: OpenAIServer
) -> None:
    rig = make_rig(model=server_model(openai_server))
    history(rig)
    agent = installed(rig)
    openai_server.push(
        OVERFLOW, {"text": "## Primary request and intent\n- condensed"}, {"text": "done"}
    )
    generation = rig.session.replace_generation
    result = await agent.run_turn("next task")
    assert result.reason == "completed" and result.text == "done"
    assert rig.session.replace_generation > generation
    start = next(e for e in rig.session.events if e.type == "compact/start")
    assert start.data.trigger == "overflow" and start.data.turn == 9
    # The retried request carried the checkpoint, and the user's new request survived.
    final = openai_server.requests[-1]["messages"]
    assert "<compacted-summary>" in final[1]["content"]
    assert final[-1]["content"] == "next task"


async def test_overflow_falls_back_to_a_model_free_checkpoint(
    make_rig, openai_server: OpenAIServer
) -> None:
    rig = make_rig(model=server_model(openai_server))
    history(rig)
    agent = installed(rig)
    openai_server.push(
        OVERFLOW,
        {"status": 500, "message": "summarizer down", "type": "server_error"},
        {"text": "recovered"},
    )
    result = await agent.run_turn("go on")
    assert result.reason == "completed"
    summaries = [e for e in rig.session.events if e.type == "compact/summary"]
    assert [s.data.model for s in summaries] == ["fallback"]
    assert "request 1" in summaries[0].data.summary  # the user's messages, verbatim
    assert "summarizer failed" in (summaries[0].data.fallback_reason or "")
    # One bracket: the failed model call is its progress record, the fallback its summary.
    ends = [e.data.error for e in rig.session.events if e.type == "compact/end"]
    assert ends == [None]
    [progress] = [e.data for e in rig.session.events if e.type == "compact/progress"]
    assert progress.status == "failed" and "summarizer failed" in (progress.reason or "")
    assert any("model-free checkpoint" in n for n in rig.notices)


async def test_overflow_with_nothing_to_compact_keeps_the_provider_error(
    make_rig, openai_server: OpenAIServer
) -> None:
    rig = make_rig(model=server_model(openai_server))
    agent = installed(rig)
    openai_server.push(OVERFLOW)
    result = await agent.run_turn("a single huge request " + "x " * 100)
    assert result.reason == "error"
    assert "context" in (result.error or "").lower()
    # No blind retry without proof of progress: the conversation request went out once.
    prompt = rig.session.derive_messages()[-1]["content"]
    sent = [r for r in openai_server.requests if r["messages"][-1]["content"] == prompt]
    assert len(sent) == 1
    assert rig.session.replace_generation == 0


async def test_summarizer_failure_under_pressure_falls_back_and_the_step_proceeds(
    make_rig, openai_server: OpenAIServer
) -> None:
    rig = make_rig(model=server_model(openai_server))
    for t in range(1, 40):
        add_turn(rig.session, t)
        if rig.meter.measure().total > 6600:
            break
    agent = installed(rig)
    openai_server.push(
        {"status": 500, "message": "down", "type": "server_error"}, {"text": "answer"}
    )
    result = await agent.run_turn("continue")
    assert result.reason == "completed" and result.text == "answer"
    end = next(e for e in rig.session.events if e.type == "compact/end")
    assert end.data.error is None
    summary = next(e for e in rig.session.events if e.type == "compact/summary")
    assert summary.data.model == "fallback"
    assert "summarizer failed" in (summary.data.fallback_reason or "")
    # The request that followed carried the checkpoint and fitted under the threshold.
    final = openai_server.requests[-1]["messages"]
    assert "<compacted-summary>" in final[1]["content"]
    assert rig.meter.measure().total < 6400
    assert any("a model-free checkpoint took its place" in n for n in rig.notices)


async def test_runaway_turn_compacts_between_steps(make_rig, tmp_path: Path, estimator) -> None:
    """One long turn of tool steps grows past the threshold: compaction lands at a pre-step
    checkpoint, outside every step, and the turn still finishes."""
    (tmp_path / "big.txt").write_text("\n".join(f"line {i} of a long file" for i in range(400)))
    for i in range(12):
        (tmp_path / f"mod{i}.py").write_text(f"# module {i}\n" + "x = 1\n" * 30)
    model = ScriptedModel(estimator, context_window=3000)
    rig = make_rig(model=model, window=3000)
    agent = installed(rig)
    steps_open: list[bool] = []
    state = {"open": False}

    def watch(event: Event) -> None:
        if event.type == "step/start":
            state["open"] = True
        elif event.type == "step/end":
            state["open"] = False
        elif event.type.startswith("compact/"):
            steps_open.append(state["open"])

    rig.session.subscribe(watch)
    for n in range(6):
        result = await agent.run_turn(f"look at every file here and count lines, round {n}")
        assert result.reason == "completed"
        if steps_open:
            break
    assert steps_open, "compaction never fired: the fixture is too small for the window"
    assert not any(steps_open), "a compaction record landed inside a step"
    kinds = [e.type for e in rig.session.events if e.type.startswith("compact/")]
    assert "compact/end" in kinds


LLAMA_CPP_OVERFLOW = {
    "status": 400,
    "message": "the request exceeds the available context size, try increasing it; "
    "maximum context length is 8000 tokens",
    "type": "invalid_request_error",
}


async def test_overflow_in_the_plain_llama_cpp_wording(
    make_rig, openai_server: OpenAIServer
) -> None:
    rig = make_rig(model=server_model(openai_server))
    history(rig)
    agent = installed(rig)
    openai_server.push(
        LLAMA_CPP_OVERFLOW, {"text": "## Primary request and intent\n- c"}, {"text": "ok"}
    )
    result = await agent.run_turn("next")
    assert result.reason == "completed" and result.text == "ok"
    summaries = [e for e in rig.session.events if e.type == "compact/summary"]
    assert len(summaries) == 1  # one summary call


async def test_overflow_retry_cap_is_honoured(make_rig, openai_server: OpenAIServer) -> None:
    rig = make_rig(model=server_model(openai_server))
    history(rig)
    agent = installed(rig)
    openai_server.push(OVERFLOW, {"text": "## Primary request and intent\n- c"}, OVERFLOW)
    result = await agent.run_turn("next")
    assert result.reason == "error" and "context" in (result.error or "").lower()
    conversation = [r for r in openai_server.requests if r["messages"][-1]["content"] == "next"]
    assert len(conversation) == 2  # the original and exactly one retry


async def test_cancellation_wins_over_overflow_recovery(
    make_rig, openai_server: OpenAIServer
) -> None:
    import asyncio

    from agent.turns import TurnCancelled

    rig = make_rig(model=server_model(openai_server))
    history(rig)
    agent = installed(rig)
    openai_server.push(
        OVERFLOW, {"text": "## Primary request and intent\n- c", "stall_after": 1, "stall_s": 60}
    )
    task = asyncio.create_task(agent.run_turn("next"))
    while len(openai_server.requests) < 2:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    task.cancel()
    try:
        await task
    except TurnCancelled as exc:
        assert exc.result.reason == "cancelled"
    else:
        raise AssertionError("the turn was not cancelled")
    ends = [e.data.error for e in rig.session.events if e.type == "compact/end"]
    assert ends == ["cancelled"]
    assert rig.session.replace_generation == 0
    assert (
        rig.session.events[-1].type == "turn/end"
        and rig.session.events[-1].data.reason == "cancelled"
    )
    assert len([r for r in openai_server.requests if r["messages"][-1]["content"] == "next"]) == 1


async def test_summary_max_tokens_fits_the_window(make_rig, openai_server: OpenAIServer) -> None:
    from agent.tokens import Estimator

    rig = make_rig(model=server_model(openai_server), max_tokens=8192)
    for t in range(1, 60):
        add_turn(rig.session, t)
        if rig.meter.measure().total > 6700:
            break
    openai_server.push({"text": "## Primary request and intent\n- c"})
    assert await rig.service.compact_if_needed(rig.agent.envelope(), "pressure") is not None
    request = openai_server.requests[0]
    estimator = Estimator()
    prompt = estimator.messages_tokens(request["messages"]) + estimator.tools_tokens(
        request["tools"]
    )
    assert request["max_tokens"] < 8192
    assert prompt + request["max_tokens"] <= 8000


async def test_focus_reaches_the_summarizer_prompt(make_rig, openai_server: OpenAIServer) -> None:
    rig = make_rig(model=server_model(openai_server))
    history(rig)
    openai_server.push({"text": "## Primary request and intent\n- c"})
    assert (
        await rig.service.compact_now(rig.agent.envelope(), focus="the header parser") is not None
    )
    instruction = openai_server.requests[0]["messages"][-1]["content"]
    assert instruction.endswith("focus the summary on: the header parser")


async def test_standing_instructions_reach_every_summary_before_the_focus(
    make_rig, openai_server: OpenAIServer
) -> None:
    """``compaction.instructions`` is added to the built-in instruction, for automatic and
    manual compactions alike; a /compact focus comes after it."""
    standing = "Keep every port number and every failing test name."
    rig = make_rig(model=server_model(openai_server), instructions=standing)
    history(rig)
    openai_server.push({"text": "## Primary request and intent\n- c"})
    assert await rig.service.compact_now(rig.agent.envelope(), focus="the parser") is not None
    manual = openai_server.requests[-1]["messages"][-1]["content"]
    assert manual.startswith(SummaryJob("m", "", [], [], 500).instruction())  # built-in first
    assert manual.index(standing) < manual.index("focus the summary on: the parser")
    for t in range(9, 80):  # past the threshold (6,400 of 8,000)
        add_turn(rig.session, t)
        if rig.meter.measure().total > 6700:
            break
    openai_server.push({"text": "## Primary request and intent\n- d"})
    assert await rig.service.compact_if_needed(rig.agent.envelope(), "pressure") is not None
    automatic = openai_server.requests[-1]["messages"][-1]["content"]
    assert automatic.endswith(f"standing instructions for every checkpoint: {standing}")
