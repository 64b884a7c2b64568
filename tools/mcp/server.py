"""One MCP server: started in a background task of its own, which holds the connection open
until the session ends (the SDK's contexts must be left in the task that entered them).

Its state is ``disabled`` (``enabled = false``), ``starting``, ``ready`` or ``failed`` (it did
not start in time, could not be started, or died); :attr:`McpServer.error` says why, in the
words of the SDK or the server (untrusted text: front ends show it through the terminal
sanitizer). What the server writes on stderr goes to a file, never to the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from tools.mcp.spec import ServerSpec

State = Literal["disabled", "starting", "ready", "failed"]
STDERR_TAIL = 300
"""How much of a failed server's stderr its error quotes (its last characters)."""


@dataclass(frozen=True)
class ListedTool:
    """A tool as the server listed it."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)


class ServerGone(Exception):
    """The server is not running (it failed to start, died, or is disabled)."""


class McpServer:
    """One server of the config. :meth:`start` on the running loop; :meth:`stop` to end it."""

    def __init__(
        self,
        spec: ServerSpec,
        on_change: Callable[[McpServer], None] | None = None,
    ) -> None:
        self.spec = spec
        self.state: State = "starting" if spec.enabled else "disabled"
        self.error: str | None = None
        self.tools: list[ListedTool] = []
        self._stderr_dir: Path | None = None
        self._on_change = on_change
        self._client: Any = None
        self._settled = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: TextIO | None = None
        self._http_status: int | None = None
        """The last HTTP error status the server answered (streamable HTTP)."""
        if not spec.enabled:
            self._settled.set()

    @property
    def name(self) -> str:
        return self.spec.name

    def start(self, stderr_dir: Path | None = None) -> None:
        """Start connecting in the background (idempotent; nothing for a disabled server);
        a stdio server's stderr goes to a file in ``stderr_dir`` (None: nowhere)."""
        if self._task is None and self.spec.enabled:
            self._stderr_dir = stderr_dir
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def settled(self) -> State:
        """Wait until the server is ready or has failed (started: see :meth:`start`)."""
        await self._settled.wait()
        return self.state

    async def _run(self) -> None:
        try:
            # The SDK loads only when a server is configured, and off the loop: its second
            # of imports must not hold up the first request.
            await asyncio.to_thread(_load_sdk)
            from mcp import Client

            async with contextlib.AsyncExitStack() as stack:
                async with asyncio.timeout(self.spec.startup_timeout_s):
                    client = await stack.enter_async_context(
                        Client(self._transport(), client_info=_client_info())
                    )
                    listed = await _list_tools(client)
                self._client, self.tools, self.state = client, listed, "ready"
                self._changed()
                await self._stop.wait()
                self._client = None
        except TimeoutError:
            self._fail(f"did not start within {self.spec.startup_timeout_s:g} s")
        except asyncio.CancelledError:
            if not self._stop.is_set():
                self._fail("its connection was cancelled")
            raise
        except (Exception, BaseExceptionGroup) as exc:  # the SDK's task group raises groups
            self._fail(describe(exc))
        finally:
            self._client = None
            if self._stderr is not None:
                self._stderr.close()

    def _transport(self) -> Any:
        spec = self.spec
        if spec.command is not None:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(
                command=spec.command, args=list(spec.args), env=dict(spec.env), cwd=spec.cwd
            )
            return stdio_client(params, errlog=self._stderr_file())
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = dict(spec.headers)
        if spec.bearer_token_env is not None:
            token = os.environ.get(spec.bearer_token_env)
            if not token:
                raise ServerGone(
                    f"the variable {spec.bearer_token_env} (bearer_token_env) is not set"
                )
            headers["Authorization"] = f"Bearer {token}"
        assert spec.url is not None
        client = create_mcp_http_client(headers)

        async def note_refusal(response: Any) -> None:
            # The SDK says only "Server returned an error response": the status says why (a
            # message's, not the optional event stream's GET, which a server may refuse).
            if response.status_code >= 400 and response.request.method == "POST":
                self._http_status = response.status_code

        client.event_hooks["response"].append(note_refusal)
        return streamable_http_client(spec.url, http_client=client)

    def _stderr_file(self) -> TextIO:
        """Where the server's stderr goes: a file of the session (its tail is quoted when
        the server fails), else nowhere; never the terminal, which a front end draws on."""
        if self._stderr_dir is None:
            self._stderr = open(os.devnull, "w")  # noqa: SIM115 - closed when the server ends
        else:
            path = self._stderr_dir / f"{self.spec.name}.stderr"
            self._stderr = open(path, "w", encoding="utf-8")  # noqa: SIM115
        return self._stderr

    def _fail(self, why: str) -> None:
        if (status := self._http_status) is not None:
            check = " (check bearer_token_env and headers)" if status in (401, 403) else ""
            why = f"{why}: HTTP {status}{check}"
        if tail := self._stderr_tail():
            why = f"{why}; its stderr ended with: {tail}"
        self.state, self.error, self.tools = "failed", why, []
        self._changed()

    def _stderr_tail(self) -> str:
        if self._stderr_dir is None:
            return ""
        with contextlib.suppress(OSError):
            text = (self._stderr_dir / f"{self.spec.name}.stderr").read_text(errors="replace")
            return " ".join(text[-STDERR_TAIL:].split())
        return ""

    def _changed(self) -> None:
        self._settled.set()
        if self._on_change is not None:
            self._on_change(self)

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call ``tool``; the SDK's ``CallToolResult``. Raises :class:`ServerGone` when the
        server is not running or dies meanwhile (it is then marked failed, once), and
        ``TimeoutError`` after ``tool_timeout_s``."""
        if await self.settled() != "ready" or self._client is None:
            raise ServerGone(self.error or f"the server is {self.state}")
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        try:
            async with asyncio.timeout(self.spec.tool_timeout_s):
                return await self._client.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise
            self._fail("it closed its connection (the server died)")
            self._stop.set()
            raise ServerGone(self.error) from None

    async def stop(self) -> None:
        """End the connection (the SDK ends a stdio server's process)."""
        self._stop.set()
        if self._task is not None and not self._task.done():
            if self.state == "starting":
                self._task.cancel()  # nothing to close politely yet: the SDK ends the process
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except (TimeoutError, Exception):
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await self._task


async def _list_tools(client: Any) -> list[ListedTool]:
    listed: list[ListedTool] = []
    cursor: str | None = None
    for _ in range(100):  # pages: a server that never stops paging is not followed forever
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            schema = dict(tool.input_schema or {"type": "object", "properties": {}})
            listed.append(ListedTool(tool.name, tool.description or "", schema))
        cursor = page.next_cursor
        if cursor is None:
            break
    return listed


def _load_sdk() -> None:
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


def _client_info() -> Any:
    from mcp import Implementation

    return Implementation(name="reefline", version="0.1.0")


def describe(exc: BaseException) -> str:
    """The innermost reason of ``exc`` (an ExceptionGroup's first leaf), in one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    if isinstance(exc, FileNotFoundError | PermissionError):
        text = f"cannot be started: {text}"
    return " ".join(text.split())
