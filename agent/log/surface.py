"""The surface: the ordered list of event seqs the model sees, derived from the log.

Append pushes a seq. Replace finds ``start`` and ``end`` by *position*, requires
``index(start) <= index(end)``, splices that inclusive span out, puts the new seq there and
bumps ``generation``. Positions, not numbers: after a head-anchored compaction a high seq
sits at position 0, so ``start > end`` numerically is normal.

Positions are looked up in an index, not by scanning the list: a session can hold thousands
of one-node replaces (the pruner's), each checked on append and again on every load. The
index follows appends and one-node replaces; a span replace (a compaction) shifts the nodes
after it, so the index is rebuilt once, at the next lookup.

A restore (an undone compaction, carried by a log-only event) puts back, at the position of
a span replacement, the seqs that replacement shadowed, in their order; it bumps
``generation`` like a replace. Only a replacement still on the surface can be restored.

A revise (a corrected checkpoint, carried by a log-only event) gives a node on the surface
new text: the node keeps its seq and place, :attr:`Surface.revised` says which event's text
it now shows. A restore naming the revising event takes the newest revision of a node back
(the text before it returns); it bumps ``generation`` like a replace.

Validation (:meth:`Surface.check`) never mutates; :meth:`Surface.apply` assumes a checked
event. The same code path serves live appends and replay on load.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.log.events import Event, SurfaceReplace, SurfaceRestore, SurfaceRevise, ToolResult
from agent.log.registry import EventError


class SurfaceError(EventError):
    """A surface operation that does not fit the current surface."""


class Surface:
    def __init__(self) -> None:
        self.nodes: list[int] = []
        self.generation = 0
        self._positions: dict[int, int] = {}
        self._stale = False
        """True after a span replace, until the next lookup rebuilds ``_positions``."""
        self.shadowed: dict[int, list[int]] = {}
        """Replace (and restore) event seq -> the seqs it took off the surface, in order."""
        self.revised: dict[int, int] = {}
        """Node seq -> the seq of the revising event whose text it shows now."""
        self.revisions: dict[int, tuple[int, int | None]] = {}
        """Revising event seq -> (the node it revised, the revision it took the place of)."""
        self.texts: dict[int, str] = {}
        """Revising event seq -> the text it gave its node."""

    def text(self, seq: int) -> str | None:
        """The revised text node ``seq`` shows, None when it shows its own."""
        revision = self.revised.get(seq)
        return None if revision is None else self.texts[revision]

    def position(self, seq: int) -> int | None:
        """The position of ``seq`` on the surface, None when it is not there."""
        if self._stale:
            self._positions = {n: i for i, n in enumerate(self.nodes)}
            self._stale = False
        return self._positions.get(seq)

    def check(self, event: Event, events: Sequence[Event]) -> tuple[int, int] | None:
        """Validate ``event``'s surface op; return the (start, end) positions of a replace."""
        op = event.surface_op
        if isinstance(op, SurfaceRestore):
            return self._check_restore(op)
        if isinstance(op, SurfaceRevise):
            if self.position(op.target) is None:
                raise SurfaceError(f"revise: target {op.target} is not on the surface")
            return None
        if not isinstance(op, SurfaceReplace):
            return None
        i = self.position(op.start)
        if i is None:
            raise SurfaceError(f"replace start {op.start} is not on the surface")
        j = self.position(op.end)
        if j is None:
            raise SurfaceError(f"replace end {op.end} is not on the surface")
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

    def _check_restore(self, op: SurfaceRestore) -> tuple[int, int]:
        if op.replacement in self.revisions:
            target, _ = self.revisions[op.replacement]
            i = self.position(target)
            if i is None or self.revised.get(target) != op.replacement:
                raise SurfaceError(
                    f"restore: revision {op.replacement} is not the text its node shows now"
                )
            return i, i
        i = self.position(op.replacement)
        if i is None:
            raise SurfaceError(f"restore: replacement {op.replacement} is not on the surface")
        back = self.shadowed.get(op.replacement)
        if not back:
            raise SurfaceError(f"restore: {op.replacement} shadowed nothing")
        if any(self.position(seq) is not None for seq in back):
            raise SurfaceError("restore: a seq it would put back is on the surface already")
        return i, i

    def apply(self, event: Event, span: tuple[int, int] | None) -> None:
        op = event.surface_op
        if isinstance(op, SurfaceRevise):
            self.revisions[event.seq] = (op.target, self.revised.get(op.target))
            self.texts[event.seq] = op.content
            self.revised[op.target] = event.seq
            self.generation += 1
            return
        if isinstance(op, SurfaceRestore) and op.replacement in self.revisions:
            target, previous = self.revisions[op.replacement]
            if previous is None:
                del self.revised[target]
            else:
                self.revised[target] = previous
            self.generation += 1
            return
        if span is not None:
            self.shadowed[event.seq] = self.nodes[span[0] : span[1] + 1]
        if isinstance(event.surface_op, SurfaceRestore) and span is not None:
            self._stale = True
            self._positions = {}
            self.nodes[span[0] : span[0] + 1] = self.shadowed[event.surface_op.replacement]
            self.generation += 1
            return
        if not event.on_surface:
            return
        if span is None:
            if not self._stale:
                self._positions[event.seq] = len(self.nodes)
            self.nodes.append(event.seq)
            return
        i, j = span
        if i == j and not self._stale:
            del self._positions[self.nodes[i]]
            self._positions[event.seq] = i
        else:
            self._stale = True
            self._positions = {}
        self.nodes[i : j + 1] = [event.seq]
        self.generation += 1
