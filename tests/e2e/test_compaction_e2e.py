"""Compaction end to end: the real CLI against the loopback server, bash-heavy turns."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

from agent.log.session import Session
from agent.meter import TokenMeter
from agent.tokens import Estimator
from agent.turns import unanswered_tool_calls
from compact.basic import BasicCompactService
from compact.contract.registry import build_registry
from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import OpenAIServer

WINDOW = 6000
FACT = "the release codename is BLUE-HERON-42"
# Pasted notes: user text cannot be pruned, so only summaries can make room for it.
NOTES = " ".join(f"note{i} says the parser handles case {i}." for i in range(90))


def prompt_args(server: OpenAIServer, *extra: str) -> list[str]:
    return [
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--approve",
        "auto",
        "--context-window",
        str(WINDOW),
        *extra,
    ]


def test_long_session_compacts_and_keeps_the_first_fact(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "data.txt").write_text("\n".join(f"record {i}: value {i * 7}" for i in range(120)))
    openai_server.summarize = True
    openai_server.agent_commands = ["cat data.txt", "seq 1 150", "ls -la"]
    first = run_cli(
        "-p", f"remember this: {FACT}. Now look at data.txt", *prompt_args(openai_server)
    )
    assert first.returncode == 0, first.stderr
    stderr = first.stderr
    for n in range(6):
        out = run_cli(
            "-p", f"look again, round {n}: {NOTES}", "--continue", *prompt_args(openai_server)
        )
        assert out.returncode == 0, out.stderr
        stderr += out.stderr
    # Headless mode says when a compaction runs, each summarizer call, and how it ended.
    assert "reefline: compacting the conversation (auto: the context reached " in stderr
    assert re.search(
        r"reefline: compaction #\d+ auto · (summary written|chunk 1/\d summarized) · \d", stderr
    ), stderr
    assert re.search(r"reefline: compaction #\d+ auto · done · \d+ items · ", stderr), stderr

    [log] = session_files(cli_env)
    events = log_events(log)
    summaries = [e for e in events if e["type"] == "compact/summary"]
    assert len(summaries) >= 2, "compaction fired fewer than twice: fixture too small"
    # No request the client sent exceeded the window (counted independently, with framing).
    estimator = Estimator()
    for body in openai_server.requests:
        prompt = estimator.messages_tokens(body["messages"]) + estimator.tools_tokens(
            body.get("tools") or []
        )
        assert prompt <= WINDOW, prompt
    # One checkpoint, at the head of the surface, and it still carries the first fact.
    session = Session.open(
        Path(cli_env["REEFLINE_HOME"]), log.stem, registry=build_registry(), readonly=True
    )
    checkpoints = [
        s
        for s in session.surface
        if session.events[s].type == "user/message" and session.events[s].data.source == "compact"
    ]
    assert checkpoints == [session.surface[0]]
    assert FACT in session.events[checkpoints[0]].data.content
    assert unanswered_tool_calls(session.derive_messages()) == []


def test_crash_during_a_summary_is_harmless(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, run_cli: Run
) -> None:
    openai_server.summarize = True
    openai_server.agent_commands = ["seq 1 200", "seq 1 200"]
    for n in range(5):
        out = run_cli(
            "-p",
            f"warm up {n}: {NOTES}",
            "--continue",
            *prompt_args(openai_server, "--context-window", "100000"),
        )
        assert out.returncode == 0, out.stderr
    [log] = session_files(cli_env)
    before = [e["type"] for e in log_events(log)]
    assert "compact/start" not in before
    # Now the same history in a small window: the first pre-step compacts, and the summary stalls.
    openai_server.summary_stall_s = 30
    proc = subprocess.Popen(
        [REEFLINE, "-p", "one more", "--continue", *prompt_args(openai_server)],
        cwd=workdir,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if any(e["type"] == "compact/start" for e in log_events(log)[len(before) :]):
            break
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)

    home = Path(cli_env["REEFLINE_HOME"])
    records = json.loads(run_cli("timeline", "--json").stdout)
    assert records[-1]["status"] == "interrupted"

    session = Session.open(home, log.stem, registry=build_registry())
    # The checkpoint never landed: the full history still derives (prunes may have).
    derived = session.derive_messages()
    assert not any("<compacted-summary>" in (m.get("content") or "") for m in derived)
    for n in range(5):
        assert any((m.get("content") or "").startswith(f"warm up {n}:") for m in derived)
    assert session.report.repaired  # the open turn was closed, and the user is told so
    assert any(n.endswith("appended as repair events.") for n in session.report.notices())
    assert unanswered_tool_calls(session.derive_messages()) == []
    meter = TokenMeter(session, Estimator(), WINDOW)
    service = BasicCompactService(session, meter, None)  # type: ignore[arg-type]
    assert not service.locked  # the orphan is inert
    service.close()
    meter.close()
    session.close()

    openai_server.summary_stall_s = 0
    out = run_cli("-p", "after the crash", "--continue", *prompt_args(openai_server))
    assert out.returncode == 0, out.stderr
    events = log_events(log)
    # (A summary written ahead after it and discarded when the session ended is not it.)
    ends = [e for e in events if e["type"] == "compact/end" and not e["data"].get("discarded")]
    assert ends and ends[-1]["data"].get("error") is None
    records = json.loads(run_cli("timeline", "--json").stdout)
    statuses = [r["status"] for r in records if r["kind"] == "compaction"]
    assert statuses[:1] == ["interrupted"]
    assert [s for s in statuses if s != "discarded"][-1] == "done"


def test_a_stalled_summary_is_reported_while_it_runs_and_the_fallback_takes_over(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """Headless mode says every quarter of the summary's time budget that the compaction is
    still running (a call can take minutes and prints nothing meanwhile), then how it ended:
    past the budget the model-free checkpoint takes the model's place."""
    (workdir / "data.txt").write_text("\n".join(f"record {i}: value {i * 7}" for i in range(120)))
    openai_server.summarize = True
    openai_server.summary_stall_s = 30.0
    openai_server.agent_commands = ["cat data.txt", "seq 1 150"] * 3
    env = {"REEFLINE_COMPACTION": json.dumps({"summary_timeout_s": 2})}
    out = run_cli("-p", f"{FACT}. {NOTES * 4}", *prompt_args(openai_server), env=env)
    assert out.returncode == 0, out.stderr
    assert "reefline: compacting the conversation (auto: the context reached " in out.stderr, (
        out.stderr
    )
    beats = re.findall(r"reefline: still compacting · (\d+(?:\.\d+)?)(ms|s)\b", out.stderr)
    assert len(beats) >= 2, out.stderr
    assert re.search(r"reefline: compaction #\d+ auto · done · .*fallback", out.stderr), out.stderr


def test_a_pause_with_nothing_to_compact_says_so_not_after_0_attempts(run_cli: Run) -> None:
    """A first message that alone fills the context up to the threshold: nothing older can
    be compacted, and the pause says that (it said "after 0 attempts")."""
    done = run_cli("-p", "word " * 3000, "--demo", "--context-window", "3200", "--approve", "auto")
    assert "Automatic compaction is paused" in done.stderr, done.stderr
    assert "0 attempts" not in done.stderr
    assert "nothing older to compact" in done.stderr


def test_summarizer_retries_are_said_on_stderr(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    """An HTTP 500 on the summarizer's request is retried, and the headless run says so on
    stderr as it happens (it waited through it in silence); so does ``reefline compact``."""
    flags = ["--base-url", openai_server.base_url, "--model", "m", "--context-window", "3000"]
    openai_server.push(*({"text": f"Answer {n}.", "words": 600} for n in range(2)))
    for n in range(2):
        more = ["--continue"] if n else []
        assert run_cli("-p", f"write a lot, part {n}", *flags, *more).returncode == 0
    failure = {"status": 500, "message": "upstream crashed", "retry_after": 0.05}
    openai_server.push(failure, {"text": "## Primary request and intent\n- write"}, {"text": "ok"})
    done = run_cli("-p", "thanks", "--continue", *flags)
    assert done.returncode == 0, done.stderr
    assert "Summarizer request retry 1" in done.stderr, done.stderr
    assert "500" in done.stderr or "upstream crashed" in done.stderr
    openai_server.push(failure, {"text": "## Primary request and intent\n- again"})
    compacted = run_cli("compact", *flags[:4])
    assert "Summarizer request retry 1" in compacted.stderr, compacted.stderr + compacted.stdout
