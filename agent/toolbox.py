"""The tools a step may call: the agent's own (bash...) and those of tool sources whose set
changes during the session (MCP servers that come up, or fail, after it started)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from tools.base import Tool


class ToolSource(Protocol):
    """Tools that come and go (:class:`tools.mcp.hub.McpHub`)."""

    def offered(self, window: int | None) -> list[dict[str, Any]]:
        """The schemas the next request carries (``window``: the context window in use)."""
        ...

    def find(self, name: str) -> Tool | None:
        """The tool a call names, when it is one of this source's; None otherwise."""
        ...

    def names(self) -> list[str]:
        """The names of the tools offered now."""
        ...


class Toolbox(Mapping[str, Tool]):
    """``tools`` then each source, looked up by name (the first that has it wins)."""

    def __init__(self, tools: Mapping[str, Tool], sources: Sequence[ToolSource]) -> None:
        self._tools = tools
        self._sources = sources

    def __getitem__(self, name: str) -> Tool:
        if name in self._tools:
            return self._tools[name]
        for source in self._sources:
            if (tool := source.find(name)) is not None:
                return tool
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        yield from self._tools
        for source in self._sources:
            yield from source.names()

    def __len__(self) -> int:
        return sum(1 for _ in self)
