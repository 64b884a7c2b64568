"""Context windows of well-known models.

The table holds only figures the vendors publish for their own serving. Self-hosted models
(llama, qwen) list the window the weights support natively; a server may be started with a
smaller one (llama.cpp's ``--ctx-size``, vLLM's ``--max-model-len``), which is what settings
overrides are for. An unknown model gets ``None``: the gauge says so rather than guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

V = TypeVar("V")

KNOWN_CONTEXT_WINDOWS: Mapping[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "gpt-5-chat": 128_000,  # the ChatGPT snapshot has a smaller window than the API models
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    # DeepSeek API (V3.x behind both names)
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    # Open weights, native window. Ollama spells them "llama3.1:8b", Hugging Face
    # "meta-llama/Llama-3.1-8B-Instruct"; both forms are listed.
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    # Qwen2.5 and Qwen3 reach 131,072 only with YaRN scaling switched on in the server; the
    # native figure is the safe one (an overestimate means overflow errors, not early compaction).
    "qwen2.5": 32_768,
    "qwen3": 32_768,
    "smollm2": 8_192,
}

# A table key matches a longer name only at one of these separators, so "o3" covers
# "o3-2025-04-16" but "gpt-4" would never swallow "gpt-4o".
_SEPARATORS = ("-", ":", "@", "_")


def normalize_model(model: str) -> str:
    # Routers and Hugging Face ids carry an owner prefix ("openai/gpt-4o"); the window belongs
    # to the model, not the owner.
    return model.strip().lower().rsplit("/", 1)[-1]


def _lookup(name: str, table: Mapping[str, V]) -> V | None:
    if name in table:
        return table[name]
    best: str | None = None
    for key in table:
        at_separator = name.startswith(key) and name[len(key)] in _SEPARATORS
        if at_separator and (best is None or len(key) > len(best)):
            best = key
    return table[best] if best is not None else None


def known_context_window(model: str, overrides: Mapping[str, int] | None = None) -> int | None:
    """The context window of ``model`` in tokens, or ``None`` when it is not known.

    ``overrides`` (from settings) win over the built-in table; see :func:`model_entry`.
    """
    return model_entry(model, KNOWN_CONTEXT_WINDOWS, overrides)


def model_entry(
    model: str, table: Mapping[str, V], overrides: Mapping[str, V] | None = None
) -> V | None:
    """``model``'s entry in a per-model ``table`` (windows, prices), or None.

    ``overrides`` (from settings) win over the table. Lookup is case-insensitive, ignores an
    owner prefix such as ``openai/``, and falls back to the longest key that is a prefix of
    the name at a separator, so dated variants (``gpt-4o-2024-08-06``) and tagged ones
    (``llama3.1:8b``) resolve to their family.
    """
    if overrides:
        if model in overrides:
            return overrides[model]
        folded = {normalize_model(k): v for k, v in overrides.items()}
        found = _lookup(normalize_model(model), folded)
        if found is not None:
            return found
    return _lookup(normalize_model(model), table)
