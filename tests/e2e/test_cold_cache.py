"""A cold prompt cache, end to end: the ``--plain`` REPL against the loopback server, a
pause longer than the provider's cache TTL (``REEFLINE_CACHE_TTL_S``) between two turns.

The scripted agent reads a file at every step. Turn 1 ends just as the summary of the coming
compaction is written ahead (:mod:`compact.basic.ahead`), a step before its mark. After a
pause past the TTL the provider would read the whole context in full: the compaction due
within a step is committed at turn 2's first checkpoint, so that step reads what it leaves
instead. With the cache still warm, it waits for its mark."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from tests.e2e.conftest import REEFLINE, log_events, session_files
from tests.e2e.test_compaction_ahead import flags, is_summary, wait_for
from tests.openai_server import OpenAIServer

TTL_S = 0.2
LINES = 120
"""Lines of the file each step reads."""
CATS = 4
"""Tool steps of turn 1: the summary starts ahead at its final step (the fifth request),
about 150 tokens below the mark; turn 2's first step adds less."""


def two_turns(
    env: dict[str, str], workdir: Path, server: OpenAIServer, ttl_s: float, pause_s: float
) -> list[dict[str, Any]]:
    """Turn 1, a pause of at least ``pause_s`` once it ended and its summary written ahead
    was answered, then turn 2; the session's events."""
    records = (f"record {i}: value {i * 7}" for i in range(LINES))
    (workdir / "data.txt").write_text("\n".join(records))
    server.summarize = True
    server.agent_commands = ["cat data.txt"] * CATS
    stderr = workdir.parent / "stderr.txt"
    proc = subprocess.Popen(
        [REEFLINE, "--plain", *flags(server)],
        cwd=workdir,
        env={**env, "REEFLINE_CACHE_TTL_S": str(ttl_s)},
        stdin=subprocess.PIPE,
        stdout=(workdir.parent / "stdout.txt").open("w"),  # a pipe could fill: a file
        stderr=stderr.open("w"),
        text=True,
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write("read data.txt again and again\n")
        proc.stdin.flush()
        wait_for(lambda: bool(session_files(env)), "the session log", proc)
        [log] = session_files(env)

        def turn_one_over() -> bool:
            return any(e["type"] == "turn/end" for e in log_events(log))

        wait_for(turn_one_over, "the end of turn 1", proc)
        wait_for(server.summarized.is_set, "the summary written ahead", proc)
        time.sleep(pause_s)  # at least this long: all the cold run needs
        proc.communicate("read data.txt once more\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr.read_text()
    return log_events(log)


def turns(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The events of each turn, from its ``turn/start`` to the next one."""
    out: list[list[dict[str, Any]]] = []
    for event in events:
        if event["type"] == "turn/start":
            out.append([])
        if out:
            out[-1].append(event)
    return out


def compacted_before_first_reply(turn: list[dict[str, Any]]) -> bool:
    for event in turn:
        if event["type"] == "assistant/message":
            return False
        if event["type"] == "compact/start":
            return True
    return False


def check_turn_one(events: list[dict[str, Any]], server: OpenAIServer) -> None:
    """The ground both runs share: turn 1 compacted nothing, its last step had the summary
    written ahead."""
    first = turns(events)[0]
    assert not any(e["type"] == "compact/start" for e in first)
    kinds = ["S" if is_summary(body) else "s" for body in server.requests]
    assert kinds[: CATS + 2] == ["s"] * (CATS + 1) + ["S"], "".join(kinds)


def test_after_a_pause_past_the_ttl_the_due_compaction_lands_at_the_first_step(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    events = two_turns(cli_env, workdir, openai_server, TTL_S, pause_s=2 * TTL_S)
    check_turn_one(events, openai_server)
    second = turns(events)[1]
    assert compacted_before_first_reply(second), [e["type"] for e in second]
    start = next(e for e in second if e["type"] == "compact/start")
    assert start["data"].get("ahead") is True  # the summary written ahead, no call made now
    assert start["data"]["context_tokens"] < start["data"]["mark"]
    said = (workdir.parent / "stdout.txt").read_text()
    assert "before the auto mark" in said and "the provider's cache had expired" in said


def test_without_the_pause_the_compaction_waits_for_its_mark(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """The same session, the cache kept an hour: turn 2's first step reads the cached
    context, and the compaction comes at its mark."""
    events = two_turns(cli_env, workdir, openai_server, 3600, pause_s=0)
    check_turn_one(events, openai_server)
    second = turns(events)[1]
    assert not compacted_before_first_reply(second), [e["type"] for e in second]
    assert any(e["type"] == "compact/start" for e in second)
