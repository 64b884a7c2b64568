"""MCP servers and the prompt: what a request's fixed part (system prompt + tool schemas)
costs with no MCP server, with the real ``mcp-server-git`` + ``mcp-server-time``, and with a
server listing 200 tools, deferred (the listing and ``mcp_tool_schemas``) beside all their
schemas sent; and whether a server that takes 10 s to start delays the first request.

Everything goes through the real ``reefline -p`` against a loopback model: the fixed part is
read from the last request (by then the servers are up: the first replies call their tools,
which waits for them) and priced with the same estimator the gauge uses. "All
schemas sent" is what the request would carry without deferral: the full schemas that
``mcp_tool_schemas`` returns for every listed tool.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agent.tokens import Estimator
from tests.bench.bench_startup import _FirstByte
from tests.bench.report import Figure, Table
from tests.mcp.servers import GIT, TIME, fault, toml_table
from tests.openai_server import OpenAIServer

REEFLINE = Path(sys.executable).with_name("reefline")
ESTIMATOR = Estimator("gpt-4.1")
RUNS = 3


def _env(home: Path, config: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REEFLINE_"))}
    (home / "config.toml").write_text(config)
    env.update(REEFLINE_HOME=str(home / "home"), REEFLINE_CONFIG=str(home / "config.toml"))
    return env


def _fixed(request: dict[str, Any]) -> tuple[int, int]:
    """(system prompt tokens, tool schema tokens) of a request as sent."""
    system = next(m["content"] for m in request["messages"] if m["role"] == "system")
    return ESTIMATOR.system_tokens(system), ESTIMATOR.tools_tokens(request.get("tools"))


def _session(config: str, script: list[dict[str, Any]], home: Path) -> list[dict[str, Any]]:
    """The requests of one ``reefline -p`` run whose model follows ``script``."""
    home.mkdir()
    with OpenAIServer() as server:
        server.push(*script)
        subprocess.run(
            [str(REEFLINE), "-p", "go", "--approve", "auto", "--base-url", server.base_url,
             "--model", "gpt-4.1", "--context-window", "128000"],
            env=_env(home, config), cwd=home, capture_output=True, timeout=120, check=True,
        )  # fmt: skip
        return list(server.requests)


def _call(name: str, arguments: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def _fixed_costs(tmp: Path, repo: Path) -> list[list[str]]:
    rows: list[list[str]] = []
    plain = _session("", [{"text": "ok"}], tmp / "none")
    system, tools = _fixed(plain[0])
    rows.append(["no MCP server", f"{system:,}", f"{tools:,}", f"{system + tools:,}", "—"])
    both = toml_table("git", GIT, ["--repository", str(repo)]) + toml_table("time", TIME, [])
    names = [f"mcp__time__{n}" for n in ("get_current_time", "convert_time")]
    names += [f"mcp__git__git_{n}" for n in ("status", "diff_unstaged", "diff_staged", "diff",
              "commit", "add", "reset", "log", "create_branch", "checkout", "show", "branch")]  # fmt: skip
    real = _session(
        both,
        [_call("mcp__time__get_current_time", {"timezone": "UTC"}),
         _call("mcp__git__git_status", {"repo_path": str(repo)}, "c2"),
         _call("mcp_tool_schemas", {"names": names}, "c3"), {"text": "ok"}],
        tmp / "real",
    )  # fmt: skip
    rows += _pair("mcp-server-git + mcp-server-time", real, system, tools)
    listed = [f"mcp__many__tool_{n:03d}" for n in range(200)]
    many = _session(
        fault("many", "many"),
        [_call("mcp__many__echo", {"text": "up"}),
         _call("mcp_tool_schemas", {"names": listed}, "c2"), {"text": "ok"}],
        tmp / "many",
    )  # fmt: skip
    rows += _pair("200 listed tools", many, system, tools)
    return rows


def _pair(label: str, requests: list[dict[str, Any]], system: int, base: int) -> list[list[str]]:
    """Two rows: the request as sent (deferred when over the budget), and with every MCP
    schema sent (from ``mcp_tool_schemas``'s answer)."""
    sent_system, sent_tools = _fixed(requests[-1])
    answers = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    schemas = [{"type": "function", "function": f} for f in json.loads(answers[-1].split("\n")[0])]
    bash = [t for t in requests[-1]["tools"] if not t["function"]["name"].startswith("mcp")]
    whole = ESTIMATOR.tools_tokens(bash + schemas)
    deferred = any(t["function"]["name"] == "mcp_tool_schemas" for t in requests[-1]["tools"])
    how = "deferred" if deferred else "all sent"
    ratio = (sent_system + sent_tools) / (system + whole)
    return [
        [f"{label}, as sent ({how})", f"{sent_system:,}", f"{sent_tools:,}",
         f"{sent_system + sent_tools:,}", f"{ratio:.2f}"],
        [f"{label}, all schemas sent", f"{system:,}", f"{whole:,}", f"{system + whole:,}", "1.00"],
    ]  # fmt: skip


def _first_request_s(port: int, env: dict[str, str], cwd: Path) -> float:
    _FirstByte.arrived.clear()
    started = time.perf_counter()
    subprocess.run(
        [str(REEFLINE), "-p", "hi", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m",
         "--context-window", "8000"],
        env=env, cwd=cwd, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert _FirstByte.arrived, "no request arrived"
    return _FirstByte.arrived[0] - started


def _slow_start(tmp: Path) -> Figure:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _FirstByte)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    bare = _env(tmp / "a", "")
    slow = {**_env(tmp / "b", fault("slow", "slow")), "SLOW_START_S": "10"}
    try:
        _first_request_s(port, bare, tmp)  # warm the caches
        without, with_slow = [], []
        for _ in range(RUNS):
            without.append(_first_request_s(port, bare, tmp))
            with_slow.append(_first_request_s(port, slow, tmp))
    finally:
        server.shutdown()
    first, baseline = statistics.median(with_slow), statistics.median(without)
    return Figure(
        group="MCP servers",
        name="reefline -p: start → first request, a server taking 10 s to start",
        value=first * 1000,
        unit="ms",
        baseline_name="no MCP server",
        baseline_value=baseline * 1000,
        target="ratio ≤ 1.5 (not held up)",
        ok=first / baseline <= 1.5,
    )


def run() -> list[Figure | Table]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        repo = tmp / "repo"
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        rows = _fixed_costs(tmp, repo)
        deferred = next(r for r in rows if r[0].startswith("200 listed tools, as sent"))
        table = Table(
            group="MCP servers",
            columns=["request's fixed part", "system", "tools", "total", "× all schemas"],
            rows=rows,
            note=(
                "Tokens (the gauge's estimator, gpt-4.1's tokenizer) of the last request of a "
                "real `reefline -p` run, when the servers are up. Schemas over 1,500 tokens (or "
                "5% of the window) are deferred: the request lists each tool by name and one "
                "line, and `mcp_tool_schemas` returns the schemas the model asks for. Target: "
                f"200 tools deferred ≤ 0.2× all schemas sent (here {deferred[-1]})."
            ),
        )
        ratio = float(deferred[-1])
        target = Figure(
            group="MCP servers",
            name="200 listed tools: fixed part deferred ÷ all schemas sent",
            value=ratio,
            unit="×",
            target="≤ 0.2",
            ok=ratio <= 0.2,
        )
        return [table, target, _slow_start(tmp)]
