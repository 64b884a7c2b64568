"""Snapshots around a command: one before it runs and one after, unless its sandbox is
``read-only`` (it cannot write the working directory); what changed between them goes on
the command's result."""

from __future__ import annotations

import asyncio

from tools.base import SandboxMode
from tools.snapshots.changes import Recorded
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

    async def after(self, before: str | None) -> Recorded | None:
        """The snapshot after the command that ``before`` preceded, with what it changed."""
        if before is None:
            return None
        # In a thread: the git calls never hold up the event loop.
        return await asyncio.to_thread(self._after, before)

    def _after(self, before: str) -> Recorded | None:
        try:
            after, found = self.repo.snapshot_since(before)
        except SnapshotUnavailable as exc:
            self.unavailable = self.unavailable or str(exc)
            return None
        return Recorded(before, after, tuple(found))

    def _take(self) -> str | None:
        try:
            return self.repo.snapshot()
        except SnapshotUnavailable as exc:
            self.unavailable = self.unavailable or str(exc)
            return None
