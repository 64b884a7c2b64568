"""Start and stop the real model servers that ``make conformance`` talks to."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conformance.provision import Provisioned

ALIAS = "smollm2"


@dataclass(frozen=True)
class Running:
    name: str
    """Fixture folder: ``llama-server`` or ``llama-cpp-python``."""
    host: str
    port: int
    ctx: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}):\n{log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as response:
            if response.status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(
        f"the server was not ready within {timeout_s:g} s:\n{log.read_text()[-2000:]}"
    )


@contextlib.contextmanager
def _serve(
    name: str, cmd: list[str], port: int, ctx: int, log: Path, ready_path: str
) -> Iterator[Running]:
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_ready(f"http://127.0.0.1:{port}{ready_path}", proc, log, timeout_s=120)
        yield Running(name, "127.0.0.1", port, ctx, log)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def llama_server(
    p: Provisioned, ctx: int, log_dir: Path
) -> contextlib.AbstractContextManager[Running]:
    """llama.cpp's server at temperature 0 with the Hermes tool template, one slot."""
    assert p.llama_server is not None
    port = _free_port()
    cmd = [str(p.llama_server), "-m", str(p.model), "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["-c", str(ctx), "--jinja", "--chat-template-file", str(p.template), "-a", ALIAS]
    cmd += ["-t", "2", "--parallel", "1", "--temp", "0", "--seed", "1"]
    log = log_dir / f"llama-server-{ctx}.log"
    return _serve("llama-server", cmd, port, ctx, log, "/health")


def llama_cpp_python(
    p: Provisioned, ctx: int, log_dir: Path
) -> contextlib.AbstractContextManager[Running]:
    """llama-cpp-python's server with its function-calling chat format."""
    assert p.llama_cpp_python is not None
    port = _free_port()
    cmd = [str(p.llama_cpp_python), "-m", "llama_cpp.server", "--model", str(p.model)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(ctx)]
    cmd += ["--model_alias", ALIAS, "--chat_format", "chatml-function-calling", "--n_threads", "2"]
    log = log_dir / f"llama-cpp-python-{ctx}.log"
    return _serve("llama-cpp-python", cmd, port, ctx, log, "/v1/models")
