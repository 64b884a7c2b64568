"""The model a session's requests go to: the offline demo model, or an OpenAI-compatible
server with the provider's cache plan (:func:`agent.provider.provider_cache`: cache
breakpoints for Claude models and Anthropic-compatible endpoints) and the session's id as
its ``prompt_cache_key``."""

from __future__ import annotations

from agent.llm.chat import ChatModel
from agent.llm.retry import RetryPolicy
from agent.provider import Provider, provider_cache
from agent.settings import Settings
from agent.tokens import Estimator
from tui.demo import DEMO_CONTEXT_WINDOW, ScriptedModel


def build_model(
    provider: Provider, settings: Settings, estimator: Estimator, cache_key: str | None = None
) -> ChatModel:
    """``cache_key``: the session's id, sent as ``prompt_cache_key`` (not to the demo model)."""
    if provider.kind == "scripted":
        window = settings.context_window or DEMO_CONTEXT_WINDOW
        return ScriptedModel(estimator, context_window=window, delay_s=0.0)
    from agent.llm.client import OpenAICompatible  # the SDK (~0.4 s to import): not for the demo

    return OpenAICompatible(
        base_url=provider.base_url,
        api_key=provider.api_key,
        provider=provider.name,
        retry=RetryPolicy(max_attempts=1 + settings.max_retries),
        context_windows=dict(settings.context_windows),
        request_timeout=settings.request_timeout,
        request_deadline=settings.request_deadline,
        api_key_env=provider.api_key_env,
        breakpoints=provider_cache(provider, settings).breakpoints,
        cache_key=cache_key,
    )
