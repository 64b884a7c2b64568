"""The ``reefline`` entry point: moves the API keys out of the process environment, then
runs the CLI (see :mod:`agent.secret_env`). Imports nothing heavy before the re-exec."""

from __future__ import annotations

import os
import sys

from agent import secret_env


def main() -> int:
    if secret_env.FD_VARIABLE in os.environ:
        secret_env.receive()
    else:
        names = secret_env.key_names(sys.argv[1:], os.environ)
        secret_env.reexec_without(names, sys.argv)  # does not return when a key is set
    from tui import heap
    from tui.shell.cli import main as cli_main

    try:
        return cli_main()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # stdout's reader went away (``| head``): end quietly, as a Unix tool does.
        from tui.exit_codes import closed_stdout

        return closed_stdout()
    except Exception as exc:
        # Whatever no front end caught: one plain line, no traceback full of locals (set
        # REEFLINE_DEBUG=1 to see it). The session log is written line by line; it is intact.
        if os.environ.get("REEFLINE_DEBUG"):
            raise
        from agent.redaction import clip
        from tools.terminal import visible

        print(
            f"reefline: internal error: {type(exc).__name__}: {visible(clip(str(exc), 2000))} "
            "(the session log is intact; REEFLINE_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 1
    finally:
        heap.freeze_for_exit()
