"""The ReAct loop against a real loopback OpenAI-compatible server and real bash."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agent.envelope import Envelope
from agent.llm.client import OpenAICompatible
from agent.llm.errors import ContextOverflow
from agent.llm.replies import TextDelta, ToolOutputDelta
from agent.llm.retry import RetryPolicy
from agent.log.events import Event, ToolResult
from agent.log.session import Session
from agent.loop import Agent
from agent.loop_settings import LoopSettings
from agent.turns import TurnCancelled
from tests.held import Held, kill_all, still_alive
from tests.openai_server import OpenAIServer
from tools.bash import BashTool


def make_agent(server: OpenAIServer, session: Session, tmp_path: Path, **settings: object) -> Agent:
    model = OpenAICompatible(
        base_url=server.base_url,
        api_key=None,
        provider="local",
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05),
        request_timeout=10,
    )
    bash = BashTool(cwd=tmp_path, spill_dir=session.spill_dir, policy="auto")
    return Agent(session, model, "test-model", [bash], settings=LoopSettings(**settings))  # type: ignore[arg-type]


def types(session: Session, start: int = 1) -> list[str]:
    return [e.type for e in session.events[start:]]


def bash_call(command: str, call_id: str = "c1") -> dict:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


async def test_two_step_turn_event_order(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    openai_server.push({"tool_calls": [bash_call("echo hi")]}, {"text": "All done."})
    agent = make_agent(openai_server, session, tmp_path)
    seen_at_pre_step: list[tuple[int, int, str]] = []

    async def pre_step(envelope: Envelope, turn: int, step: int, signal: asyncio.Event) -> None:
        seen_at_pre_step.append((turn, step, session.events[-1].type))

    agent.hooks.pre_step.append(pre_step)
    result = await agent.run_turn("say hi")

    assert result.reason == "completed" and result.text == "All done."
    assert types(session) == [
        "turn/start",
        "context/message",
        "user/message",
        "step/start",
        "request/header",
        "assistant/message",
        "tool/start",
        "tool/result",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    # pre_step ran before each step opened (after the previous step closed).
    assert seen_at_pre_step == [(1, 1, "user/message"), (1, 2, "step/end")]
    res = next(e for e in session.events if e.type == "tool/result")
    assert res.data.content.startswith("hi") and res.data.exit_code == 0
    # Model-visible means logged: each request is the system prompt + the derived surface.
    derived = session.derive_messages()
    first, second = openai_server.requests
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][1:] == derived[:2]
    assert second["messages"][1:] == derived[:4]
    assert [t["function"]["name"] for t in first["tools"]] == ["bash"]


async def test_bad_arguments_and_unknown_tool_are_answered(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    openai_server.push(
        {
            "tool_calls": [
                {"id": "a", "name": "bash", "arguments": "{not json"},
                {"id": "b", "name": "python", "arguments": "{}"},
                {"id": "c", "name": "bash", "arguments": "[1, 2]"},
            ]
        },
        {"text": "Sorry."},
    )
    agent = make_agent(openai_server, session, tmp_path)
    result = await agent.run_turn("go")
    assert result.reason == "completed"
    results = {e.data.call_id: e.data for e in session.events if e.type == "tool/result"}
    assert results["a"].is_error and "not valid JSON" in results["a"].content
    assert results["b"].is_error and "no tool named 'python'" in results["b"].content
    assert "bash" in results["b"].content
    assert results["c"].is_error and "JSON object" in results["c"].content
    # The model saw the errors in its next request.
    tool_messages = [m for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 3


async def test_max_steps(openai_server: OpenAIServer, session: Session, tmp_path: Path) -> None:
    for i in range(3):
        openai_server.push({"tool_calls": [bash_call("true", f"c{i}")]})
    agent = make_agent(openai_server, session, tmp_path, max_steps=2)
    result = await agent.run_turn("loop forever")
    assert result.reason == "max-steps" and "2 steps" in (result.error or "")
    end = session.events[-1]
    assert end.type == "turn/end" and end.data.reason == "max-steps"
    assert len(openai_server.requests) == 2
    assert types(session).count("step/start") == types(session).count("step/end") == 2


async def test_provider_error_ends_turn_with_readable_message(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    openai_server.push({"status": 401, "message": "bad key", "type": "invalid_request_error"})
    agent = make_agent(openai_server, session, tmp_path)
    result = await agent.run_turn("hi")
    assert result.reason == "error" and result.error
    end = session.events[-1]
    assert end.type == "turn/end" and end.data.reason == "error" and end.data.error == result.error
    assert types(session)[-2] == "step/end"


async def test_retry_is_logged(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    openai_server.push({"status": 500, "message": "oops", "type": "server_error"}, {"text": "ok"})
    agent = make_agent(openai_server, session, tmp_path)
    result = await agent.run_turn("hi")
    assert result.reason == "completed"
    retry = next(e for e in session.events if e.type == "llm/retry")
    assert retry.data.attempt == 1


@pytest.mark.parametrize("recovers", [True, False])
async def test_overflow_goes_to_request_error_hook(
    openai_server: OpenAIServer, session: Session, tmp_path: Path, recovers: bool
) -> None:
    overflow = {
        "status": 400,
        "message": "This model's maximum context length is 10 tokens",
        "code": "context_length_exceeded",
    }
    openai_server.push(overflow, {"text": "fits now"})
    agent = make_agent(openai_server, session, tmp_path)
    calls: list[tuple[int, int]] = []

    async def on_error(
        envelope: Envelope, error: ContextOverflow, turn: int, step: int, signal: asyncio.Event
    ) -> bool:
        calls.append((turn, step))
        return recovers

    agent.hooks.request_error.append(on_error)
    result = await agent.run_turn("big")
    assert calls == [(1, 1)]
    if recovers:
        assert result.reason == "completed" and result.text == "fits now"
        assert len(openai_server.requests) == 2
    else:
        assert result.reason == "error" and "context" in (result.error or "").lower()
        assert len(openai_server.requests) == 1


async def test_cancel_mid_stream_records_partial_reply(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    openai_server.push(
        {"text": "partial answer that stalls", "chunk_size": 4, "stall_after": 3, "stall_s": 60}
    )
    agent = make_agent(openai_server, session, tmp_path)
    got_text = asyncio.Event()
    agent.listen(lambda item: got_text.set() if isinstance(item, TextDelta) else None)
    task = asyncio.create_task(agent.run_turn("stream"))
    await asyncio.wait_for(got_text.wait(), 5)
    task.cancel()
    with pytest.raises(TurnCancelled) as info:
        await task
    assert info.value.result.reason == "cancelled"
    reply = next(e for e in session.events if e.type == "assistant/message")
    assert reply.data.finish_reason == "cancelled" and reply.data.text
    assert "partial answer".startswith(reply.data.text) or reply.data.text.startswith("part")
    assert types(session)[-2:] == ["step/end", "turn/end"]
    assert session.events[-1].data.reason == "cancelled"


async def test_cancel_mid_bash_kills_the_group_and_balances_the_surface(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    openai_server.push(
        {
            "tool_calls": [
                bash_call(f"sleep 60 & echo $! > {pid_file}; wait", "slow"),
                bash_call("echo never", "later"),
            ]
        }
    )
    agent = make_agent(openai_server, session, tmp_path)
    started = asyncio.Event()

    def watch(event: Event) -> None:
        if event.type == "tool/start":
            started.set()

    session.subscribe(watch)
    task = asyncio.create_task(agent.run_turn("sleep"))
    await asyncio.wait_for(started.wait(), 5)
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.05)
    sleeper = Held(int(pid_file.read_text()))  # running: the command waits for it
    task.cancel()
    with pytest.raises(TurnCancelled):
        await task
    try:
        # Killed with its group: gone once it has finished dying (waited for, not timed).
        assert not still_alive([sleeper]), "the backgrounded sleep survived the cancel"
    finally:
        kill_all([sleeper])
    results = {e.data.call_id: e.data for e in session.events if e.type == "tool/result"}
    assert results["slow"].is_error and "interrupted" in results["slow"].content
    assert results["later"].is_error and "not run" in results["later"].content
    from agent.turns import unanswered_tool_calls

    assert unanswered_tool_calls(session.derive_messages()) == []
    assert session.events[-1].type == "turn/end" and session.events[-1].data.reason == "cancelled"


async def test_steering_is_delivered_at_the_next_step(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    openai_server.push({"tool_calls": [bash_call("sleep 0.3")]}, {"text": "ok, also done"})
    agent = make_agent(openai_server, session, tmp_path)

    def steer_on_tool_start(event: Event) -> None:
        if event.type == "tool/start":
            agent.steer("also check the tests")

    session.subscribe(steer_on_tool_start)
    await agent.run_turn("work")
    kinds = types(session)
    i = kinds.index("steering/message")
    assert kinds[i - 1] == "step/start" and kinds.count("step/start") == 2
    assert kinds[:i].count("step/start") == 2  # delivered in step 2, not step 1
    assert {"role": "user", "content": "also check the tests"} in openai_server.requests[1][
        "messages"
    ]
    assert agent.pending_steering == []


async def test_unanswered_call_on_surface_is_never_sent(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "finish_reason": "tool_calls",
            "model": "m",
            "tool_calls": [{"id": "orphan", "name": "bash", "arguments": "{}"}],
        },
    )
    agent = make_agent(openai_server, session, tmp_path)

    async def orphan(envelope: Envelope, turn: int, step: int, signal: asyncio.Event) -> None:
        # A listener that breaks the pairing mid-turn: the request must not go out.
        session.append(
            "assistant/message",
            {"turn": turn, "step": step, "finish_reason": "tool_calls", "model": "m",
             "tool_calls": [{"id": "orphan2", "name": "bash", "arguments": "{}"}]},
        )  # fmt: skip

    agent.hooks.pre_step.append(orphan)
    result = await agent.run_turn("next")
    assert result.reason == "error" and "orphan2" in (result.error or "")
    assert openai_server.requests == []


async def test_a_call_left_unanswered_is_answered_before_the_next_turn(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    """A result that could not be written (a full disk) leaves a call without a result on
    the surface: the next turn first gives it an error result, so it can be sent."""
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "finish_reason": "tool_calls", "model": "m",
         "tool_calls": [{"id": "orphan", "name": "bash", "arguments": "{}"}]},
    )  # fmt: skip
    openai_server.push({"text": "fine"})
    agent = make_agent(openai_server, session, tmp_path)
    result = await agent.run_turn("next")
    assert result.reason == "completed" and result.text == "fine"
    messages = openai_server.requests[0]["messages"]
    i = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
    assert messages[i + 1]["role"] == "tool" and messages[i + 1]["tool_call_id"] == "orphan"
    assert messages[i + 1]["content"].startswith("error:")


async def test_workspace_context_comes_back_after_it_is_shadowed(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    (tmp_path / "AGENTS.md").write_text("Always run the linter.")
    openai_server.push({"tool_calls": [bash_call("true")]}, {"text": "done"})
    agent = make_agent(openai_server, session, tmp_path)

    async def compact_head(envelope: Envelope, turn: int, step: int, signal: asyncio.Event) -> None:
        if step != 2:
            return
        nodes = list(session.surface)
        span = nodes[:2]  # the context message and the user's request
        session.append(
            "user/message",
            {"content": "summary", "source": "compact"},
            surface_op={"op": "replace", "start": span[0], "end": span[-1]},
            source_event_seqs=sorted(span),
        )

    agent.hooks.pre_step.append(compact_head)
    await agent.run_turn("lint it")
    contexts = [e for e in session.events if e.type == "context/message"]
    assert len(contexts) == 2
    assert "Always run the linter." in contexts[0].data.content
    second_request = openai_server.requests[1]["messages"]
    assert any("Always run the linter." in (m.get("content") or "") for m in second_request)


async def test_another_context_message_does_not_stand_in_for_the_workspace_context(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    """A remembered line left on the surface after a checkpoint took the workspace context
    away: the workspace context (the files, the line in them) is still sent again."""
    (tmp_path / "AGENTS.md").write_text("Always run the linter.")
    openai_server.push({"text": "hi"}, {"text": "done"})
    agent = make_agent(openai_server, session, tmp_path)
    await agent.run_turn("hello")
    note = "From now on: - never touch vendor/"
    session.append("context/message", {"content": note, "source": "memory"})

    async def compact_head(envelope: Envelope, turn: int, step: int, signal: asyncio.Event) -> None:
        if turn != 2:
            return
        span = list(session.surface)[:3]  # the workspace context, "hello" and its answer
        session.append(
            "user/message",
            {"content": "summary", "source": "compact"},
            surface_op={"op": "replace", "start": span[0], "end": span[-1]},
            source_event_seqs=sorted(span),
        )

    agent.hooks.pre_step.append(compact_head)
    await agent.run_turn("next")
    sent = [m.get("content") or "" for m in openai_server.requests[1]["messages"]]
    assert any("Always run the linter." in text for text in sent)
    assert note in sent


async def test_steering_during_the_final_answer_gets_one_more_step(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    openai_server.push(
        {"text": "first answer, streamed slowly", "chunk_size": 4, "delay_s": 0.02},
        {"text": "answer that saw the steering"},
    )
    agent = make_agent(openai_server, session, tmp_path)
    steered = False

    def steer_once(item: object) -> None:
        nonlocal steered
        if isinstance(item, TextDelta) and not steered:
            steered = True
            agent.steer("and mention the tests")

    agent.listen(steer_once)
    result = await agent.run_turn("answer me")
    assert result.reason == "completed" and result.text == "answer that saw the steering"
    assert types(session).count("step/start") == 2
    assert openai_server.requests[1]["messages"][-1] == {
        "role": "user",
        "content": "and mention the tests",
    }


async def test_steering_that_must_not_extend_the_turn_waits_to_be_taken(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    """The app's way: text typed during the final answer never makes a step of its own;
    the turn ends as it would have and the text stays queued until it is taken."""
    openai_server.push(
        {"text": "first answer, streamed slowly", "chunk_size": 4, "delay_s": 0.02},
    )
    agent = make_agent(openai_server, session, tmp_path)

    def steer_once(item: object) -> None:
        if isinstance(item, TextDelta) and not agent.pending_steering:
            agent.steer("and mention the tests", extend_turn=False)

    agent.listen(steer_once)
    assert not agent.busy
    result = await agent.run_turn("answer me")
    assert result.reason == "completed" and types(session).count("step/start") == 1
    assert "steering/message" not in types(session) and len(openai_server.requests) == 1
    assert not agent.busy  # the log's turn is closed
    assert agent.take_steering() == ["and mention the tests"]
    assert agent.pending_steering == []


async def test_a_running_commands_output_streams_and_survives_esc(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    """Output reaches the stream listeners as tool/output deltas while the command runs;
    cancelling the turn then logs what was printed, marked interrupted."""
    openai_server.push({"tool_calls": [bash_call("echo step one; echo step two; sleep 100")]})
    agent = make_agent(openai_server, session, tmp_path)
    heard: list[ToolOutputDelta] = []
    agent.listen(lambda item: heard.append(item) if isinstance(item, ToolOutputDelta) else None)
    task = asyncio.create_task(agent.run_turn("run it"))
    deadline = time.monotonic() + 10
    while "step two" not in "".join(d.text for d in heard):
        assert time.monotonic() < deadline, "no live output"
        await asyncio.sleep(0.02)
    assert {d.call_id for d in heard} == {"c1"}
    assert not any(e.type == "tool/result" for e in session.events)  # still running
    task.cancel()
    with pytest.raises(TurnCancelled):
        await task
    [result] = [e for e in session.events if isinstance(e, ToolResult)]
    data = result.data
    assert data.interrupted and data.is_error and data.exit_code is None
    assert data.content.startswith("error: interrupted by the user while running")
    assert "step one\nstep two\n" in data.content
    assert "tool/output" not in types(session)  # transient: never logged


async def test_replying_hooks_hear_a_reply_begin_before_it_is_written(
    openai_server: OpenAIServer, session: Session, tmp_path: Path
) -> None:
    # The first reply sends its first chunk (the role, no text yet) and then goes silent
    # until the test lets it go on: the hook must have fired by then. Then once per step.
    openai_server.push(
        {"tool_calls": [bash_call("echo hi")], "stall_after": 1, "stall_s": 60},
        {"text": "All done."},
    )
    agent = make_agent(openai_server, session, tmp_path)
    began: list[tuple[int, int, int]] = []
    heard = asyncio.Event()

    def replying(turn: int, step: int) -> None:
        began.append((turn, step, len(openai_server.requests)))
        heard.set()

    shown: list[object] = []
    agent.hooks.replying.append(replying)
    agent.listen(shown.append)
    task = asyncio.create_task(agent.run_turn("say hi"))
    await asyncio.wait_for(heard.wait(), 10)
    # Heard while the reply is silent: nothing of it logged or shown yet.
    assert began == [(1, 1, 1)]
    assert not any(e.type == "assistant/message" for e in session.events)
    assert shown == []
    openai_server.unstalled.set()
    result = await asyncio.wait_for(task, 10)
    assert result.text == "All done." and began == [(1, 1, 1), (1, 2, 2)]
