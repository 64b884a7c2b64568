"""The API key stays secret: out of every object's printed form, out of what commands the
model runs can read, out of the screen, the log and the requests, and out of a crash report.

The key goes in the way a user puts it: in the environment of a real process, which hands
it over privately and re-executes itself without it (:mod:`agent.secret_env`).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from tests.openai_server import OpenAIServer
from tests.reliability.conftest import REEFLINE, only_session
from tests.tui.test_app_tmux import Tmux, app_env, tmux  # noqa: F401  (fixtures)

KEY = "sk-test-HOLDERS-7e1f04a9c2"

PRINT_HOLDERS = """
import asyncio, os, sys

from agent import secret_env

if secret_env.FD_VARIABLE in os.environ:
    secret_env.receive()
else:  # what the reefline launcher does first
    secret_env.reexec_without(secret_env.key_names([], os.environ), sys.argv)
    sys.exit("the key was not in the environment: no hand-over")

from agent.llm.chat import ChatRequest
from agent.llm.client import AuthError
from agent.settings import load_settings
from tui.runtime.wiring import build_runtime


async def main():
    flags = {"base_url": sys.argv[1], "model": "m", "home": sys.argv[2]}
    runtime = build_runtime(load_settings(flags), default_approve="deny")
    await runtime.window_asker.ensure()
    error = None
    try:
        request = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}])
        async for _ in runtime.model.stream(request):
            pass
    except AuthError as exc:
        error = exc
    print("auth error:", error is not None)
    for holder in (runtime, runtime.provider, runtime.model, runtime.window_asker, error):
        print(repr(holder), str(holder), repr(getattr(holder, "__dict__", None)))
    print(repr(dict(os.environ)), open("/proc/self/environ").read())
    await runtime.aclose()


asyncio.run(main())
"""


def test_no_object_that_holds_the_key_prints_it(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    """A process that got the key the way reefline does builds the runtime, asks the server
    its window, and gets an error that echoes the key; then it prints every object that
    holds the key (the provider, the model client, the window asker, the error, the
    runtime), their attributes too."""
    script = tmp_path / "holders.py"
    script.write_text(PRINT_HOLDERS)
    openai_server.push({"status": 401, "message": f"Incorrect API key provided: {KEY}."})
    home = tmp_path / "home"
    out = subprocess.run(
        [sys.executable, str(script), openai_server.base_url, str(home)],
        cwd=workdir, env={**cli_env, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": openai_server.base_url},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "auth error: True" in out.stdout
    assert KEY not in out.stdout + out.stderr
    assert "Secret('***')" in out.stdout
    assert openai_server.headers[-1]["authorization"] == f"Bearer {KEY}"  # it was used


PROBE = (
    "env; cat /proc/$PPID/environ; echo; tr '\\0' '\\n' </proc/$PPID/environ; "
    "tr '\\0' '\\n' </proc/self/environ; cat /proc/$PPID/cmdline"
)
"""What a command can read of the key: its own environment and reefline's (its parent)."""


def test_the_app_keeps_the_key_from_commands_the_screen_and_the_log(
    tmux: Tmux,  # noqa: F811
    app_env: dict[str, str],  # noqa: F811
    openai_server: OpenAIServer,
    workdir: Path,
) -> None:
    """The real app on a terminal, the key in its environment: the model runs ``env`` and
    reads the environment of reefline (``/proc/$PPID/environ``); neither the screen (with
    its scrollback), the session log nor anything the server received holds the key."""
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": PROBE}}]},
        {"text": "Probe finished."},
    )
    command = shlex.join(
        [REEFLINE, "--base-url", openai_server.base_url, "--model", "m", "--approve", "auto",
         "--context-window", "32000", "--sandbox", "off"]
    )  # fmt: skip
    # Unsandboxed on purpose: the key must be out of reefline's environment even where no
    # sandbox hides reefline's /proc from the command.
    env = {**app_env, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": openai_server.base_url}
    # The key in the tmux server's environment, which the pane's shell passes on: as a
    # shell that exported it would.
    tmux.start(f"cd {shlex.quote(str(workdir))} && {command}", width=120, height=40, env=env)
    tmux.wait_for("Message reefline")
    tmux.type("look around")
    screen = tmux.wait_for("Probe finished.")
    tmux.keys("C-q")
    tmux.wait("the app to exit", lambda s: tmux.exited(), history=True)
    seen = screen + tmux.screen(history=True)
    result = openai_server.requests[-1]["messages"][-1]
    assert result["role"] == "tool" and "REEFLINE_HOME=" in result["content"]  # the probe ran
    log = only_session({"REEFLINE_HOME": app_env["REEFLINE_HOME"]}).read_text()
    sent = json.dumps(openai_server.requests)
    for where in (seen, log, sent):
        assert KEY not in where
    assert openai_server.headers[-1]["authorization"] == f"Bearer {KEY}"


FAIL_MID_STREAM = """
import httpx2

_aiter_bytes = httpx2.Response.aiter_bytes


async def _failing(self, *args, **kwargs):
    if b"CRASH-NOW" in self.request.content:
        raise RuntimeError("a fault injected in the HTTP library")
    async for chunk in _aiter_bytes(self, *args, **kwargs):
        yield chunk


httpx2.Response.aiter_bytes = _failing
"""


def test_a_crash_report_in_the_app_prints_no_locals_and_no_key(
    tmux: Tmux,  # noqa: F811
    app_env: dict[str, str],  # noqa: F811
    openai_server: OpenAIServer,
    workdir: Path,
    tmp_path: Path,
) -> None:
    """An error nothing in reefline expects, in the middle of a request, ends the app with
    Textual's crash report; that report used to print every frame's local variables.

    Fault injection, in a library rather than in our code: a ``sitecustomize`` on the app's
    PYTHONPATH makes the HTTP library's response stream raise a ``RuntimeError`` for a
    request that carries the prompt "CRASH-NOW" (any error a hostile server can provoke is
    a bug and gets fixed, so none is left to crash the app with)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(FAIL_MID_STREAM)
    command = shlex.join(
        [REEFLINE, "--base-url", openai_server.base_url, "--model", "m", "--context-window",
         "32000"]
    )  # fmt: skip
    env = {**app_env, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": openai_server.base_url,
           "PYTHONPATH": str(hook)}  # fmt: skip
    tmux.start(
        f'cd {shlex.quote(str(workdir))} && {command}; echo "exited $?"',
        width=120, height=40, env=env,
    )  # fmt: skip
    tmux.wait_for("Message reefline")
    tmux.type("CRASH-NOW")
    report = tmux.wait("the crash report", lambda s: "exited 1" in s, history=True)
    assert "RuntimeError" in report and "a fault injected" in report, report
    assert KEY not in report
    assert "locals" not in report.lower(), report
