"""Snapshots around a command: one before it runs and one after, unless its sandbox is
``read-only`` (it cannot write the working directory); what changed between them goes on
the command's result."""

from __future__ import annotations

import asyncio

from tools.base import SandboxMode
from tools.snapshots.changes import Recorded, changes
from tools.snapshots.shadow import ShadowRepo, SnapshotUnavailable


class Recorder:
    """Takes the snapshots of ``repo`` around commands. When one cannot be taken the
    command still runs, unrecorded, and :attr:`unavailable` says why (the first reason)."""

    def __init__(self, repo: ShadowRepo) -> None:
        self.repo = repo
        self.unavailable: str | None = None

    async def before(self, mode: SandboxMode) -> str | None:
        """The snapshot before a command in ``mode`` (None: none is taken)."""
        if mode == "read-only":
            return None
        return await asyncio.to_thread(self._take)

    def after(self, before: str | None) -> Recorded | None:
        """The snapshot after the command that ``before`` preceded, with what it changed.
        Synchronous: it also runs while the command's task is being cancelled."""
        if before is None:
            return None
        after = self._take()
        if after is None:
            return None
        try:
            found = changes(self.repo.git, before, after)
        except Exception as exc:
            self.unavailable = self.unavailable or str(exc)
            found = []
        return Recorded(before, after, tuple(found))

    async def after_async(self, before: str | None) -> Recorded | None:
        return await asyncio.to_thread(self.after, before)

    def _take(self) -> str | None:
        try:
            return self.repo.snapshot()
        except SnapshotUnavailable as exc:
            self.unavailable = self.unavailable or str(exc)
            return None
