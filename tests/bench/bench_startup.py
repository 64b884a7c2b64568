"""Start-up, where a user waits before anything happens.

* ``reefline -p``: from process start to the first byte of the first request at a loopback
  server, beside the floor ``python -c "import openai"`` (the SDK has to load either way),
  both measured in this run.
* ``reefline --version`` and ``reefline sessions``: whole process, beside a bare
  ``python -c pass`` (they load neither the SDK nor Textual).

Each figure is the median of several runs, alternating ours and the baseline.
"""

from __future__ import annotations

import http.server
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import ClassVar

from tests.bench.report import Figure

REEFLINE = Path(sys.executable).with_name("reefline")
RUNS = 7


class _FirstByte(http.server.BaseHTTPRequestHandler):
    """Notes when the first request arrives, then answers 400 (not retried): the run ends."""

    arrived: ClassVar[list[float]] = []

    def do_POST(self) -> None:
        _FirstByte.arrived.append(time.perf_counter())
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        body = b'{"error": {"message": "bench", "type": "invalid_request_error"}}'
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REEFLINE_"))}
    (home / "config.toml").write_text("")
    env.update(REEFLINE_HOME=str(home / "home"), REEFLINE_CONFIG=str(home / "config.toml"))
    return env


def _whole(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, capture_output=True, timeout=60, check=False)
    return time.perf_counter() - started


def _first_request(port: int, env: dict[str, str], cwd: Path) -> float:
    _FirstByte.arrived.clear()
    started = time.perf_counter()
    command = [
        str(REEFLINE), "-p", "hi", "--base-url", f"http://127.0.0.1:{port}/v1",
        "--model", "m", "--context-window", "8000",
    ]  # fmt: skip
    subprocess.run(command, env=env, cwd=cwd, capture_output=True, timeout=60, check=False)
    assert _FirstByte.arrived, "no request arrived"
    return _FirstByte.arrived[0] - started


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = _env(home)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _FirstByte)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            _first_request(port, env, home)  # warm the caches (tiktoken, bytecode)
            requests, floors, versions, listings, bare = [], [], [], [], []
            for _ in range(RUNS):
                requests.append(_first_request(port, env, home))
                floors.append(_whole([sys.executable, "-c", "import openai"], env))
                versions.append(_whole([str(REEFLINE), "--version"], env))
                listings.append(_whole([str(REEFLINE), "sessions"], env))
                bare.append(_whole([sys.executable, "-c", "pass"], env))
        finally:
            server.shutdown()
    first, floor = statistics.median(requests), statistics.median(floors)
    version, listing, python = (statistics.median(x) for x in (versions, listings, bare))
    return [
        Figure(
            group="Start-up",
            name="reefline -p: process start → first request byte",
            value=first * 1000,
            unit="ms",
            baseline_name='python -c "import openai"',
            baseline_value=floor * 1000,
            target="ratio ≤ 1.5",
            ok=first / floor <= 1.5,
        ),
        Figure(
            group="Start-up",
            name="reefline --version",
            value=version * 1000,
            unit="ms",
            baseline_name='python -c "pass"',
            baseline_value=python * 1000,
            target="≤ 250 ms",
            ok=version <= 0.25,
        ),
        Figure(
            group="Start-up",
            name="reefline sessions",
            value=listing * 1000,
            unit="ms",
            baseline_name='python -c "pass"',
            baseline_value=python * 1000,
            target="≤ 250 ms",
            ok=listing <= 0.25,
        ),
    ]
