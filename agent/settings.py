"""Settings: command-line flags > ``REEFLINE_*`` environment > config file > defaults.

The config file is ``~/.config/reefline/config.toml`` (``$REEFLINE_CONFIG`` names another).
A file with a wrong key or type is rejected with its path and the key; every error of the
file, the environment and the flags is reported at once, an unknown key with the nearest known
one. API keys are never
settings values: they are read from the environment when the provider is resolved, and they
never reach the log, the output or a ``repr``.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
    model_validator,
)

from agent.config_file import (
    SettingsError,
    checked_config_path,
    config_dir,
    config_path,
    did_you_mean,
    read_config,
)
from agent.llm.prices import ModelPrice
from agent.llm.prompt_cache import CacheBreakpoints
from agent.loop_guard import DEFAULT_REPEATS, WINDOW
from agent.mcp_config import McpServerConfig, check_name
from tools.modes import ApprovalPolicy, SandboxMode

__all__ = [
    "PriceSetting",
    "Settings",
    "SettingsError",
    "TableCheck",
    "check_base_url",
    "config_dir",
    "config_path",
    "describe_errors",
    "load_config_file",
    "load_prices",
    "load_settings",
]


class PriceSetting(BaseModel):
    """``[prices."model-name"]``: US dollars per million tokens, as the provider bills them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    """Prompt tokens billed in full."""
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    """Prompt tokens served from the provider's prompt cache; unset: the input price (no
    discount is assumed that the config does not state)."""

    def price(self) -> ModelPrice:
        cached = self.input if self.cached_input is None else self.cached_input
        return ModelPrice(self.input, cached, self.output)


def _off_is_zero(value: object) -> object:
    """``off`` (or ``false``) for a count that 0 turns off."""
    if value is False or (isinstance(value, str) and value.strip().lower() in ("off", "false")):
        return 0
    return value


def _not_one(value: int) -> int:
    if value == 1:
        raise ValueError("1 would call every tool call a loop: give 0 (off) or 2 to 10")
    return value


class Settings(BaseModel):
    """Everything a user can configure. Unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    """Model name as the provider knows it (e.g. gpt-4.1, deepseek-chat, qwen2.5:7b)."""
    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key."""
    context_window: int | None = Field(default=None, gt=0)
    """Context window in tokens when the model is not in the built-in table."""
    context_windows: dict[str, PositiveInt] = {}
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
    loop_guard: Annotated[int, BeforeValidator(_off_is_zero), AfterValidator(_not_one)] = Field(
        default=DEFAULT_REPEATS, ge=0, le=WINDOW
    )
    """Identical tool calls (name and arguments) among a turn's last ten that the model is
    told are a loop, once, in the result (and the person too); 0 turns the guard off."""
    request_timeout: float = Field(default=120.0, gt=0)
    """Seconds to wait for the response to start, and for each piece of it."""
    request_deadline: float = Field(default=900.0, gt=0)
    """Seconds one model request may take in all, however steadily the server trickles."""
    max_retries: int = Field(default=3, ge=0, le=20)
    """How often a model request that failed in a retryable way (rate limit, server error,
    timeout, dropped stream) is repeated, with backoff, before the turn ends in an error."""
    cache_breakpoints: CacheBreakpoints = "auto"
    """Mark where a request's cached prefix ends (Anthropic's ``cache_control``): ``auto``
    for Claude models and Anthropic's endpoint, ``anthropic`` always, ``off`` never."""
    cache_ttl_s: float | None = Field(default=None, gt=0)
    """Seconds the provider keeps a prompt prefix cached after its last use; unset: its
    documented default (:mod:`agent.llm.prompt_cache`)."""
    demo: bool = False
    """Use the offline scripted model."""
    theme: str | None = None
    """The app's colour theme, a name from its command palette's theme list; a theme picked
    there is saved here."""
    compaction: dict[str, Any] = {}
    """Compaction settings, validated by the compaction backend (a :data:`TableCheck`)."""
    prices: dict[str, PriceSetting] = {}
    """Per-model prices for the cost estimate, beside the built-in table (which they override)."""
    mcp_servers: dict[Annotated[str, AfterValidator(check_name)], McpServerConfig] = {}
    """MCP servers whose tools the model may call (:mod:`agent.mcp_config`)."""

    @property
    def model_prices(self) -> dict[str, ModelPrice]:
        """:attr:`prices` as :func:`agent.llm.prices.price_of` reads them."""
        return {name: entry.price() for name, entry in self.prices.items()}

    @model_validator(mode="after")
    def _output_fits_the_window(self) -> Settings:
        # A cap at or above the window leaves no room for the conversation: every request
        # would be refused by the server, only later and less clearly.
        if (
            self.max_output_tokens is not None
            and self.context_window is not None
            and self.max_output_tokens >= self.context_window
        ):
            raise ValueError(
                f"max_output_tokens ({self.max_output_tokens}) must be below context_window "
                f"({self.context_window}), or no room is left for the conversation"
            )
        return self


TableCheck = Callable[[Mapping[str, Any]], object]
"""Validates one table setting (``compaction``) for a layer the core cannot import; raises
``ValueError`` whose message holds one line per error (``key: what is wrong``)."""


def describe_errors(
    exc: ValidationError,
    source: str,
    origins: Mapping[str, str] | None = None,
    known: Collection[str] = Settings.model_fields,
) -> str:
    """One line per error: the flag or variable that set the setting when ``origins`` (top-level
    key → where its value came from) knows it, else ``source`` and the key; an unknown key
    with the nearest of the ``known`` ones."""
    lines = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden" and len(loc) == 1:
            message = f"not a setting{did_you_mean(loc[0], known)}"
        elif err["type"] == "extra_forbidden" and loc[0] == "mcp_servers" and len(loc) == 3:
            fields = McpServerConfig.model_fields
            message = f"not a field of an MCP server{did_you_mean(loc[2], fields)}"
        if not loc:  # a rule between settings: its message names them
            lines.append(f"{source}: {message}")
            continue
        key = ".".join(loc)
        where = (origins or {}).get(loc[0])
        if where is None:
            lines.append(f"{source}: key `{key}`: {message}")
        else:
            lines.append(f"{where} (setting `{key}`): {message}")
    return "\n".join(lines)


def load_config_file(path: Path) -> dict[str, Any]:
    """The validated contents of a config file ({} when it does not exist)."""
    data = read_config(path)
    try:
        Settings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(describe_errors(exc, str(path))) from None
    return data


def load_prices() -> dict[str, ModelPrice]:
    """Only the ``prices`` setting (config file, then ``REEFLINE_PRICES*``), validated as
    :func:`load_settings` validates it, for a tool that reads no other setting.

    Raises:
        SettingsError: naming the config file (or variable) and the key.
    """
    path = checked_config_path()
    merged = {"prices": read_config(path).get("prices", {})}
    try:
        Settings.model_validate(merged)
    except ValidationError as exc:
        raise SettingsError(describe_errors(exc, str(path))) from None
    env = environment_settings(os.environ)
    if "prices" in env:
        merged = _deep_merge(merged, {"prices": env["prices"]})
    try:
        return Settings.model_validate(merged).model_prices
    except ValidationError as exc:
        origins = _environment_origins(os.environ)
        raise SettingsError(describe_errors(exc, "REEFLINE_PRICES", origins)) from None


def load_settings(
    flags: Mapping[str, Any] | None = None, tables: Mapping[str, TableCheck] | None = None
) -> Settings:
    """Merge flags (None values ignored) > ``REEFLINE_*`` environment > config file > defaults.

    Every error is reported at once: the file's own (even where a flag overrides the key),
    those of the merged settings, and those of each table ``tables`` checks (the composition
    root passes the compaction backend's validation, which the core cannot import).

    Raises:
        SettingsError: one line per error, naming the config file and key, or the flag /
        variable at fault.
    """
    path = checked_config_path()
    data = read_config(path)
    errors: list[str] = []
    errors += _errors_of(data, str(path))
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    origins = _environment_origins(os.environ)
    origins.update({key: f"--{key.replace('_', '-')} {value}" for key, value in given.items()})
    merged = data
    for layer in (environment_settings(os.environ), given):
        merged = _deep_merge(merged, layer)
    # A key no flag or variable set is the file's: the same line as above, said once.
    errors += _errors_of(merged, str(path), origins)
    for key, check in (tables or {}).items():
        table = merged.get(key)
        if not isinstance(table, Mapping):
            continue  # not a table: reported above
        try:
            check(table)
        except ValueError as exc:
            where = origins.get(key, str(path))
            errors += [f"{where}: {line}" for line in str(exc).splitlines()]
    if isinstance(base_url := merged.get("base_url"), str) and base_url:
        try:
            check_base_url(base_url, "--base-url")
        except SettingsError as exc:
            errors.append(str(exc))
    if errors:
        raise SettingsError("\n".join(dict.fromkeys(errors)))
    return Settings.model_validate(merged)


def _errors_of(
    data: Mapping[str, Any], source: str, origins: Mapping[str, str] | None = None
) -> list[str]:
    """Every error of ``data`` as settings, one line each. The rules between settings run
    only once every setting is valid: they are checked on the valid ones too, so that all
    errors come in one round."""
    try:
        Settings.model_validate(data)
    except ValidationError as exc:
        lines = describe_errors(exc, source, origins).splitlines()
        bad = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
        if bad:
            valid = {key: value for key, value in data.items() if key not in bad}
            lines += [line for line in _errors_of(valid, source, origins) if line not in lines]
        return lines
    return []


ENV_PREFIX = "REEFLINE_"


def environment_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """The settings given as ``REEFLINE_<KEY>`` variables (names in any case).

    A key of a table (``compaction``, ``context_windows``) takes JSON
    (``REEFLINE_COMPACTION='{"threshold_ratio": 0.7}'``), or one entry per variable with
    ``__`` (``REEFLINE_COMPACTION__THRESHOLD_RATIO=0.7``); every other value is text that
    validation converts. Variables that name no setting (``REEFLINE_HOME`` does,
    ``REEFLINE_CONFIG`` does not) are left alone.

    Raises:
        SettingsError: a table's variable that is not a JSON object.
    """
    found: dict[str, Any] = {}
    for name, key, entry in _setting_variables(env):
        value = env[name]
        if key in _TABLES and not entry:
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise SettingsError(
                    f"{name.upper()}: not a valid value (JSON expected): {exc}"
                ) from None
            if not isinstance(value, dict):
                raise SettingsError(f"{name.upper()}: not a valid value (a JSON object expected)")
            found[key] = _deep_merge(found.get(key, {}), value)
        elif key in _TABLES:
            table = found.setdefault(key, {})
            for part in entry.split("__")[:-1]:
                table = table.setdefault(part, {})
            table[entry.split("__")[-1]] = value
        else:
            found[key] = value
    return found


def _setting_variables(env: Mapping[str, str]) -> Iterator[tuple[str, str, str]]:
    """``(name, key, entry)`` for each ``REEFLINE_<KEY>[__<ENTRY>]`` variable that names a
    setting (an entry only for a table), sorted by name: a table's JSON comes before its
    ``__`` entries, which refine it."""
    for name in sorted(env):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        key, _, entry = name[len(ENV_PREFIX) :].lower().partition("__")
        if key in Settings.model_fields and (key in _TABLES or not entry):
            yield name, key, entry


def _environment_origins(env: Mapping[str, str]) -> dict[str, str]:
    """For each setting the environment sets, the variables that set it, as a user would type
    them (``REEFLINE_MAX_STEPS='many'``), so an error names the one to fix."""
    names: dict[str, list[str]] = {}
    for name, key, _entry in _setting_variables(env):
        names.setdefault(key, []).append(f"{name}={env[name]!r}")
    return {key: ", ".join(found) for key, found in names.items()}


_TABLES = frozenset(
    name for name, field in Settings.model_fields.items() if get_origin(field.annotation) is dict
)
"""The settings whose value is a table rather than one value."""


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` on top; tables are merged key by key, not replaced."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def check_base_url(url: str, source: str) -> None:
    """A base URL the HTTP client can use: http(s), a host, parseable, and no control
    character (which the client would refuse only at the first request)."""
    for position, char in enumerate(url):
        if char.isascii() and not char.isprintable():
            raise SettingsError(
                f"{source} {url!r} holds a control character ({char!r} at position "
                f"{position}): give the server's URL, e.g. http://127.0.0.1:8000/v1"
            )
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (parsing the port is what can fail)
    except ValueError as exc:
        raise SettingsError(f"{source} {url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(
            f"{source} {url!r} is not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1"
        )
