"""MCP servers for the tests: the real ones from PyPI (dev extras), and small ones made with
the SDK's own server helper (``MCPServer``, once FastMCP) for the faults, run as
``python -m tests.mcp.fault_server KIND``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
TIME = str(BIN / "mcp-server-time")
GIT = str(BIN / "mcp-server-git")
ROOT = Path(__file__).resolve().parent.parent.parent


def toml_table(name: str, command: str, args: list[str], **more: object) -> str:
    """A ``[mcp_servers.NAME]`` table (values written as JSON, which TOML reads for these)."""
    lines = [f"[mcp_servers.{name}]", f"command = {json.dumps(command)}"]
    lines.append(f"args = {json.dumps(args)}")
    lines += [f"{key} = {_toml(value)}" for key, value in more.items()]
    return "\n".join(lines) + "\n"


def fault(name: str, kind: str, **more: object) -> str:
    """A table for ``tests/mcp/fault_server.py KIND``, started by this Python from the
    repository's root (so ``tests`` imports)."""
    return toml_table(
        name, sys.executable, ["-m", "tests.mcp.fault_server", kind], cwd=str(ROOT), **more
    )


def _toml(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)
