""" "Compacting soon": whether the next automatic compaction is expected within about two
steps, from the context now, the auto mark and the typical growth of one step
(:class:`compact.basic.schedule.StepSizes`), so the gauge can warn before it happens."""

from __future__ import annotations

SOON_STEPS = 2


def compacting_soon(total: int, mark: int | None, growth: int | None) -> bool:
    """True when ``total`` is below ``mark`` but ``SOON_STEPS`` steps of ``growth`` reach it."""
    if mark is None or not growth:
        return False
    return total < mark <= total + SOON_STEPS * growth
