"""Fixtures for ``make conformance``: provisioned servers, and the real ``reefline -p`` run
through a recording proxy whose exchanges become ``tests/fixtures/wire/`` recordings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conformance.provision import Provisioned, provision
from tests.conformance.servers import Running
from tests.wire import FIXTURES, Recording, RecordingProxy

REEFLINE = str(Path(sys.executable).with_name("reefline"))


@pytest.fixture(scope="session")
def provisioned() -> Provisioned:
    """Build (first run) or find (later runs) the servers and the model."""
    return provision(os.environ.get("REEFLINE_CONFORMANCE_SERVERS", "all"))


@pytest.fixture(scope="session")
def server_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-logs")


@dataclass
class Turn:
    proc: subprocess.CompletedProcess[str]
    events: list[dict]
    recording: Recording

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["type"] == kind]


Drive = Callable[..., Turn]


@pytest.fixture
def drive(tmp_path: Path) -> Drive:
    """Run ``reefline -p PROMPT`` against ``server`` through a recording proxy; save the
    recording as ``tests/fixtures/wire/<server>/<scenario>.json`` (set
    ``REEFLINE_RECORD_WIRE=0`` to leave the committed recordings alone)."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("alpha\nbeta\n")

    def run(
        server: Running,
        scenario: str,
        prompt: str,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 600,
    ) -> Turn:
        with RecordingProxy(server.host, server.port) as proxy:
            environment = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("OPENAI_", "DEEPSEEK_", "REEFLINE_"))
            }
            (tmp_path / "config.toml").write_text("")  # a config that sets nothing
            environment.update(
                REEFLINE_HOME=str(home),
                REEFLINE_CONFIG=str(tmp_path / "config.toml"),
                **(env or {}),
            )
            cmd = [REEFLINE, "-p", prompt, "--base-url", proxy.base_url, "--model", "smollm2"]
            proc = subprocess.run(
                [*cmd, *args],
                cwd=work,
                env=environment,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            exchanges = proxy.take()
        logs = sorted((home / "sessions").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
        events = [json.loads(line) for line in logs[-1].read_text().splitlines()] if logs else []
        recording = Recording(server.name, "SmolLM2-135M-Instruct Q4_1", scenario, exchanges)
        recording.scrub(str(tmp_path), "/home/user")
        if os.environ.get("REEFLINE_RECORD_WIRE", "1") != "0":
            recording.save(FIXTURES / server.name / f"{scenario}.json")
        return Turn(proc, events, recording)

    return run
