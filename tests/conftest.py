"""Fixtures shared by every test package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (see tests/openai_server.py)."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A tiny project for agents to explore (deterministic, fast)."""
    d = tmp_path / "project"
    d.mkdir()
    (d / "README.md").write_text("# Sample project\n\nIt parses headers.\n")
    (d / "parser.py").write_text("def parse_header(line):\n    return line.split(':', 1)\n")
    return d
