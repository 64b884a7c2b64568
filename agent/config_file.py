"""The config file: where it is, its bytes read safely, and its TOML.

Kept apart from the settings' validation (:mod:`agent.settings`, which loads pydantic) so
that what needs only one key before anything else — the session tools' home, the launcher's
``api_key_env`` — reads the same file the same way, quickly.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import platformdirs

MAX_CONFIG_BYTES = 1 << 20


class SettingsError(ValueError):
    """Settings that cannot be used; the message names the source and the key."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean `max_steps`?)"`` for the choice closest to a mistyped ``word``, or ""
    when none is close: one wording for every unknown key of the settings."""
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean `{near[0]}`?)" if near else ""


def config_dir() -> Path:
    """reefline's folder of the user's config, ``~/.config/reefline``."""
    return Path(platformdirs.user_config_dir("reefline"))


def config_path(env: Mapping[str, str] = os.environ) -> Path:
    """``$REEFLINE_CONFIG`` if set, else ``~/.config/reefline/config.toml``."""
    if env.get("REEFLINE_CONFIG"):
        return Path(env["REEFLINE_CONFIG"]).expanduser()
    return config_dir() / "config.toml"


def checked_config_path() -> Path:
    """:func:`config_path`, refusing a ``$REEFLINE_CONFIG`` that names nothing: a typo or a
    moved file is a mistake, not a default."""
    path = config_path()
    if os.environ.get("REEFLINE_CONFIG") and not os.path.lexists(path):
        raise SettingsError(
            f"REEFLINE_CONFIG names {path}, which does not exist: fix the path, or unset "
            "REEFLINE_CONFIG to use ~/.config/reefline/config.toml"
        )
    return path


def read_config(path: Path) -> dict[str, Any]:
    """The config file's TOML, not yet validated ({} when the file does not exist).

    Only a regular file of at most :data:`MAX_CONFIG_BYTES` is read, opened without
    blocking: a FIFO or ``/dev/zero`` named as the config is an error, not a hang or a full
    memory.

    Raises:
        SettingsError: naming the file and what is wrong with it.
    """
    raw = _read_bytes(path)
    if raw is None:
        return {}
    try:
        return tomllib.loads(raw.decode("utf-8", errors="replace"))
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise SettingsError(f"{path}: invalid TOML: nested too deeply") from None


def configured_home(flag: Path | None) -> Path | None:
    """Where sessions live as the settings would say, without loading them: ``flag``, else
    ``$REEFLINE_HOME``, else the config file's ``home``; None means the platform default.

    The same order as :func:`agent.settings.load_settings` for this one key, and the same
    refusals of a file that cannot be read (a test holds them together). Other keys of the
    file are not validated here: the session tools that use this read nothing else.
    """
    path = checked_config_path()  # read whatever wins, as the settings do: a broken file
    home = read_config(path).get("home")  # is reported, not skipped
    if home is not None and not isinstance(home, str):
        raise SettingsError(f"{path}: key `home`: a folder path (a string) expected")
    if flag is not None:
        return flag.expanduser()
    if os.environ.get("REEFLINE_HOME"):
        return Path(os.environ["REEFLINE_HOME"]).expanduser()
    return None if home is None else Path(home).expanduser()


def names_prices(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the config file or a ``REEFLINE_PRICES*`` variable sets ``prices``: a tool
    that needs only them (``reefline sessions``) loads the settings' validation only then."""
    if any(name.upper().startswith("REEFLINE_PRICES") for name in env):
        return True
    return "prices" in read_config(checked_config_path())


def save_config_value(path: Path, key: str, value: str) -> None:
    """Set the top-level text setting ``key`` to ``value`` in the config file, keeping every
    other byte: its line before the first table is replaced, or one is added at the top (the
    file and its folder are made when missing). Written whole to a temporary file that is then
    renamed over the old one (mode 0600), so a crash leaves the old file or the new one.

    Raises:
        SettingsError: the file cannot be read, is not valid TOML (it is left alone: the user
        has a mistake to fix), or cannot be written.
    """
    read_config(path)  # refuses what the settings would refuse
    raw = _read_bytes(path)
    text = "" if raw is None else raw.decode("utf-8", errors="replace")
    line = f"{key} = {json.dumps(value)}"  # a JSON string is a TOML basic string
    first_table = re.search(r"^\s*\[", text, re.M)
    head_end = first_table.start() if first_table else len(text)
    found = re.compile(rf"^[ \t]*{re.escape(key)}[ \t]*=.*$", re.M).search(text, 0, head_end)
    text = text[: found.start()] + line + text[found.end() :] if found else f"{line}\n{text}"
    try:
        if tomllib.loads(text).get(key) != value:
            raise SettingsError(f"{path}: cannot save `{key}` in it: its `{key}` line is unusual")
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: cannot save `{key}` in it: {exc}") from None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SettingsError(f"{path}: cannot save `{key}`: {exc.strerror}") from None


def _read_bytes(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read the config file: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SettingsError(f"{path}: the config file is not a regular file")
        chunks = []
        size = 0
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_CONFIG_BYTES:
                raise SettingsError(
                    f"{path}: the config file is larger than {MAX_CONFIG_BYTES // 1024} KiB"
                )
        return b"".join(chunks)
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read the config file: {exc.strerror}") from None
    finally:
        os.close(fd)
