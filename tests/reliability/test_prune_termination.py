"""SIGTERM in the middle of a long prune, through the real CLI: ``reefline -p --continue`` on
a session of thousands of tool results, whose request the server refuses as too long,
prunes them one by one to recover (under pressure nothing is pruned on its own any more:
the overflow recovery is where a long prune happens); a SIGTERM sent once the first
``compact/prune`` is in the log must stop it between two results, close the turn and exit
143, leaving a log that loads with every prune paired."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from agent.log.events import SurfaceReplace, ToolResult
from agent.log.session import Session
from agent.turns import unanswered_tool_calls
from compact.contract.events import CompactPrune
from compact.contract.registry import build_registry
from compact.reports.timeline import timeline
from tests.long_session import build_long_session
from tests.openai_server import OpenAIServer
from tests.reliability.conftest import REEFLINE

RESULTS = 5000
"""A whole pass takes seconds even when linear: far longer than the test needs to react to
its first line. Unfixed (the handler could not run until the pass ended) every result was
pruned before the process noticed the signal."""


def new_lines(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete lines appended to ``path`` since ``offset``, and the offset after them."""
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    complete = data[: data.rfind(b"\n") + 1]
    return [json.loads(line) for line in complete.splitlines()], offset + len(complete)


def test_sigterm_during_a_long_prune_stops_it_between_results(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    home = Path(cli_env["REEFLINE_HOME"])
    built = build_long_session(home, RESULTS, str(workdir))
    log = built.path
    offset = log.stat().st_size
    # The window is not known ahead (no --context-window, a model no table names), so no
    # compaction comes first: the refusal starts the recovery, which prunes.
    openai_server.push(
        {
            "status": 400,
            "message": "This model's maximum context length is 8000 tokens.",
            "code": "context_length_exceeded",
        }
    )
    err = tmp_path / "stderr.txt"
    with open(err, "w") as stderr:
        proc = subprocess.Popen(
            [REEFLINE, "-p", "go on", "--continue", "--base-url", openai_server.base_url,
             "--model", "m"],
            cwd=workdir, env=cli_env, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        seen: list[str] = []
        while "compact/prune" not in seen:
            assert proc.poll() is None, f"reefline exited before pruning: {err.read_text()}"
            assert time.monotonic() < deadline, f"no prune within 120 s; appended: {seen[-5:]}"
            lines, offset = new_lines(log, offset)
            seen += [line["type"] for line in lines]
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(timeout=60)  # a generous bound: it takes well under a second
        except subprocess.TimeoutExpired:
            raise AssertionError("reefline did not exit within 60 s of SIGTERM") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = err.read_text()
    assert status == 143, said
    assert "the turn was closed and the session saved" in said

    session = Session.open(home, built.id, registry=build_registry())
    try:
        events = session.events
        prunes = [e for e in events if isinstance(e, CompactPrune)]
        # The pass stopped at the signal, long before its end (every old result).
        assert 0 < len(prunes) < RESULTS // 2, len(prunes)
        for prune in prunes:
            replacement = events[prune.seq + 1]  # each prune is followed by its replacement
            assert isinstance(replacement, ToolResult)
            assert isinstance(replacement.surface_op, SurfaceReplace)
            assert replacement.surface_op.start == prune.data.shadowed_seqs[0]
            assert replacement.source_event_seqs == [prune.seq, prune.data.shadowed_seqs[0]]
        assert [r.status for r in timeline(events) if r.kind == "prune"] == ["done"]
        assert "compact/start" not in [e.type for e in events]  # no summary was begun
        ends = [e for e in events if e.type == "turn/end"]
        assert ends[-1].data.reason == "cancelled"  # type: ignore[attr-defined]
        assert unanswered_tool_calls(session.derive_messages()) == []
        assert events[-1].type == "session/resume"
    finally:
        session.close()
