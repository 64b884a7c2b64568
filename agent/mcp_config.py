"""The ``[mcp_servers.NAME]`` tables of the config, in the conventions of Codex's config:
``command``, ``args``, ``env``, ``cwd`` (a server on stdio) or ``url`` with
``bearer_token_env`` / ``headers`` (streamable HTTP); ``enabled``, ``startup_timeout_s``,
``tool_timeout_s``. A wrong table is reported with the server's name and the field, as every
other setting is (:func:`agent.settings.describe_errors`)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tools.mcp.spec import SEPARATOR, ServerSpec

NAME = re.compile(r"[A-Za-z0-9_-]+")


class McpServerConfig(BaseModel):
    """One ``[mcp_servers.NAME]`` table. Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(default=None, min_length=1)
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = Field(default=None, pattern=r"^https?://")
    bearer_token_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The name of the variable holding the token, never the token itself."""
    headers: dict[str, str] = {}
    enabled: bool = True
    startup_timeout_s: float = Field(default=30.0, gt=0)
    tool_timeout_s: float = Field(default=120.0, gt=0)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give either `command` (a server started on stdio) or `url` (streamable "
                "HTTP), not both and not neither"
            )
        stdio_only = [k for k in ("args", "env", "cwd") if k in self.model_fields_set]
        if self.url is not None and stdio_only:
            raise ValueError(f"`{stdio_only[0]}` is for a server with `command`, not `url`")
        http_only = [k for k in ("headers", "bearer_token_env") if k in self.model_fields_set]
        if self.command is not None and http_only:
            raise ValueError(f"`{http_only[0]}` is for a server with `url`, not `command`")
        return self


def check_name(name: str) -> str:
    """``name`` when it can be part of a tool name (``mcp__<server>__<tool>``).

    Raises:
        ValueError: saying what the name may hold.
    """
    if not NAME.fullmatch(name) or SEPARATOR in name:
        raise ValueError(
            f"the server name {name!r} must be letters, digits, `-` and `_` (no `__`): it "
            "becomes part of its tools' names"
        )
    return name


def server_specs(servers: Mapping[str, McpServerConfig]) -> list[ServerSpec]:
    """The servers of the config as the client takes them, in the config's order."""
    return [
        ServerSpec(
            name=name,
            command=c.command,
            args=tuple(c.args),
            env=dict(c.env),
            cwd=c.cwd,
            url=c.url,
            headers=dict(c.headers),
            bearer_token_env=c.bearer_token_env,
            enabled=c.enabled,
            startup_timeout_s=c.startup_timeout_s,
            tool_timeout_s=c.tool_timeout_s,
        )
        for name, c in servers.items()
    ]
