"""What an event does to the surface (the messages the model is sent): append itself,
replace a span, put a replaced span back, or give a node new text. Carried in an event's
``surface_op`` (:mod:`agent.log.events`); folded by :mod:`agent.log.surface`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from agent.log.event_data import Data


class SurfaceAppend(Data):
    op: Literal["append"] = "append"


class SurfaceReplace(Data):
    """Replace the surface span from ``start`` to ``end`` (seqs, by *position*) with this event."""

    op: Literal["replace"] = "replace"
    start: int
    end: int


class SurfaceRestore(Data):
    """Put back, at the position of the span replacement ``replacement``, the seqs it took
    off the surface (an undone compaction). Carried by a log-only event: it puts nothing of
    its own on the surface."""

    op: Literal["restore"] = "restore"
    replacement: int


class SurfaceRevise(Data):
    """Give the surface node ``target`` new text: the node keeps its place and its role, the
    model reads ``content`` in place of its own (a corrected checkpoint). Carried by a
    log-only event; a ``restore`` naming that event takes the revision back (the text before
    it returns)."""

    op: Literal["revise"] = "revise"
    target: int
    content: str


SurfaceOp = Annotated[
    SurfaceAppend | SurfaceReplace | SurfaceRestore | SurfaceRevise, Field(discriminator="op")
]
