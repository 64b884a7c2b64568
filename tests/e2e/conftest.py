"""Run the real ``reefline`` console script as a subprocess in an isolated environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REEFLINE = str(Path(sys.executable).with_name("reefline"))

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiktoken")


@pytest.fixture
def cli_env(tmp_path: Path, tiktoken_cache: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "DEEPSEEK_", "REEFLINE_"))
    }
    (tmp_path / "config.toml").write_text("")  # a config that sets nothing
    env.update(
        REEFLINE_HOME=str(tmp_path / "home"),
        REEFLINE_CONFIG=str(tmp_path / "config.toml"),
        TIKTOKEN_CACHE_DIR=str(tiktoken_cache),
    )
    return env


@pytest.fixture
def run_cli(cli_env: dict[str, str], workdir: Path) -> Run:
    def run(
        *args: str, env: dict[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [REEFLINE, *args],
            cwd=workdir,
            env={**cli_env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


def session_files(env: dict[str, str]) -> list[Path]:
    return sorted((Path(env["REEFLINE_HOME"]) / "sessions").glob("*.jsonl"))


def log_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
