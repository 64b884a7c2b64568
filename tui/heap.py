"""The garbage collector and a long session.

A resumed session keeps its events and their view for as long as it is open: tens of
thousands of objects that the collector's full passes would scan again and again. With a
5,000-event session each full pass took about 0.2 s, and one came every few pages of "show
earlier" — a visible stall. So the session the app opens with is frozen once it is loaded
(:func:`gc.freeze`: left out of every later pass, still freed by reference counting),
before any widget is built: widgets form reference cycles, and a frozen cycle is never
freed.

When another session replaces it (``/new``, ``/resume``), or the app ends, the freeze is
lifted, so what the old one left can be collected; the new session is not frozen. Freezing
it safely would need the moment when nothing refers to the old widgets any more (Textual's
layout keeps them until its next pass), and a freeze before that moment would keep them
forever.
"""

from __future__ import annotations

import gc


def keep_loaded() -> None:
    """Freeze everything alive now: call it once, before any widget is built."""
    gc.freeze()


def release_loaded() -> None:
    """Lift the freeze: what was frozen is the collector's again (its next full pass frees
    what is garbage; no pass is forced here, where a person waits)."""
    gc.unfreeze()
