"""The quiet moment: a key that acts (answers the approval dialog, undoes a compaction from
its timeline row) counts as pressed on purpose only with no typing around it, so the letters
of a message typed meanwhile never act. One figure for every place that applies it."""

from __future__ import annotations

QUIET_S = 0.6
"""The quiet moment: how long no key may be typed around a key for it to act (and how long
the approval dialog is up before a key answers it)."""

TICK_S = 0.05
"""How often a waiting key's quiet moment is looked at (a pending ``y`` or ``n`` of the
dialog, a ``u`` on a timeline row)."""
