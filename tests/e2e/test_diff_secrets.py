"""A command writes the API key into a file: every diff view masks it as the command's output
is masked (``***``): ``reefline diff``, ``-p /diff`` and ``--plain``'s ``/diff``, through
the real CLI against the loopback server. (The app's diff screen: tests/tui/test_app_diff.py.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import OpenAIServer

KEY = "sk-diff-view-secret-0123456789abcdef"
# The command builds the key from two halves, so that the command itself (logged, and shown
# on the card) does not hold it: only the file it writes does.
WRITE_KEY = f"printf 'token=%s%s\\n' {KEY[:20]} {KEY[20:]} > settings.env && cat settings.env"


def test_every_diff_view_masks_the_key_a_command_wrote_into_a_file(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    keyed = {"OPENAI_API_KEY": KEY}
    model = ["--base-url", openai_server.base_url, "--model", "m", "--api-key-env"]
    model += ["OPENAI_API_KEY", "--sandbox", "off"]
    openai_server.agent_commands = [WRITE_KEY]
    done = run_cli("-p", "write the settings", *model, "--approve", "auto", env=keyed)
    assert done.returncode == 0, done.stderr
    assert (workdir / "settings.env").read_text() == f"token={KEY}\n"  # the attack landed
    [log] = session_files(cli_env)
    [result] = [e for e in log_events(log) if e["type"] == "tool/result"]
    assert "token=***" in str(result["data"]) and KEY not in log.read_text()  # as output is

    shell = run_cli("diff", log.stem, env=keyed)
    assert shell.returncode == 0, shell.stderr
    assert "+token=***" in shell.stdout and KEY not in shell.stdout, shell.stdout

    headless = run_cli("-p", "/diff", "--continue", *model, env=keyed)
    assert headless.returncode == 0, headless.stderr
    assert "+token=***" in headless.stdout and KEY not in headless.stdout, headless.stdout

    plain = subprocess.run(
        [REEFLINE, "--plain", "--continue", *model],
        cwd=workdir,
        env={**cli_env, **keyed},
        input="/diff\n/quit\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode == 0, plain.stderr
    assert "+token=***" in plain.stdout and KEY not in plain.stdout + plain.stderr, plain.stdout
