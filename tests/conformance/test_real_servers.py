"""The real ``reefline -p`` against real local model servers (``make conformance``).

SmolLM2-135M answers poorly; these tests check the client, not the model: a tool call the
model is shown and asked to repeat (it does, at temperature 0), usage, the window the server
reports, a real overflow, a reply cut at the output cap, and llama-cpp-python's refusals.
Each run records its HTTP exchanges for the replay tests of the default run.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.llm.discovery import ask_window, from_props
from tests.conformance.conftest import Drive
from tests.conformance.provision import Provisioned
from tests.conformance.scenarios import AND_THESE, REMEMBER, REPEAT_CALL, STORY
from tests.conformance.servers import ALIAS, Running, llama_cpp_python, llama_server
from tests.wire import FIXTURES, Recording, RecordingProxy

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def llama(provisioned: Provisioned, server_logs: Path) -> Iterator[Running]:
    # 3,072: neither the table's 8,192 for smollm2 nor a default, so only the server says it.
    with llama_server(provisioned, 3072, server_logs) as running:
        yield running


@pytest.fixture(scope="module")
def small_llama(provisioned: Provisioned, server_logs: Path) -> Iterator[Running]:
    with llama_server(provisioned, 2048, server_logs) as running:
        yield running


@pytest.fixture(scope="module")
def pyllama(provisioned: Provisioned, server_logs: Path) -> Iterator[Running]:
    if provisioned.llama_cpp_python is None:
        pytest.skip(provisioned.skipped.get("llama-cpp-python", "llama-cpp-python not built"))
    with llama_cpp_python(provisioned, 2048, server_logs) as running:
        yield running


def headers(turn: object) -> list[dict]:
    return [e["data"] for e in turn.of("request/header")]  # type: ignore[attr-defined]


# --- llama.cpp's llama-server ------------------------------------------------------------------


def test_tool_call_round_trip_with_usage_and_the_servers_window(
    drive: Drive, llama: Running
) -> None:
    turn = drive(
        llama, "tool-call", REPEAT_CALL, "--approve", "auto", env={"REEFLINE_MAX_STEPS": "2"}
    )
    starts = turn.of("tool/start")
    assert starts, turn.proc.stderr
    assert "ls -S | head -3" in starts[0]["data"]["arguments"]
    results = turn.of("tool/result")
    assert results[0]["data"]["exit_code"] == 0
    assert "notes.txt" in results[0]["data"]["content"]
    replies = turn.of("assistant/message")
    assert all(r["data"]["usage"]["prompt_tokens"] > 0 for r in replies)  # llama.cpp reports it
    # The window is the server's (3,072), not the table's 8,192 for smollm2.
    assert headers(turn)[0]["context_window"] == 3072
    chats = turn.recording.chats()
    assert chats[0].request["tool_choice"] == "auto"
    assert chats[0].request["max_tokens"] <= 3072 // 4
    assert any(e.path == "/v1/models" for e in turn.recording.exchanges)


def test_a_reply_cut_at_the_output_cap_is_reported(drive: Drive, llama: Running) -> None:
    turn = drive(
        llama,
        "cut-off",
        STORY,
        env={"REEFLINE_MAX_OUTPUT_TOKENS": "12"},
    )
    assert turn.proc.returncode == 1, turn.proc.stderr
    assert "cut off at the output cap of 12 tokens" in turn.proc.stderr
    assert turn.proc.stdout.strip()  # what came is still printed
    assert turn.of("assistant/message")[-1]["data"]["finish_reason"] == "length"


def test_a_real_overflow_lowers_the_window_and_is_recovered(
    drive: Drive, small_llama: Running
) -> None:
    # A window set too large (8,192 against the server's 2,048): the server refuses the
    # second turn, says its limit, and reefline compacts and retries within the turn.
    args = ("--context-window", "8192")
    env = {"REEFLINE_MAX_OUTPUT_TOKENS": "24"}
    first = drive(small_llama, "overflow-first", REMEMBER, *args, env=env)
    assert first.proc.returncode in (0, 1), first.proc.stderr  # 1: its short reply was cut
    turn = drive(small_llama, "overflow", AND_THESE, "--continue", *args, env=env)
    assert "2,048 tokens" in turn.proc.stderr, turn.proc.stderr
    assert "exceeds the available context size" in turn.recording.chats()[0].body
    ends = [e for e in turn.of("compact/end") if e["data"].get("error") is None]
    assert ends, turn.proc.stderr
    assert headers(turn)[-1]["context_window"] == 2048
    last = turn.of("assistant/message")[-1]["data"]
    assert last["finish_reason"] in ("stop", "length")  # the retried request was answered


# --- llama-cpp-python[server] ------------------------------------------------------------------


def test_llama_cpp_python_gets_tools_with_tool_choice_and_whole_replies(
    drive: Drive, pyllama: Running
) -> None:
    # It answers a streamed request with tools by an empty 200; asked whole, it answers.
    # Its chat format asks the model whether to call a tool; asked to list files, it does,
    # and that is the answer it cannot stream.
    turn = drive(
        pyllama,
        "tools-not-streamed",
        "List the files here.",
        "--approve",
        "auto",
        env={"REEFLINE_MAX_STEPS": "2"},
    )
    assert "whole replies from now on" in turn.proc.stderr, turn.proc.stderr
    chats = turn.recording.chats()
    assert chats[0].request["stream"] is True and chats[0].request["tool_choice"] == "auto"
    assert chats[0].status == 200 and chats[0].body == ""
    assert "stream" not in chats[1].request and chats[1].status == 200
    assert all("stream" not in c.request for c in chats[1:])  # remembered for the session
    replies = turn.of("assistant/message")
    assert replies and replies[0]["data"]["usage"]["prompt_tokens"] > 0
    assert turn.of("tool/result")  # the call it made ran, and its result was accepted


def test_llama_cpp_python_empty_200_overflow_is_classified(drive: Drive, pyllama: Running) -> None:
    # One step a turn: its chat format makes the model call a tool at every step.
    env = {"REEFLINE_MAX_OUTPUT_TOKENS": "24", "REEFLINE_MAX_STEPS": "1"}
    args = ("--context-window", "8192")
    drive(pyllama, "empty-200-first", REMEMBER, *args, env=env)
    # A new process: the first request of the next turn is streamed, and over the context.
    turn = drive(pyllama, "empty-200", AND_THESE, "--continue", *args, env=env)
    stderr = turn.proc.stderr
    chats = turn.recording.chats()
    assert chats[0].request["stream"] is True
    assert chats[0].status == 200 and chats[0].body == ""  # the failure, as it reports it
    assert "stream" not in chats[1].request  # asked again whole: the server's own words
    assert chats[1].status == 400 and "maximum context length" in chats[1].body
    assert "The reply stopped before the model had finished it" not in stderr
    assert "2,048 tokens" in stderr, stderr  # the limit it stated lowered the window
    assert turn.of("compact/start"), stderr  # overflow recovery ran
    assert headers(turn)[-1]["context_window"] == 2048


def test_llama_server_window_answers(llama: Running) -> None:
    """Both places llama-server states its context agree with what it was started with."""
    with RecordingProxy(llama.host, llama.port) as proxy:
        answer = asyncio.run(ask_window(proxy.base_url, ALIAS))
        root = proxy.base_url.removesuffix("/v1")
        with urllib.request.urlopen(f"{root}/props") as response:
            props = json.loads(response.read())
        exchanges = proxy.take()
    recording = Recording(llama.name, "SmolLM2-135M-Instruct Q4_1", "window", exchanges)
    recording.scrub(str(Path.home()), "~")
    if os.environ.get("REEFLINE_RECORD_WIRE", "1") != "0":
        recording.save(FIXTURES / llama.name / "window.json")
    assert answer is not None and answer.tokens == llama.ctx
    found = from_props(props)
    assert found is not None and found.tokens == llama.ctx
