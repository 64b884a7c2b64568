"""How the app ends when the system asks, or on an error nothing caught.

Every signal that ends the app leaves the terminal as it found it: out of the alternate
screen, mouse reporting and bracketed paste off, the cursor shown, the line settings back.
SIGTERM, SIGQUIT and SIGINT (sent from outside: on the app's raw terminal ctrl+c is a key)
end the app as Esc then quit would: the running turn or ``/compact`` is cancelled (the loop
kills the bash group and closes the turn in the log) and the app exits, which restores the
terminal. SIGHUP, when the terminal closes or someone sends it: the turn is closed the same
way, then the terminal is restored by one write that cannot block (a terminal that is gone
refuses it, and Textual's own restore can wedge the exit there), the log is closed and the
process leaves at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterable
from typing import Any

from textual.worker import Worker

from tui.line.terminal_state import LEAVE_APPLICATION_MODE, TtyState, restore_terminal
from tui.runtime.runtime import Runtime

TERMINATE_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT)
SHUTDOWN_WAIT_S = 5.0
"""How long a cancelled turn may take to close itself before the app leaves anyway."""
EXIT_TERMINATED = 143


def watch_signals(on_signal: Callable[[int], None]) -> None:
    """Call ``on_signal(sig)`` for each termination signal, on the running loop."""
    loop = asyncio.get_running_loop()
    for sig in TERMINATE_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, sig)


async def shut_down(
    sig: int,
    running: Iterable[Worker[Any] | None],
    runtime: Runtime,
    tty_before: TtyState | None,
) -> int:
    """Cancel the ``running`` workers and wait for them to close their turn; returns the exit
    code. On SIGHUP it does not return: the terminal is put back and the process leaves."""
    for worker in running:
        if worker is not None and not worker.is_finished:
            worker.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), SHUTDOWN_WAIT_S)
    if sig == signal.SIGHUP:
        restore_terminal(tty_before, LEAVE_APPLICATION_MODE)
        with contextlib.suppress(Exception):
            runtime.close()
        os._exit(128 + sig)
    return EXIT_TERMINATED if sig == signal.SIGTERM else 128 + sig
