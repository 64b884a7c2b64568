"""The process exit codes every front end and subcommand uses."""

from __future__ import annotations

EXIT_OK = 0


EXIT_ERROR = 1


EXIT_USAGE = 2


EXIT_INTERRUPTED = 130


EXIT_CLOSED_PIPE = 141
"""stdout's reader went away (``reefline timeline --json | head``): what a shell reports for
a tool that SIGPIPE ended (128 + 13), as ``cat`` or ``git`` do, and nothing is printed."""


def closed_stdout() -> int:
    """stdout's reader is gone: point the descriptor at /dev/null, so the interpreter's last
    flush does not complain on stderr, and return :data:`EXIT_CLOSED_PIPE`."""
    import os
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # stdout is not a descriptor (a test's buffer): nothing will flush to a pipe
    return EXIT_CLOSED_PIPE
