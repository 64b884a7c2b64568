"""MCP results under context pressure, through the real ``reefline -p``: compaction masks and
summarizes them like any tool result (nothing in compact/ knows a tool by name but bash's
command line)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Run, log_events, session_files
from tests.e2e.test_mcp_headless import call, configure
from tests.mcp.servers import fault
from tests.openai_server import OpenAIServer

WINDOW = 6000


def test_mcp_results_are_pruned_and_summarized_like_any_result(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    configure(cli_env, fault("notes", "escape"))
    openai_server.summarize = True
    common = ("--base-url", openai_server.base_url, "--model", "m", "--approve", "auto",
              "--context-window", str(WINDOW))  # fmt: skip
    for n in range(7):
        page = " ".join(f"page{n} line{i} of the notes server." for i in range(60))
        openai_server.push(
            {"tool_calls": [call("mcp__notes__echo", {"text": page}, f"c{n}")]},
            {"text": f"read page {n}"},
        )
        more = ("--continue",) if n else ()
        out = run_cli("-p", f"read notes page {n}", *more, *common)
        assert out.returncode == 0, out.stderr
    [log] = session_files(cli_env)
    events = log_events(log)
    starts = {e["data"]["call_id"]: e["data"]["name"] for e in events if e["type"] == "tool/start"}
    results = [e for e in events if e["type"] == "tool/result"]
    mcp_seqs = {
        e["seq"] for e in results if starts.get(e["data"]["call_id"], "").startswith("mcp__")
    }
    assert len(mcp_seqs) >= 7
    summarized = {
        seq for e in events if e["type"] == "compact/summary" for seq in e["data"]["shadowed_seqs"]
    }
    pruned = {
        seq
        for e in events
        if e["type"] == "tool/result" and e["surface_op"]["op"] == "replace"
        for seq in e["surface_op"].get("source_event_seqs", [])
    }
    assert mcp_seqs & summarized, "no MCP result was summarized"
    assert mcp_seqs & pruned or len(mcp_seqs & summarized) >= 2
