"""Tool pairing at the edges of a range: no compaction may split a tool call from its result.

Every backend asks these before it cuts the surface. The counts are folded once per surface
generation and kept per session (weakly), so a pressure check costs O(1) per new node.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from agent.log.events import AssistantMessage, ToolResult
from agent.log.session import Session
from agent.log.surface import SurfaceError


@dataclass
class _Pairing:
    generation: int
    nodes: list[int] = field(default_factory=list)
    position: dict[int, int] = field(default_factory=dict)
    open_after: list[int] = field(default_factory=lambda: [0])
    """``open_after[i]``: calls minus results after the first ``i`` nodes (cut ``i``)."""


_PAIRING: weakref.WeakKeyDictionary[Session, _Pairing] = weakref.WeakKeyDictionary()


def _fold(cache: _Pairing, session: Session, seqs: list[int]) -> None:
    opened = cache.open_after[-1]
    added: list[int] = []
    for seq in seqs:
        event = session.events[seq]
        if isinstance(event, AssistantMessage):
            opened += len(event.data.tool_calls)
        elif isinstance(event, ToolResult):
            opened -= 1
            if opened < 0:
                raise SurfaceError(f"corrupt surface: tool result {seq} answers no open tool call")
        added.append(opened)
    # Validated first, then committed: a corrupt tail leaves the cache as it was.
    for seq, value in zip(seqs, added, strict=True):
        cache.position[seq] = len(cache.nodes)
        cache.nodes.append(seq)
        cache.open_after.append(value)


def _pairing(session: Session) -> _Pairing:
    """The per-session cache: folds appended nodes while ``replace_generation`` holds,
    rebuilds after a replace."""
    surface = session.surface
    cache = _PAIRING.get(session)
    if (
        cache is None
        or cache.generation != session.replace_generation
        or len(cache.nodes) > len(surface)
    ):
        cache = _Pairing(session.replace_generation)
        _fold(cache, session, list(surface))
        _PAIRING[session] = cache
    elif len(cache.nodes) < len(surface):
        _fold(cache, session, list(surface[len(cache.nodes) :]))
    return cache


def _position(session: Session, seq: int) -> tuple[_Pairing, int]:
    cache = _pairing(session)
    try:
        return cache, cache.position[seq]
    except KeyError:
        raise SurfaceError(f"seq {seq} is not on the surface") from None


def tool_pairing_balanced_before(session: Session, seq: int) -> bool:
    """True when a cut just before ``seq`` splits no tool call from its result."""
    cache, i = _position(session, seq)
    return cache.open_after[i] == 0


def tool_pairing_balanced_after(session: Session, seq: int) -> bool:
    """True when a cut just after ``seq`` splits no tool call from its result."""
    cache, i = _position(session, seq)
    return cache.open_after[i + 1] == 0


def open_calls_at_cuts(session: Session) -> list[int]:
    """``open_after`` for every cut of the current surface (index ``i`` = before node ``i``)."""
    return list(_pairing(session).open_after)
