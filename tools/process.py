"""The bash process as asyncio sees it: its output piped into the capture, its exit
signalled, and its whole process group killed."""

from __future__ import annotations

import asyncio
import contextlib
import os

from tools.capture import Capture

DRAIN_GRACE_S = 0.5
"""How long output may keep flowing after bash exits (background jobs holding the pipe)."""
TERM_GRACE_S = 0.5
"""How long a cancelled command gets to exit on SIGTERM before the group is SIGKILLed."""
REAP_WAIT_S = 2.0


class BashProcess(asyncio.SubprocessProtocol):
    """Feeds output chunks to the capture as they arrive and signals exit and end of output.

    The low-level protocol is used because ``Process.wait()`` also waits for the pipe to
    close, which a background job can hold open long after bash has exited.
    """

    def __init__(self, capture: Capture, loop: asyncio.AbstractEventLoop) -> None:
        self.capture = capture
        self.exited: asyncio.Future[None] = loop.create_future()
        self.drained: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.capture.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.drained.done():
            self.drained.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def settle(*futures: asyncio.Future[None], timeout: float) -> bool:
    """Wait until all futures are done or ``timeout`` passes, without cancelling them."""
    _, pending = await asyncio.wait(futures, timeout=timeout)
    return not pending
