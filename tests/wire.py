"""Real HTTP exchanges with model servers: recorded once against the real server, replayed
byte for byte in the default test run.

``RecordingProxy`` sits between reefline and a real server on 127.0.0.1 and keeps every
exchange: the request (method, path, JSON body) and the response exactly as the server sent
it (status, content type, the body bytes after transfer decoding, in the pieces they arrived
in). ``ReplayServer`` answers requests from such a recording: each request takes the next
recorded exchange with the same method and path, and gets its status, content type and body
bytes, written in the recorded pieces. What it was asked is kept in ``requests`` so a test
can compare it with what the real server was asked.

A fixture file (``tests/fixtures/wire/<server>/<scenario>.json``)::

    {"server": "...", "model": "...", "scenario": "...", "exchanges": [Exchange, ...]}
"""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "wire"


@dataclass
class Exchange:
    method: str
    path: str
    request: Any
    """The request body as JSON (None for a GET)."""
    status: int
    content_type: str
    pieces: list[str] = field(default_factory=list)
    """The response body, as the text pieces read from the server (UTF-8)."""

    @property
    def body(self) -> str:
        return "".join(self.pieces)

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Exchange:
        return cls(**raw)


@dataclass
class Recording:
    server: str
    model: str
    scenario: str
    exchanges: list[Exchange]

    @classmethod
    def load(cls, path: Path) -> Recording:
        raw = json.loads(path.read_text())
        raw["exchanges"] = [Exchange.parse(e) for e in raw["exchanges"]]
        return cls(**raw)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = asdict(self)
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")

    def scrub(self, old: str, new: str) -> None:
        """Replace ``old`` (a temporary path of the recording run) everywhere."""
        for e in self.exchanges:
            e.request = json.loads(json.dumps(e.request).replace(json.dumps(old)[1:-1], new))
            e.pieces = [piece.replace(old, new) for piece in e.pieces]

    def chats(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.path.endswith("/chat/completions")]


def fixture(server: str, scenario: str) -> Recording:
    return Recording.load(FIXTURES / server / f"{scenario}.json")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Base:
    """Start/stop of a threaded server on a port of 127.0.0.1 (0: an ephemeral one)."""

    handler: type[BaseHTTPRequestHandler]

    def __init__(self, port: int = 0) -> None:
        self.httpd = _Server(("127.0.0.1", port), self.handler)
        self.httpd.app = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> _Base:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    length = int(handler.headers.get("content-length") or 0)
    return handler.rfile.read(length) if length else b""


def _json_or_none(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _send(handler: BaseHTTPRequestHandler, status: int, content_type: str) -> None:
    handler.send_response(status)
    if content_type:
        handler.send_header("Content-Type", content_type)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()


def _piece(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    if data:
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.flush()


def _end(handler: BaseHTTPRequestHandler) -> None:
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


class _Handler(BaseHTTPRequestHandler):
    """Quiet, keep-alive, GET and POST alike: :meth:`exchange` answers both."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.exchange()

    def do_POST(self) -> None:
        self.exchange()

    def exchange(self) -> None:
        raise NotImplementedError


class _ProxyHandler(_Handler):
    def exchange(self) -> None:
        proxy: RecordingProxy = self.server.app  # type: ignore[attr-defined]
        body = _read_body(self)
        upstream = http.client.HTTPConnection(proxy.host, proxy.port, timeout=proxy.timeout_s)
        headers = {"Content-Type": "application/json"} if body else {}
        upstream.request(self.command, self.path, body=body or None, headers=headers)
        response = upstream.getresponse()
        exchange = Exchange(
            self.command,
            self.path,
            _json_or_none(body),
            response.status,
            response.getheader("content-type") or "",
        )
        _send(self, response.status, exchange.content_type)
        pending = b""
        while data := response.read1(65536):
            _piece(self, data)
            pending += data
            # Keep text pieces whole: a UTF-8 character may straddle two reads.
            text = pending.decode("utf-8", "ignore")
            if text.encode() == pending:
                exchange.pieces.append(text)
                pending = b""
        if pending:
            exchange.pieces.append(pending.decode("utf-8", "replace"))
        # Kept before the client has its whole answer: once it has, a test may take the
        # exchanges at once (a probe answered, the next request made), and this one with them.
        with proxy.lock:
            proxy.exchanges.append(exchange)
        _end(self)
        upstream.close()


class RecordingProxy(_Base):
    """Forwards to ``http://host:port`` and keeps every exchange in ``exchanges``."""

    handler = _ProxyHandler

    def __init__(self, host: str, port: int, timeout_s: float = 600.0) -> None:
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self.exchanges: list[Exchange] = []
        super().__init__()

    def take(self) -> list[Exchange]:
        """The exchanges so far, and forget them."""
        with self.lock:
            taken, self.exchanges = self.exchanges, []
        return taken


class _ReplayHandler(_Handler):
    def exchange(self) -> None:
        replay: ReplayServer = self.server.app  # type: ignore[attr-defined]
        body = _read_body(self)
        exchange = replay.next_for(self.command, self.path, _json_or_none(body))
        if exchange is None:
            data = json.dumps({"error": {"message": f"no recorded {self.path}"}}).encode()
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        _send(self, exchange.status, exchange.content_type)
        for piece in exchange.pieces:
            _piece(self, piece.encode())
        _end(self)


class ReplayServer(_Base):
    """Answers from a recording (see the module docstring). Requests with no recorded
    exchange left get HTTP 404, as a server without that endpoint would answer."""

    handler = _ReplayHandler

    def __init__(self, exchanges: list[Exchange], port: int = 0) -> None:
        self.remaining = list(exchanges)
        self.requests: list[tuple[str, str, Any]] = []
        super().__init__(port)

    def next_for(self, method: str, path: str, body: Any) -> Exchange | None:
        with self.lock:
            self.requests.append((method, path, body))
            for i, exchange in enumerate(self.remaining):
                if exchange.method == method and exchange.path == path:
                    return self.remaining.pop(i)
        return None

    def chat_requests(self) -> list[Any]:
        return [body for _, path, body in self.requests if path.endswith("/chat/completions")]
