"""How the app ends when the system asks, or on an error nothing caught (a mixin of
:class:`tui.app.ReeflineApp`).

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
from typing import Any, Protocol

from tui.runtime import Runtime
from tui.terminal_state import LEAVE_APPLICATION_MODE, TtyState, restore_terminal

TERMINATE_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT)
SHUTDOWN_WAIT_S = 5.0
"""How long a cancelled turn may take to close itself before the app leaves anyway."""
EXIT_TERMINATED = 143


class ShutdownHost(Protocol):
    """What the shutdown needs of the app that mixes it in."""

    runtime: Runtime
    turn_worker: Any
    compact_worker: Any
    _terminating: bool
    _tty_before: TtyState | None

    def run_worker(self, work: Any, *, group: str = "default") -> Any: ...
    def exit(self, result: Any = None, return_code: int = 0) -> None: ...
    def _terminate(self, sig: int) -> None: ...
    async def _shut_down(self, sig: int) -> None: ...


class Shutdown:
    def _watch_signals(self: ShutdownHost) -> None:
        """Handle the termination signals on the app's loop (from its mount)."""
        loop = asyncio.get_running_loop()
        for sig in TERMINATE_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._terminate, sig)

    def _terminate(self: ShutdownHost, sig: int) -> None:
        if not self._terminating:
            self._terminating = True
            self.run_worker(self._shut_down(sig), group="shutdown")

    async def _shut_down(self: ShutdownHost, sig: int) -> None:
        for worker in (self.turn_worker, self.compact_worker):
            if worker is not None and not worker.is_finished:
                worker.cancel()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(worker.wait(), SHUTDOWN_WAIT_S)
        if sig == signal.SIGHUP:
            restore_terminal(self._tty_before, LEAVE_APPLICATION_MODE)
            with contextlib.suppress(Exception):
                self.runtime.close()
            os._exit(128 + sig)
        self.exit(return_code=EXIT_TERMINATED if sig == signal.SIGTERM else 128 + sig)

    def _fatal_error(self: Any) -> None:
        """Exit after an unhandled exception with a traceback that shows no local variables:
        Textual's report prints every frame's locals, which hold what must not reach a screen
        (a client with the API key, the user's text, a model's output). A private hook of
        Textual's, the one place that report is built."""
        from rich.segment import Segments
        from rich.traceback import Traceback

        self.bell()
        traceback = Traceback(show_locals=False, width=None)
        self._exit_renderables.append(
            Segments(self.console.render(traceback, self.console.options))
        )
        self._close_messages_no_wait()
