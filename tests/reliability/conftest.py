"""Shared helpers for the reliability tests: the real CLI, real processes, real files.

The e2e fixtures (``cli_env``, ``run_cli``) are re-exported so every test here runs
``reefline`` in an isolated home with its own config file (``workdir`` and ``openai_server``
come from tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from agent.log.session import Session
from agent.meter import TokenMeter
from agent.tokens import Estimator
from agent.turns import unanswered_tool_calls
from compact.basic import BasicCompactService
from compact.contract.registry import build_registry
from tests.e2e.conftest import (  # noqa: F401  (fixtures re-exported)
    REEFLINE,
    Run,
    cli_env,
    log_events,
    run_cli,
    session_files,
    tiktoken_cache,
)
from tests.held import Held, hold, still_alive
from tui.demo import ScriptedModel

__all__ = [
    "REEFLINE",
    "Run",
    "descendants",
    "hold",
    "kill_groups",
    "log_events",
    "only_session",
    "reopen_and_check",
    "session_files",
    "still_alive",
]


def only_session(env: dict[str, str]) -> Path:
    """The one session log under the isolated home."""
    [log] = session_files(env)
    return log


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def kill_groups(held: list[Held]) -> None:
    """SIGKILL what a SIGKILLed agent left behind: each of ``held`` and the group it leads
    (see :meth:`Held.kill_group`: never a group or a process that is not the test's)."""
    for process in held:
        process.kill_group()


def open_brackets(events: list[dict[str, Any]]) -> list[str]:
    """Compaction ids with a ``compact/start`` and no ``compact/end``."""
    started = [e["data"]["compaction_id"] for e in events if e["type"] == "compact/start"]
    ended = {e["data"]["compaction_id"] for e in events if e["type"] == "compact/end"}
    return [c for c in started if c not in ended]


def reopen_and_check(home: Path, session_id: str, *, window: int = 4000) -> Session:
    """Open a log a dead process left behind, the way the next run would, and check every
    crash-consistency promise. Returns the (still open) session; the caller closes it."""
    path = home / "sessions" / f"{session_id}.jsonl"
    before = path.read_bytes()
    cut = before.rfind(b"\n") + 1
    complete, torn = before[:cut], before[cut:]
    session = Session.open(home, session_id, registry=build_registry())
    after = path.read_bytes()
    # Nothing before the last complete line is lost or changed.
    assert after.startswith(complete), "a complete line was lost or changed on reopen"
    lines = complete.count(b"\n")
    appended = [json.loads(x) for x in after[cut:].splitlines()]
    assert len(session.events) == lines + len(appended)
    # The torn tail (a crash mid-write) is kept byte for byte in its side file.
    assert session.report.torn_bytes == len(torn)
    if torn:
        assert session.report.torn_path is not None
        assert session.report.torn_path.read_bytes() == torn
        assert (session.report.torn_path.stat().st_mode & 0o777) == 0o600
    else:
        assert session.report.torn_path is None
    # Repair closed any open turn, and the newest event marks the new process.
    assert appended[-1]["type"] == "session/resume"
    assert all(e["type"] in ("tool/result", "step/end", "turn/end") for e in appended[:-1])
    if appended[:-1]:
        assert appended[-2]["type"] == "turn/end"
        assert appended[-2]["data"]["reason"] == "interrupted"
    # Every tool call on the surface has its result.
    assert unanswered_tool_calls(session.derive_messages()) == []
    # No live compaction lock survives the crash.
    estimator = Estimator("m")
    meter = TokenMeter(session, estimator, window)
    service = BasicCompactService(session, meter, ScriptedModel(estimator))
    try:
        assert service.locked is False
    finally:
        service.close()
        meter.close()
    return session


def run_json(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REEFLINE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
