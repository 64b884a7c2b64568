"""The ``/compact`` consumer over the real basic backend, and the slash-command helpers."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.llm.client import OpenAICompatible
from agent.llm.retry import RetryPolicy
from agent.log.events import Event
from agent.log.session import Session
from agent.loop import Agent
from agent.meter import TokenMeter
from agent.tokens import Estimator
from compact.basic import BasicCompactService
from compact.commands.compact import (
    BUSY,
    CANCELLED,
    NOTHING_NEW,
    NOTHING_TO_COMPACT,
    CompactCommand,
)
from compact.contract.service import ERROR_SENTENCES
from compact.reports.timeline import timeline
from tests.compact import new_session
from tests.openai_server import OpenAIServer
from tui.demo import ScriptedModel

LONG = "the quick brown fox jumps over the lazy dog. " * 40


@dataclass
class Rig:
    session: Session
    agent: Agent
    service: BasicCompactService
    command: CompactCommand

    def types(self, since: int = 0) -> list[str]:
        return [e.type for e in self.session.events[since:]]

    def last(self, type_: str) -> Event:
        return next(e for e in reversed(self.session.events) if e.type == type_)


@pytest.fixture(scope="module")
def estimator() -> Estimator:
    return Estimator()


def build(tmp_path: Path, estimator: Estimator, *, summarizer_delay: float = 0.0) -> Rig:
    session = new_session(tmp_path)
    model = ScriptedModel(estimator)
    meter = TokenMeter(session, estimator, 16_000)
    service = BasicCompactService(
        session, meter, ScriptedModel(estimator, delay_s=summarizer_delay)
    )
    agent = Agent(session, model, model.model, [])
    return Rig(session, agent, service, CompactCommand(service, session))


@pytest.fixture
def rig(tmp_path: Path, estimator: Estimator) -> Iterator[Rig]:
    r = build(tmp_path, estimator)
    yield r
    r.service.close()
    r.session.close()


async def chat(rig: Rig, turns: int = 3) -> None:
    for i in range(turns):
        result = await rig.agent.run_turn(f"Explain item {i}: {LONG}")
        assert result.reason == "completed"


# --- outcomes ---------------------------------------------------------------------------------


async def test_success_reports_items_and_tokens_and_logs_the_command(rig: Rig) -> None:
    await chat(rig)
    mark = len(rig.session.events)

    outcome = await rig.command.run(rig.agent.envelope(), "  the parser  ")

    assert outcome.ok
    result = outcome.result
    assert result is not None
    match = re.fullmatch(r"Compacted (\d+) history items \(~(\S+) → (\S+) tokens\)\.", outcome.text)
    assert match is not None, outcome.text
    assert int(match.group(1)) == len(result.shadowed_seqs) > 1
    assert rig.types(mark) == [
        "command/run",
        "compact/start",
        "compact/progress",
        "compact/summary",
        "user/message",
        "compact/end",
        "command/done",
    ]
    run, start = rig.session.events[mark], rig.session.events[mark + 1]
    done = rig.session.events[-1]
    assert run.data.name == "compact"  # type: ignore[attr-defined]
    assert run.data.args == "the parser"  # type: ignore[attr-defined]
    command_id = run.data.command_id  # type: ignore[attr-defined]
    assert command_id.startswith("cmd-")
    assert start.data.source_command_id == command_id  # type: ignore[attr-defined]
    assert start.data.focus == "the parser"  # type: ignore[attr-defined]
    assert start.data.trigger == "manual"  # type: ignore[attr-defined]
    assert (done.data.command_id, done.data.ok, done.data.text) == (  # type: ignore[attr-defined]
        command_id,
        True,
        outcome.text,
    )
    [record] = timeline(rig.session.events)
    assert (record.status, record.focus, record.source_command_id) == (
        "done",
        "the parser",
        command_id,
    )
    assert not rig.command.running


async def test_command_ids_are_unique(rig: Rig) -> None:
    for _ in range(3):
        await rig.command.run(rig.agent.envelope())
    ids = [e.data.command_id for e in rig.session.events if e.type == "command/run"]  # type: ignore[attr-defined]
    assert len(set(ids)) == 3


async def test_nothing_to_compact_writes_no_bracket(rig: Rig) -> None:
    outcome = await rig.command.run(rig.agent.envelope(), "")
    assert (outcome.ok, outcome.text, outcome.result) == (True, NOTHING_TO_COMPACT, None)
    assert rig.types(1) == ["command/run", "command/done"]
    assert rig.session.events[1].data.args == ""  # type: ignore[attr-defined]


async def test_compact_twice_says_nothing_new_since_the_checkpoint(rig: Rig) -> None:
    await chat(rig)
    first = await rig.command.run(rig.agent.envelope())
    assert first.ok and first.result is not None
    mark = len(rig.session.events)
    second = await rig.command.run(rig.agent.envelope())
    assert (second.ok, second.text, second.result) == (True, NOTHING_NEW, None)
    assert rig.types(mark) == ["command/run", "command/done"]
    assert [r.status for r in timeline(rig.session.events)] == ["done"]
    # New history since the checkpoint is compacted again.
    await chat(rig, turns=2)
    third = await rig.command.run(rig.agent.envelope())
    assert third.ok and third.result is not None
    assert third.result.shadowed_seqs[0] == first.result.replacement_seq


async def test_a_failed_compaction_gives_its_plain_sentence_and_why(
    rig: Rig, openai_server: OpenAIServer
) -> None:
    await chat(rig, turns=3)
    # The summarizer is a real server that fails.
    rig.service.model = OpenAICompatible(
        base_url=openai_server.base_url,
        api_key=None,
        provider="local",
        retry=RetryPolicy(max_attempts=1),
    )
    openai_server.push({"status": 500, "message": "down", "type": "server_error"})
    outcome = await rig.command.run(rig.agent.envelope())
    assert (outcome.ok, outcome.result) == (False, None)
    assert outcome.text.startswith(ERROR_SENTENCES["summary"] + " Why: the summarizer failed: ")
    assert "down" in outcome.text  # the server's own words
    error = rig.last("compact/end").data.error  # type: ignore[attr-defined]
    assert error and outcome.text.endswith(f"Why: {error.rstrip('.')}.")
    assert rig.last("command/done").data.ok is False  # type: ignore[attr-defined]
    [record] = timeline(rig.session.events)
    assert record.status == "failed"


async def test_busy_agent_is_refused_without_calling_the_service(rig: Rig) -> None:
    await chat(rig, turns=2)
    rig.session.append("turn/start", {"turn": 9})  # a turn is open in the log
    mark = len(rig.session.events)
    outcome = await rig.command.run(rig.agent.envelope(), "focus")
    assert (outcome.ok, outcome.text) == (False, BUSY)
    assert rig.types(mark) == ["command/run", "command/done"]
    assert not rig.command.running


async def test_signal_set_before_the_run_cancels_at_once(rig: Rig) -> None:
    await chat(rig, turns=2)
    mark = len(rig.session.events)
    signal = asyncio.Event()
    signal.set()
    outcome = await rig.command.run(rig.agent.envelope(), signal=signal)
    assert (outcome.ok, outcome.text) == (False, CANCELLED)
    assert rig.types(mark) == ["command/run", "command/done"]


async def test_signal_set_while_compacting_cancels(rig: Rig) -> None:
    await chat(rig)
    signal = asyncio.Event()
    rig.session.subscribe(lambda e: signal.set() if e.type == "compact/start" else None)
    before = list(rig.session.surface)

    outcome = await rig.command.run(rig.agent.envelope(), signal=signal)

    assert (outcome.ok, outcome.text) == (False, CANCELLED)
    assert list(rig.session.surface) == before
    assert rig.last("compact/end").data.error  # type: ignore[attr-defined]
    assert rig.last("command/done").data.text == CANCELLED  # type: ignore[attr-defined]


async def test_cancelling_the_task_logs_done_and_propagates(
    tmp_path: Path, estimator: Estimator
) -> None:
    rig = build(tmp_path, estimator, summarizer_delay=0.01)
    try:
        await chat(rig)
        task = asyncio.create_task(rig.command.run(rig.agent.envelope()))
        rig.session.subscribe(lambda e: task.cancel() if e.type == "compact/start" else None)
        with pytest.raises(asyncio.CancelledError):
            await task
        assert rig.types()[-2:] == ["compact/end", "command/done"]
        assert rig.last("command/done").data.text == CANCELLED  # type: ignore[attr-defined]
        assert not rig.command.running
        await asyncio.wait_for(rig.command.wait_idle(), 1)
    finally:
        rig.service.close()
        rig.session.close()


async def test_a_prompt_waits_until_compact_has_committed(
    tmp_path: Path, estimator: Estimator
) -> None:
    rig = build(tmp_path, estimator, summarizer_delay=0.005)
    try:
        await chat(rig)
        await asyncio.wait_for(rig.command.wait_idle(), 1)  # idle: returns at once
        seen: list[str] = []

        async def submit_prompt() -> None:
            await rig.command.wait_idle()
            seen.append(rig.session.events[-1].type)
            await rig.agent.run_turn("and then?")

        compacting = asyncio.create_task(rig.command.run(rig.agent.envelope()))
        await asyncio.sleep(0)
        assert rig.command.running
        prompt = asyncio.create_task(submit_prompt())
        second = await rig.command.run(rig.agent.envelope())  # one /compact at a time
        assert (second.ok, second.text) == (False, BUSY)

        outcome = await compacting
        await prompt
        assert outcome.ok, outcome.text
        assert seen == ["command/done"]
        types = rig.types()
        last_turn = len(types) - 1 - types[::-1].index("turn/start")
        assert types.index("command/done") < last_turn
    finally:
        rig.service.close()
        rig.session.close()


# --- slash commands ---------------------------------------------------------------------------
