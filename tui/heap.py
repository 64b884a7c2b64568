"""The garbage collector and a long session.

A resumed session keeps its events, their view and the first screen for as long as it is
open: tens of thousands of objects that the collector's full passes would scan again and
again. With a 5,000-event session each full pass took about 0.2 s, and one came every few
pages of "show earlier" — a visible stall. So once a session is on screen, what is alive is
frozen (:func:`gc.freeze`: left out of every later pass, still freed by reference counting).
A frozen cycle is never collected, so the freeze is lifted and everything collected first:
when another session replaces the shown one, its widgets are freed before the new freeze.

Widgets form reference cycles, so a page of history scrolled past and unmounted is freed
only by a full pass. Left to the collector, that pass came every three or four pages and
took several times a page's work; collected as each page is dropped, every page costs a
little more and none stalls (:func:`collect_dropped`).
"""

from __future__ import annotations

import gc


def keep_loaded() -> None:
    """Collect what is garbage now, then leave everything alive out of later passes. Call
    it once the screen no longer refers to what was removed (after a refresh)."""
    if gc.get_freeze_count():
        gc.unfreeze()
    gc.collect()
    gc.freeze()


def release_loaded() -> None:
    """Undo :func:`keep_loaded`: what was frozen is collected again from now on."""
    if gc.get_freeze_count():
        gc.unfreeze()
        gc.collect()


def collect_dropped() -> None:
    """Free what was just unmounted (a full pass over what is not frozen)."""
    gc.collect()
