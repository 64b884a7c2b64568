"""The process exit codes every front end and subcommand uses."""

from __future__ import annotations

EXIT_OK = 0


EXIT_ERROR = 1


EXIT_USAGE = 2


EXIT_INTERRUPTED = 130
