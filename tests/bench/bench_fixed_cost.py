"""The fixed cost of a request: the system prompt and the tool schemas every request carries
before any message, in tokens (the model's tokenizer, as the gauge counts them).

Read from the first request a real ``reefline -p`` sends to the loopback server, with no MCP
server configured: the tools it carries (``bash`` and ``edit``) side by side with the same
request carrying ``bash`` alone, the cost before the edit tool. Target: at most 800 tokens
with ``edit`` added. Rows for MCP servers belong beside these (same group).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from agent.tokens import Estimator
from tests.bench.report import Figure, Table
from tests.openai_server import OpenAIServer

REEFLINE = Path(sys.executable).with_name("reefline")
GROUP = "Fixed cost of a request (system prompt + tool schemas)"
BUDGET = 800
MODEL = "gpt-4.1"
"""Named in the request, so the tokenizer is the one a real session would count with."""


def first_request() -> dict[str, Any]:
    """The body of the first request of ``reefline -p`` against a loopback server."""
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        home = Path(tmp)
        (home / "config.toml").write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REEFLINE_"))}
        env.update(REEFLINE_HOME=str(home / "home"), REEFLINE_CONFIG=str(home / "config.toml"))
        command = [str(REEFLINE), "-p", "hi", "--base-url", server.base_url, "--model", MODEL]
        subprocess.run(command, env=env, cwd=home, capture_output=True, timeout=60, check=True)
        return server.requests[0]


def cost(estimator: Estimator, system: str, tools: list[dict[str, Any]]) -> tuple[int, int]:
    """(system, tools) tokens, as the meter prices a request's header."""
    return estimator.system_tokens(system), estimator.tools_tokens(tools)


def run() -> list[Figure | Table]:
    body = first_request()
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    tools: list[dict[str, Any]] = body.get("tools") or []
    bash_only = [t for t in tools if t["function"]["name"] == "bash"]
    estimator = Estimator(MODEL)
    rows = []
    totals = {}
    for label, chosen in (("bash only (before edit)", bash_only), ("bash + edit", tools)):
        system_tokens, tools_tokens = cost(estimator, system, chosen)
        total = system_tokens + tools_tokens
        totals[label] = total
        names = ", ".join(t["function"]["name"] for t in chosen)
        rows.append([label, names, f"{system_tokens:,}", f"{tools_tokens:,}", f"{total:,}"])
    after, before = totals["bash + edit"], totals["bash only (before edit)"]
    return [
        Table(
            group=GROUP,
            columns=["request", "tools", "system", "tool schemas", "total"],
            rows=rows,
            note=(
                f"No MCP server; the first request of `reefline -p` against a loopback server, "
                f"counted with {MODEL}'s tokenizer."
            ),
        ),
        Figure(
            group=GROUP,
            name="no MCP server: system + bash + edit",
            value=after,
            unit="tokens",
            baseline_name="bash only",
            baseline_value=before,
            target=f"≤ {BUDGET} tokens",
            ok=after <= BUDGET,
        ),
    ]
