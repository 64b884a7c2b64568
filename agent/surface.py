"""The surface: the ordered list of event seqs the model sees, derived from the log.

Append pushes a seq. Replace finds ``start`` and ``end`` by *position*, requires
``index(start) <= index(end)``, splices that inclusive span out, puts the new seq there and
bumps ``generation``. Positions, not numbers: after a head-anchored compaction a high seq
sits at position 0, so ``start > end`` numerically is normal.

Validation (:meth:`Surface.check`) never mutates; :meth:`Surface.apply` assumes a checked
event. The same code path serves live appends and replay on load.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.events import Event, SurfaceReplace, ToolResult
from agent.registry import EventError


class SurfaceError(EventError):
    """A surface operation that does not fit the current surface."""


class Surface:
    def __init__(self) -> None:
        self.nodes: list[int] = []
        self.generation = 0

    def check(self, event: Event, events: Sequence[Event]) -> tuple[int, int] | None:
        """Validate ``event``'s surface op; return the (start, end) positions of a replace."""
        op = event.surface_op
        if not isinstance(op, SurfaceReplace):
            return None
        try:
            i = self.nodes.index(op.start)
        except ValueError:
            raise SurfaceError(f"replace start {op.start} is not on the surface") from None
        try:
            j = self.nodes.index(op.end)
        except ValueError:
            raise SurfaceError(f"replace end {op.end} is not on the surface") from None
        if i > j:
            raise SurfaceError(
                f"replace start {op.start} (position {i}) comes after end {op.end} (position {j})"
            )
        shadowed = self.nodes[i : j + 1]
        cited = set(event.source_event_seqs or ())
        missing = [s for s in shadowed if s not in cited]
        if missing:
            raise SurfaceError(
                "a replacement must cite every shadowed seq in source_event_seqs; "
                f"missing {missing}"
            )
        if isinstance(event, ToolResult):
            old = events[shadowed[0]]
            if len(shadowed) != 1 or not isinstance(old, ToolResult):
                raise SurfaceError("a tool/result replace must shadow exactly one tool/result")
            if old.data.model_dump(exclude={"content"}) != event.data.model_dump(
                exclude={"content"}
            ):
                raise SurfaceError("a tool/result replace may change only the content")
        return i, j

    def apply(self, event: Event, span: tuple[int, int] | None) -> None:
        if not event.on_surface:
            return
        if span is None:
            self.nodes.append(event.seq)
            return
        i, j = span
        self.nodes[i : j + 1] = [event.seq]
        self.generation += 1
