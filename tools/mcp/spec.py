"""What the config says about one MCP server, as plain values (validated in
:mod:`agent.mcp_config`, which builds these)."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

SEPARATOR = "__"
PREFIX = "mcp" + SEPARATOR


@dataclass(frozen=True)
class ServerSpec:
    """One ``[mcp_servers.NAME]`` table: a command to run (stdio) or a URL (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    """Variables added to the few the SDK passes on (``PATH``, ``HOME``…): the session's
    other variables, API keys among them, never reach the server."""
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    bearer_token_env: str | None = None
    """The variable holding a bearer token, read when the server is started; the token is
    sent in the ``Authorization`` header and nowhere else."""
    enabled: bool = True
    startup_timeout_s: float = 30.0
    tool_timeout_s: float = 120.0

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    @property
    def where(self) -> str:
        """Where it runs, as ``/mcp`` says it (no header, no token)."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        parts = urllib.parse.urlsplit(self.url or "")
        host = parts.netloc.rpartition("@")[2]  # a password in the URL is not shown
        return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def tool_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by: ``mcp__<server>__<tool>``."""
    return f"{PREFIX}{server}{SEPARATOR}{tool}"


def server_of(name: str) -> str | None:
    """The server part of a ``mcp__<server>__<tool>`` name (None: not such a name)."""
    if not name.startswith(PREFIX):
        return None
    server, sep, _ = name[len(PREFIX) :].partition(SEPARATOR)
    return server if sep and server else None
