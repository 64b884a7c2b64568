"""A small MCP server made with the SDK's own helper, faulty on purpose (run as
``python -m tests.mcp.fault_server KIND``):

- ``crash``: its tool ``crash`` ends the process mid-call;
- ``hang``: its tool ``hang`` never answers (for ``tool_timeout_s``);
- ``huge``: its tool ``huge`` answers 200,000 characters (capped and spilled);
- ``many``: lists 200 tools ``tool_000``… with sizeable schemas (deferred schemas);
- ``slow``: starts only after ``SLOW_START_S`` seconds (default 10; the bench);
- ``escape``: its tool ``escape`` answers text with terminal escapes in it;
- ``image``: its tool ``image`` answers an image and a text.

Every server also has ``echo(text)`` and ``environ()`` (its variables' names). ``http PORT_FILE`` serves ``echo`` over streamable
HTTP on 127.0.0.1 (its port written to PORT_FILE), answering 401 to a request whose
``Authorization`` is not ``Bearer $EXPECTED_TOKEN``.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ImageContent, TextContent


def build(kind: str) -> MCPServer:
    server = MCPServer(f"fault-{kind}")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def environ() -> str:
        """The names of the server's environment variables."""
        return " ".join(sorted(os.environ))

    if kind == "crash":

        @server.tool()
        def crash() -> str:
            """End the server's process."""
            os._exit(3)

    elif kind == "hang":

        @server.tool()
        async def hang() -> str:
            """Never answer (first touching the file ``HANG_MARK`` names, when set)."""
            if mark := os.environ.get("HANG_MARK"):
                Path(mark).touch()
            await asyncio.Event().wait()
            return "never"

    elif kind == "huge":

        @server.tool()
        def huge() -> str:
            """Answer 200,000 characters."""
            return "\n".join(f"line {n:06d} " + "x" * 40 for n in range(4000))

    elif kind == "many":
        for n in range(200):
            server.add_tool(_numbered(n), name=f"tool_{n:03d}", description=_describe(n))
    elif kind == "escape":
        server.add_tool(lambda: "x", name="get time\x1b[31m", description="A bad name.")

        @server.tool(description="Answer text with terminal \x1b[2Jescapes in it.")
        def escape() -> str:
            return "plain \x1b]0;pwned\x07title \x1b[31mred\x1b[0m end"

    elif kind == "image":

        @server.tool(structured_output=False)
        def image() -> list[ImageContent | TextContent]:
            """Answer an image and a text."""
            data = base64.b64encode(b"\x89PNG" + b"0" * 1000).decode()
            return [
                ImageContent(type="image", data=data, mime_type="image/png"),
                TextContent(type="text", text="a caption"),
            ]

    return server


def _numbered(n: int) -> Any:
    def tool(path: str, pattern: str = "", limit: int = 10, recursive: bool = False) -> str:
        return f"tool {n}: {path} {pattern} {limit} {recursive}"

    return tool


def _describe(n: int) -> str:
    return (
        f"Tool number {n}: searches the files under a path for a pattern and reports up to "
        "`limit` matching lines, with their line numbers, optionally recursing into folders."
    )


def serve_http(port_file: str) -> None:
    import socket

    import uvicorn

    app = build("http").streamable_http_app()
    expected = f"Bearer {os.environ['EXPECTED_TOKEN']}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"wrong or missing token"})
            return
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    Path(port_file).write_text(str(sock.getsockname()[1]))
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    kind = sys.argv[1]
    if kind == "http":
        serve_http(sys.argv[2])
        return
    if kind == "slow":
        time.sleep(float(os.environ.get("SLOW_START_S", "10")))
    build(kind).run("stdio")


if __name__ == "__main__":
    main()
