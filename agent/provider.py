"""Where requests go: the provider chosen from the settings and the environment, and which
key goes with it.

Explicit beats implicit: ``--demo``, then a base URL (``--base-url``, else
``OPENAI_BASE_URL``), the key variables (DeepSeek's first when the model names it); with
nothing configured, the offline demo model and a notice saying how to connect a real one.

A key goes only where it was meant to go (:func:`conventional_key`): ``OPENAI_API_KEY`` to
OpenAI's API or to the server ``OPENAI_BASE_URL`` names (the conventional pair),
``DEEPSEEK_API_KEY`` to DeepSeek's; any other server gets the key ``--api-key-env`` (or the
config's ``api_key_env``) names, else none. Servers are compared by scheme, host and port
(:func:`same_server`), never by a piece of text: ``https://api.openai.com.evil.example`` is
not OpenAI. The key is a :class:`~agent.secret.Secret`: never part of a ``repr``.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse
from collections.abc import Collection
from dataclasses import dataclass, field

from agent import secret_env
from agent.llm.prompt_cache import CachePlan, cache_plan
from agent.log.events import ProviderData, ProviderKind
from agent.secret import Secret
from agent.settings import Settings, SettingsError, check_base_url

DEFAULT_OPENAI_MODEL = "gpt-4.1"


DEFAULT_DEEPSEEK_MODEL = "deepseek-chat"


DEEPSEEK_BASE_URL = "https://api.deepseek.com"


OPENAI_BASE_URL = "https://api.openai.com/v1"


CONVENTIONAL_KEYS = ("OPENAI_API_KEY", "DEEPSEEK_API_KEY")
"""The key variables whose destination is fixed by convention (:func:`conventional_key`)."""


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
    """The key sent to ``base_url``; None: no key is sent (no ``Authorization`` header)."""
    notice: str | None = None
    """One line for stderr / the banner (e.g. why the demo model is used)."""
    api_key_env: str | None = None
    """The NAME of the variable the key came from (for messages; the key itself never is)."""
    key_named: bool = False
    """The variable was named by ``--api-key-env`` (or the config): the one choice of a key
    a session remembers. A conventional key follows :func:`conventional_key` each time."""

    def record(self) -> ProviderData:
        """What the session log keeps of this provider (see :func:`session_settings`): the
        variable of the key only when it was named, as a resume needs nothing else."""
        return ProviderData(
            kind=self.kind,
            name=self.name,
            model=self.model,
            base_url=self.base_url,
            api_key_env=self.api_key_env if self.key_named else None,
        )


def provider_cache(provider: Provider, settings: Settings) -> CachePlan:
    """How requests to ``provider`` are shaped for its prompt cache and how long it keeps a
    prefix (the ``cache_breakpoints`` and ``cache_ttl_s`` settings over its defaults)."""
    return cache_plan(
        provider.name,
        provider.model,
        provider.base_url,
        breakpoints=settings.cache_breakpoints,
        ttl_s=settings.cache_ttl_s,
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
    the cloud); a flag does, and the caller says so. A recorded conventional key variable
    (written by versions that recorded every key's variable) is not a choice: the rule of
    :func:`conventional_key` decides again whether that key goes there."""
    if recorded is None:
        return settings
    chosen = PROVIDER_SETTINGS.intersection(chosen)
    if recorded.kind == "scripted":
        # A flag naming a real endpoint or model leaves the demo; otherwise it goes on.
        return settings if chosen - {"demo"} else settings.model_copy(update={"demo": True})
    update: dict[str, object] = {"demo": settings.demo if "demo" in chosen else False}
    if "base_url" not in chosen:
        # A key named on resume is for the session's own server (what a 401 advises).
        update["base_url"] = recorded.base_url or OPENAI_BASE_URL
        if "api_key_env" not in chosen:
            named = recorded.api_key_env
            update["api_key_env"] = None if named in CONVENTIONAL_KEYS else named
    if "model" not in chosen:
        update["model"] = recorded.model
    return settings.model_copy(update=update)


def same_server(url: str, other: str) -> bool:
    """Whether two URLs name the same server: scheme, host and port (the default port of
    the scheme when none is given); a URL that does not parse names none."""
    try:
        a, b = urllib.parse.urlsplit(url), urllib.parse.urlsplit(other)
        ports = (a.port, b.port)
    except ValueError:
        return False
    default = {"http": 80, "https": 443}
    return (
        bool(a.hostname)
        and a.scheme.lower() == b.scheme.lower()
        and a.hostname == b.hostname  # urlsplit lowers the host
        and (ports[0] or default.get(a.scheme.lower()))
        == (ports[1] or default.get(b.scheme.lower()))
    )


def conventional_key(base_url: str | None, model: str | None) -> str | None:
    """The conventional key variable meant for ``base_url`` (None: the default endpoint,
    chosen by the keys that are set), or None when no such key goes there: ``OPENAI_API_KEY``
    to OpenAI's API or to ``OPENAI_BASE_URL``'s server, ``DEEPSEEK_API_KEY`` to DeepSeek's.
    Only a variable that is set is returned."""
    meant: tuple[str, ...]
    if base_url is None:
        deepseek_first = (model or "").startswith("deepseek")
        meant = CONVENTIONAL_KEYS[::-1] if deepseek_first else CONVENTIONAL_KEYS
    elif same_server(base_url, DEEPSEEK_BASE_URL):
        meant = ("DEEPSEEK_API_KEY",)
    elif same_server(base_url, OPENAI_BASE_URL) or same_server(
        base_url, os.environ.get("OPENAI_BASE_URL") or ""
    ):
        meant = ("OPENAI_API_KEY",)
    else:
        meant = ()
    return next((name for name in meant if secret_env.key(name) is not None), None)


def resolve_provider(settings: Settings) -> Provider:
    """Choose the provider: ``--demo`` → scripted; a base URL or an API key → that endpoint;
    nothing configured → the scripted demo model with a notice on how to connect one. The
    key is the one ``--api-key-env`` names, else :func:`conventional_key`'s, else none;
    keys are read through :func:`agent.secret_env.key`."""
    if settings.demo:
        return Provider("scripted", "scripted", "scripted-demo")
    base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL") or None
    if base_url and not settings.base_url:
        check_base_url(base_url, "OPENAI_BASE_URL")
    model = settings.model
    key_source = settings.api_key_env or conventional_key(base_url, model)
    key = secret_env.key(key_source) if key_source else None
    if settings.api_key_env and key is None:
        raise SettingsError(
            f"--api-key-env names {settings.api_key_env}, but that environment variable is "
            "not set or empty"
        )
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
    name = _name(base_url)
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
    return Provider(
        "openai-compatible",
        name,
        model,
        base_url,
        key,
        api_key_env=key_source if key else None,
        key_named=bool(settings.api_key_env),
    )


def _name(base_url: str | None) -> str:
    """deepseek, openai, local (a loopback host) or openai-compatible."""
    if base_url is None or same_server(base_url, OPENAI_BASE_URL):
        return "openai"
    if same_server(base_url, DEEPSEEK_BASE_URL):
        return "deepseek"
    return "local" if _is_local(base_url) else "openai-compatible"


def _is_local(url: str) -> bool:
    """Whether ``url``'s host is this machine (``localhost``, a loopback or unspecified
    address)."""
    try:
        host = urllib.parse.urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified
