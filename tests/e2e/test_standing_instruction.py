"""A standing instruction given in chat survives ten compactions and a resume: the real
``--plain`` loop against the loopback server, each compaction forced with ``/compact``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE, log_events, session_files
from tests.openai_server import SUMMARY_MARK, OpenAIServer

RULE = "from now on never touch vendor/"
# A manual compaction needs some 500 tokens of new history to be worth a summary.
NOTES = " ".join(f"note{i} says the parser handles case {i}." for i in range(60))


def test_a_standing_instruction_survives_ten_compactions_and_a_resume(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    openai_server.summarize = True  # a summarizer that keeps what it is shown
    # Each /compact takes all but the newest message: ten compactions from ten short turns.
    env = {**cli_env, "REEFLINE_COMPACTION__RETAIN_TOKENS": "0"}
    rounds = "".join(f"round {n}: tidy the parser. {NOTES}\n/compact\n" for n in range(10))
    args = ["--base-url", openai_server.base_url, "--model", "m", "--context-window", "16000"]
    plain = subprocess.run(
        [REEFLINE, "--plain", *args], input=f"{RULE}\n{rounds}/quit\n", cwd=workdir,
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    [log] = session_files(cli_env)
    ends = [e for e in log_events(log) if e["type"] == "compact/end"]
    assert len(ends) == 10 and all(e["data"].get("outcome", "done") == "done" for e in ends), ends
    # Every summary request asked to keep the user's standing instructions.
    asks = [r["messages"][-1]["content"] for r in openai_server.requests]
    asks = [a for a in asks if SUMMARY_MARK in str(a)]
    assert len(asks) >= 10 and all("every standing instruction the user gave" in a for a in asks)
    resumed = subprocess.run(
        [REEFLINE, "-p", "what may I change?", "--continue", *args], cwd=workdir, env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    last = openai_server.requests[-1]["messages"]
    assert last[-1]["content"] == "what may I change?"
    # The message itself was compacted away long ago: the rule reaches the model through
    # the checkpoint that ten summaries carried forward.
    assert not any(m["content"] == RULE for m in last)
    [checkpoint] = [m for m in last if "<compacted-summary>" in str(m["content"])]
    assert RULE in checkpoint["content"]
