"""API keys out of the process environment.

A process's environment at exec time stays readable in ``/proc/<pid>/environ`` by anything
running as the same user — every command the model runs, through ``/proc/$PPID/environ`` —
however the variables are changed afterwards. So the launcher moves the key variables out
before anything else happens: it writes them into a pipe and execs reefline again without
them (:func:`reexec_without`); the new process reads them back from the pipe
(:func:`receive`) and keeps them in memory only, as :class:`~agent.secret.Secret` values.
The provider reads them through :func:`key`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence

from agent.secret import Secret

KEY_VARIABLES = ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "REEFLINE_API_KEY")
FD_VARIABLE = "REEFLINE_SECRETS_FD"

_received: dict[str, Secret] = {}


def key_names(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The variables that hold keys: the well-known ones, and any that ``--api-key-env``,
    ``REEFLINE_API_KEY_ENV`` or the config file's ``api_key_env`` names."""
    names = list(KEY_VARIABLES)
    for i, arg in enumerate(argv):
        if arg == "--api-key-env" and i + 1 < len(argv):
            names.append(argv[i + 1])
        elif arg.startswith("--api-key-env="):
            names.append(arg.split("=", 1)[1])
    if env.get("REEFLINE_API_KEY_ENV"):
        names.append(env["REEFLINE_API_KEY_ENV"])
    names.append(_config_key_env(env) or "")
    return [n for n in dict.fromkeys(names) if n]


def _config_key_env(env: Mapping[str, str]) -> str | None:
    """``api_key_env`` of the config file, read before anything else loads (best effort:
    a config that cannot be read is reported later, by the settings)."""
    from agent.config_file import SettingsError, config_path, read_config

    try:
        data = read_config(config_path(env))
    except SettingsError:
        return None
    name = data.get("api_key_env")
    return name if isinstance(name, str) else None


def reexec_without(names: Sequence[str], argv: Sequence[str]) -> None:
    """Exec this program again with the variables ``names`` moved into a pipe; returns only
    when none of them is set (nothing to hide)."""
    found = {name: os.environ[name] for name in names if name in os.environ}
    if not found:
        return
    data = json.dumps(found).encode()
    read_fd, write_fd = os.pipe()
    if len(data) >= 60_000:  # a pipe holds 64 KiB: more is not a key
        os.close(read_fd)
        os.close(write_fd)
        return
    os.write(write_fd, data)
    os.close(write_fd)
    os.set_inheritable(read_fd, True)
    env = {k: v for k, v in os.environ.items() if k not in found}
    env[FD_VARIABLE] = str(read_fd)
    os.execve(sys.executable, [sys.executable, *argv], env)


def receive() -> None:
    """Read the keys a launcher handed over (if it did) and close the pipe."""
    fd_text = os.environ.pop(FD_VARIABLE, None)
    if fd_text is None:
        return
    try:
        fd = int(fd_text)
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        os.close(fd)
        handed = json.loads(b"".join(chunks) or b"{}")
    except (ValueError, OSError):
        return
    if isinstance(handed, dict):
        _received.update({str(k): Secret(str(v)) for k, v in handed.items()})


def key(name: str) -> Secret | None:
    """The key in variable ``name``: the one handed over, else the environment's (a process
    started without the launcher, such as a test); None when unset or empty."""
    found = _received.get(name)
    if found is None and os.environ.get(name):
        found = Secret(os.environ[name])
    return found or None
