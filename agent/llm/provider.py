"""Where requests go: the provider chosen from the settings and the environment.

Explicit beats implicit: ``--demo``, then ``--api-key-env``, a base URL, the key variables
in a fixed order (DeepSeek's first when the model or URL names it); with nothing configured,
the offline demo model and a notice saying how to connect a real one. The key is a
:class:`~agent.secret.Secret`: never part of a ``repr``.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Collection
from dataclasses import dataclass, field

from agent import secret_env
from agent.log.events import ProviderData, ProviderKind
from agent.secret import Secret
from agent.settings import Settings, SettingsError, check_base_url

DEFAULT_OPENAI_MODEL = "gpt-4.1"


DEFAULT_DEEPSEEK_MODEL = "deepseek-chat"


DEEPSEEK_BASE_URL = "https://api.deepseek.com"


OPENAI_BASE_URL = "https://api.openai.com/v1"


PROVIDER_SETTINGS = frozenset({"model", "base_url", "api_key_env", "demo"})
"""The settings that choose where requests go (what a session's provider record holds)."""


@dataclass(frozen=True)
class Provider:
    """Where requests go. ``api_key`` is a :class:`Secret`: printing the provider (a log
    line, a crash report) cannot print it."""

    kind: ProviderKind
    name: str
    """openai, deepseek, local or scripted."""
    model: str
    base_url: str | None = None
    api_key: Secret | None = field(default=None, repr=False)
    notice: str | None = None
    """One line for stderr / the banner (e.g. why the demo model is used)."""
    api_key_env: str | None = None
    """The NAME of the variable the key came from (recorded in the log; the key never is)."""

    def record(self) -> ProviderData:
        """What the session log keeps of this provider (see :func:`session_settings`)."""
        return ProviderData(
            kind=self.kind,
            name=self.name,
            model=self.model,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
        )


def where(record: ProviderData) -> str:
    """``qwen2.5 at 127.0.0.1:11434``, ``gpt-4.1 at api.openai.com``, ``the offline demo
    model``: a provider as a sentence says it."""
    if record.kind == "scripted":
        return "the offline demo model"
    url = record.base_url or OPENAI_BASE_URL
    host = urllib.parse.urlsplit(url).netloc or url
    return f"{record.model} at {host}"


def session_settings(
    settings: Settings, recorded: ProviderData | None, chosen: Collection[str]
) -> Settings:
    """The settings a resumed session's requests use: its recorded provider, except where
    the command line chose otherwise (``chosen``: the names of the settings given as flags).
    The environment and the config file never move a session elsewhere (an
    ``OPENAI_API_KEY`` that is set does not send a conversation held with a local model to
    the cloud); a flag does, and the caller says so."""
    if recorded is None:
        return settings
    chosen = PROVIDER_SETTINGS.intersection(chosen)
    endpoint = chosen - {"model"}
    if recorded.kind == "scripted":
        # A flag naming a real endpoint or model leaves the demo; otherwise it goes on.
        return settings if chosen - {"demo"} else settings.model_copy(update={"demo": True})
    update: dict[str, object] = {"demo": settings.demo if "demo" in chosen else False}
    if not endpoint - {"demo"}:
        update["base_url"] = recorded.base_url or OPENAI_BASE_URL
        update["api_key_env"] = recorded.api_key_env
    if "model" not in chosen:
        update["model"] = recorded.model
    return settings.model_copy(update=update)


def resolve_provider(settings: Settings) -> Provider:
    """Choose the provider: ``--demo`` → scripted; a base URL or an API key → that endpoint;
    nothing configured → the scripted demo model with a notice on how to connect one. Keys
    are read through :func:`agent.secret_env.key`."""
    if settings.demo:
        return Provider("scripted", "scripted", "scripted-demo")
    key = None
    key_source = None
    if settings.api_key_env:
        key = secret_env.key(settings.api_key_env)
        key_source = settings.api_key_env
        if key is None:
            raise SettingsError(
                f"--api-key-env names {settings.api_key_env}, but that environment variable is "
                "not set or empty"
            )
    base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL") or None
    if base_url and not settings.base_url:
        check_base_url(base_url, "OPENAI_BASE_URL")
    model = settings.model
    wants_deepseek = (model or "").startswith("deepseek") or "deepseek" in (base_url or "")
    if key is None:
        for name in (
            ("REEFLINE_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY")
            if wants_deepseek
            else ("REEFLINE_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY")
        ):
            if (found := secret_env.key(name)) is not None:
                key, key_source = found, name
                break
    if key_source == "DEEPSEEK_API_KEY" and base_url is None:
        base_url = DEEPSEEK_BASE_URL
    if base_url is None and key is None:
        return Provider(
            "scripted",
            "scripted",
            "scripted-demo",
            notice=(
                "No model configured: using the offline demo model. To connect a real one, set "
                "OPENAI_API_KEY or DEEPSEEK_API_KEY, or point --base-url at a local server "
                "(Ollama: --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b)."
            ),
        )
    if base_url and "deepseek" in base_url:
        name = "deepseek"
    elif base_url and not base_url.startswith("https://api.openai.com"):
        name = "local" if _is_local(base_url) else "openai-compatible"
    else:
        name = "openai"
    if model is None:
        if name == "deepseek":
            model = DEFAULT_DEEPSEEK_MODEL
        elif name == "openai":
            model = DEFAULT_OPENAI_MODEL
        else:
            raise SettingsError(
                f"--base-url {base_url} is set but no model: name one with --model "
                "(e.g. --model qwen2.5:7b for Ollama)"
            )
    return Provider("openai-compatible", name, model, base_url, key, api_key_env=key_source)


def _is_local(url: str) -> bool:
    return any(h in url for h in ("://127.", "://localhost", "://[::1]", "://0.0.0.0"))
