"""Settings: command-line flags > ``REEFLINE_*`` environment > config file > defaults.

The config file is ``~/.config/reefline/config.toml`` (``$REEFLINE_CONFIG`` names another).
A file with a wrong key or type is rejected with its path and the key. API keys are never
settings values: they are read from the environment when the provider is resolved, and they
never reach the log, the output or a ``repr``.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings.exceptions import SettingsError as PydanticSettingsError

from agent.config_file import (
    SettingsError,
    checked_config_path,
    config_dir,
    config_path,
    read_config,
)

__all__ = [
    "ApprovalPolicy",
    "SandboxMode",
    "Settings",
    "SettingsError",
    "check_base_url",
    "config_dir",
    "config_path",
    "describe_errors",
    "load_config_file",
    "load_settings",
]

ApprovalPolicy = Literal["ask", "auto", "deny"]
SandboxMode = Literal["off", "read-only", "workspace-write"]


class Settings(BaseSettings):
    """Everything a user can configure. Unknown keys are errors."""

    model_config = SettingsConfigDict(
        env_prefix="REEFLINE_", extra="forbid", env_nested_delimiter="__", frozen=True
    )

    model: str | None = None
    """Model name as the provider knows it (e.g. gpt-4.1, deepseek-chat, qwen2.5:7b)."""
    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key."""
    context_window: int | None = Field(default=None, gt=0)
    """Context window in tokens when the model is not in the built-in table."""
    context_windows: dict[str, int] = {}
    """Per-model context window overrides."""
    approve: ApprovalPolicy | None = None
    """Bash approval policy; None = the front end's default (ask in the app, deny headless)."""
    sandbox: SandboxMode | None = None
    """How bash commands are confined (bubblewrap); None = workspace-write while commands
    run without asking (approval ``auto``) and a sandbox is available, else off."""
    sandbox_network: bool = False
    """Let sandboxed commands reach the network."""
    home: Path | None = None
    """Where sessions live (default: $REEFLINE_HOME or the platform data dir)."""
    max_steps: int = Field(default=40, gt=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    request_timeout: float = Field(default=120.0, gt=0)
    """Seconds to wait for the response to start, and for each piece of it."""
    request_deadline: float = Field(default=900.0, gt=0)
    """Seconds one model request may take in all, however steadily the server trickles."""
    max_retries: int = Field(default=3, ge=0, le=20)
    """How often a model request that failed in a retryable way (rate limit, server error,
    timeout, dropped stream) is repeated, with backoff, before the turn ends in an error."""
    demo: bool = False
    """Use the offline scripted model."""
    compaction: dict[str, Any] = {}
    """Compaction settings, validated by the compaction backend."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Flags arrive as init kwargs; the file was validated by load_settings() first.
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=config_path()),
        )


def _file_model() -> type[BaseModel]:
    """The keys of :class:`Settings` as a plain model, to validate a config file on its own
    (so an error can name the file rather than a merged source)."""
    fields: dict[str, Any] = {
        name: (info.annotation, info) for name, info in Settings.model_fields.items()
    }
    model: type[BaseModel] = create_model(
        "FileSettings", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


_FileSettings = _file_model()


def describe_errors(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"{source}: key `{key}`: {err['msg']}")
    return "\n".join(lines)


def load_config_file(path: Path) -> dict[str, Any]:
    """The validated contents of a config file ({} when it does not exist)."""
    data = read_config(path)
    try:
        _FileSettings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(describe_errors(exc, str(path))) from None
    return data


def load_settings(flags: Mapping[str, Any] | None = None) -> Settings:
    """Merge flags (None values ignored) > ``REEFLINE_*`` environment > config file > defaults.

    Raises:
        SettingsError: naming the config file and key, or the flag / variable at fault.
    """
    load_config_file(checked_config_path())
    explicit = {k: v for k, v in (flags or {}).items() if v is not None}
    try:
        settings = Settings(**explicit)
    except ValidationError as exc:
        raise SettingsError(
            describe_errors(exc, "settings (command-line flags or REEFLINE_* environment)")
        ) from None
    except PydanticSettingsError as exc:
        # A REEFLINE_* variable that is not the JSON its field needs.
        field = _FIELD_IN_MESSAGE.search(str(exc))
        name = f"REEFLINE_{field.group(1).upper()}" if field else "a REEFLINE_* variable"
        raise SettingsError(f"{name}: not a valid value (JSON expected): {exc}") from None
    if settings.base_url:
        check_base_url(settings.base_url, "--base-url")
    return settings


_FIELD_IN_MESSAGE = re.compile(r'field "([a-z_]+)"')


def check_base_url(url: str, source: str) -> None:
    """A base URL the HTTP client can use: http(s), a host, and parseable."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (parsing the port is what can fail)
    except ValueError as exc:
        raise SettingsError(f"{source} {url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(
            f"{source} {url!r} is not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1"
        )
