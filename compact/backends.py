"""The compaction backends by name: what the ``compaction.backend`` setting chooses from.

One entry today, ``basic`` (:mod:`compact.basic`). A backend is a folder beside it holding a
:data:`~compact.contract.service.BuildBackend` (its parts in, a
:class:`~compact.contract.service.CompactService` out); adding one is that folder, its line
in :data:`_BACKENDS` (or a :func:`register` call) and a test. The composition root builds
the one the settings name with :func:`build`; nothing else names a backend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from compact import basic
from compact.contract.policy import CompactionSettings, load_compaction_settings
from compact.contract.service import BackendParts, BuildBackend, CompactService

_BACKENDS: dict[str, BuildBackend] = {"basic": basic.build}


class UnknownBackend(ValueError):
    """``compaction.backend`` names no registered backend."""

    def __init__(self, name: str) -> None:
        known = ", ".join(sorted(_BACKENDS))
        super().__init__(
            f"backend: no compaction backend is named {name!r}; set it to one of: {known}"
        )


def names() -> list[str]:
    """The registered backends' names, sorted."""
    return sorted(_BACKENDS)


def register(name: str, build: BuildBackend) -> Callable[[], None]:
    """Make ``build`` the backend named ``name``; returns the function that removes it.

    Raises:
        ValueError: a backend of that name is registered already.
    """
    if name in _BACKENDS:
        raise ValueError(f"a compaction backend named {name!r} is registered already")
    _BACKENDS[name] = build

    def unregister() -> None:
        _BACKENDS.pop(name, None)

    return unregister


def build(parts: BackendParts) -> CompactService:
    """The backend ``parts.settings.backend`` names, built (not yet installed).

    Raises:
        UnknownBackend: no backend of that name.
    """
    name = parts.settings.backend
    if name not in _BACKENDS:
        raise UnknownBackend(name)
    return _BACKENDS[name](parts)


def load_settings(raw: Mapping[str, Any], window: int | None = None) -> CompactionSettings:
    """The ``[compaction]`` table validated (:func:`load_compaction_settings`), its backend
    among the registered ones; a ``ValueError`` holds one line per error, each named under
    ``compaction.``."""
    try:
        settings = load_compaction_settings(raw, window)
    except ValueError as exc:
        lines = str(exc).splitlines()
        name = raw.get("backend", "basic")
        if isinstance(name, str) and name not in _BACKENDS:
            lines.append(f"compaction.{UnknownBackend(name)}")
        raise ValueError("\n".join(lines)) from None
    if settings.backend not in _BACKENDS:
        raise ValueError(f"compaction.{UnknownBackend(settings.backend)}")
    return settings
