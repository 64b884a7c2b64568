"""MCP servers that misbehave (made with the SDK's own server helper, tests/mcp/fault_server.py),
through the real ``reefline -p``: one that crashes, hangs, answers huge, lists 200 tools,
sends terminal escapes or an image. The session goes on each time."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.e2e.test_mcp_headless import ask, call, configure, offered, tool_messages
from tests.mcp.servers import fault
from tests.openai_server import OpenAIServer


def test_a_server_that_crashes_mid_call_is_named_once_and_the_session_goes_on(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    configure(cli_env, fault("crashy", "crash"))
    openai_server.push(
        {"tool_calls": [call("mcp__crashy__crash", {})]},
        {"tool_calls": [call("mcp__crashy__echo", {"text": "hi"}, "c2")]},
        {"text": "went on"},
    )
    out = ask(run_cli, openai_server, "--approve", "auto")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "went on\n"
    assert out.stderr.count("MCP server `crashy` failed") == 1, out.stderr
    first, second = tool_messages(openai_server, 2)
    assert "MCP server `crashy` is not running" in first
    assert "MCP server `crashy` is not running" in second
    # Its tools are no longer offered.
    assert not any(n.startswith("mcp__crashy") for n in offered(openai_server, 2))


def test_a_call_that_hangs_ends_at_tool_timeout(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    configure(cli_env, fault("slowpoke", "hang", tool_timeout_s=1))
    openai_server.push(
        {"tool_calls": [call("mcp__slowpoke__hang", {})]},
        {"tool_calls": [call("mcp__slowpoke__echo", {"text": "still here"}, "c2")]},
        {"text": "ok"},
    )
    out = ask(run_cli, openai_server, "--approve", "auto")
    assert out.returncode == 0, out.stderr
    first, second = tool_messages(openai_server, 2)
    assert "did not answer within 1 s (tool_timeout_s)" in first
    assert second == "still here"  # the server itself is fine


def test_a_huge_answer_is_capped_and_spilled(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    configure(cli_env, fault("big", "huge"))
    openai_server.push({"tool_calls": [call("mcp__big__huge", {})]}, {"text": "ok"})
    out = ask(run_cli, openai_server, "--approve", "auto")
    assert out.returncode == 0, out.stderr
    [answer] = tool_messages(openai_server, 1)
    assert len(answer) < 20_000 and "line 000000" in answer and "line 003999" in answer
    assert "omitted; full output" in answer
    [log] = session_files(cli_env)
    result = next(e for e in log_events(log) if e["type"] == "tool/result")["data"]
    assert result["truncated"] is True
    spilled = Path(result["spill_path"]).read_text()
    assert spilled.count("\n") == 3999 and spilled.startswith("line 000000")


def test_two_hundred_tools_are_deferred_behind_the_schema_tool(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    configure(cli_env, fault("many", "many"))
    openai_server.push(
        {"tool_calls": [call("mcp__many__echo", {"text": "up"})]},
        {"tool_calls": [call("mcp_tool_schemas", {"names": ["mcp__many__tool_007"]}, "c2")]},
        {"tool_calls": [call("mcp__many__tool_007", {"path": "src", "limit": 3}, "c3")]},
        {"tool_calls": [call("mcp__many__tool_008", {"limit": "three"}, "c4")]},
        {"text": "ok"},
    )
    out = ask(run_cli, openai_server, "--approve", "auto")
    assert out.returncode == 0, out.stderr
    # Once the server is up, the request carries one small tool listing all 201, not their schemas.
    tools = openai_server.requests[1]["tools"]
    assert [t["function"]["name"] for t in tools] == ["bash", "edit", "mcp_tool_schemas"]
    [lister] = [t for t in tools if t["function"]["name"] == "mcp_tool_schemas"]
    listing = lister["function"]["description"]
    assert "[many]\n" in listing and "\ntool_199: Tool number 199" in listing
    # Every later request carries the same tools: the prompt cache holds.
    assert all(r["tools"] == tools for r in openai_server.requests[2:])
    echo, schemas, ran, refused = tool_messages(openai_server, 4)
    assert echo == "up"
    [schema] = json.loads(schemas)
    assert schema["name"] == "mcp__many__tool_007" and "path" in schema["parameters"]["properties"]
    full = {"type": "function", "function": schema}
    assert len(json.dumps(lister)) < 0.2 * 200 * len(json.dumps(full))
    assert ran == "tool 7: src  3 False"  # called by name, its schema never in the request
    assert "do not fit mcp__many__tool_008's schema" in refused and "'path'" in refused


def test_what_a_server_sends_is_sanitized(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    configure(cli_env, fault("esc", "escape"), fault("pic", "image"))
    openai_server.push(
        {"tool_calls": [call("mcp__esc__escape", {}), call("mcp__pic__image", {}, "c2")]},
        {"text": "ok"},
    )
    out = ask(run_cli, openai_server, "--approve", "auto", "--json")
    assert out.returncode == 0, out.stderr
    escaped, image = tool_messages(openai_server, 1)
    assert escaped == "plain title red end"
    assert image.startswith("[image not shown: image/png, about") and "a caption" in image
    assert "\x1b" not in out.stdout + out.stderr  # (JSON lines write it escaped: \\u001b)


def test_ctrl_c_cancels_a_call_in_flight(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "hanging"
    configure(cli_env, fault("slowpoke", "hang", env={"HANG_MARK": str(mark)}))
    openai_server.push({"tool_calls": [call("mcp__slowpoke__hang", {})]})
    proc = subprocess.Popen(
        [REEFLINE, "-p", "go", "--approve", "auto", "--base-url", openai_server.base_url,
         "--model", "m"],
        cwd=workdir, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.exists(), proc.communicate(timeout=10)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    [log] = session_files(cli_env)
    events = log_events(log)
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "cancelled"
    result = next(e for e in events if e["type"] == "tool/result")["data"]
    assert "interrupted" in result["content"], result


def test_a_server_past_its_startup_timeout_is_named_and_its_calls_fail(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    configure(cli_env, fault("slow", "slow", startup_timeout_s=1))
    openai_server.push({"tool_calls": [call("mcp__slow__echo", {"text": "x"})]}, {"text": "ok"})
    out = ask(run_cli, openai_server, "--approve", "auto", env={"SLOW_START_S": "600"})
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("MCP server `slow` failed: did not start within 1 s") == 1, out.stderr
    [answer] = tool_messages(openai_server, 1)
    assert "MCP server `slow` is not running: did not start within 1 s" in answer
