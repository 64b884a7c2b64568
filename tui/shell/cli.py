"""Command-line entry point: ``reefline``.

``reefline -p "task"`` runs one turn headless; ``reefline`` alone starts the interactive
front end. Exit codes: 0 ok, 1 error, 2 usage, 130 interrupted, 141 stdout closed
(see :func:`tui.exit_codes.closed_stdout`), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import TYPE_CHECKING

from tui.exit_codes import EXIT_ERROR, EXIT_USAGE
from tui.shell.arguments import SUBCOMMANDS, build_parser, given_flags, settings_flags
from tui.text import clean

if TYPE_CHECKING:
    from agent.settings import Settings
    from tools.modes import ApprovalPolicy
    from tools.snapshots.recording import Recorder
    from tui.runtime.runtime import Runtime

# What runs a session (the model client, the app) is imported once it is needed: --help,
# --version and the session tools start without it.


def run_interactive(settings: Settings, args: argparse.Namespace) -> int:
    """``reefline`` without -p: the Textual app, or the plain REPL (``--plain``, or whenever
    stdin or stdout is not a terminal). Bash approval defaults to ask, and to deny when
    nobody can answer (stdin is not a terminal)."""
    import asyncio

    from tui import heap

    plain = args.plain or not (sys.stdin.isatty() and sys.stdout.isatty())
    if not plain:
        heap.defer_collection()  # until the app has the session loaded (see tui.heap)
    approve: ApprovalPolicy = "ask" if sys.stdin.isatty() else "deny"
    runtime = open_runtime(settings, args, approve, delay_s=0.0 if plain else 0.02)
    if isinstance(runtime, int):
        return runtime
    if plain:
        from tui.line.repl import run_repl

        return asyncio.run(run_repl(runtime))
    from tui.app.app import run_app

    return run_app(runtime)


def open_runtime(
    settings: Settings, args: argparse.Namespace, approve: ApprovalPolicy, delay_s: float = 0.0
) -> Runtime | int:
    """The runtime the flags ask for (a new session, or the one they resume) with ``approve``
    as the default approval policy and ``delay_s`` as the demo model's; or, when it cannot be
    opened, the exit code, having said why on stderr (and given back a collection deferred for
    the app: :func:`tui.heap.resume_collection`). The first snapshot is begun before the rest
    is loaded, and runs while it is (:mod:`tui.runtime.snapshots_soon`)."""
    begun = _begin_snapshots(settings, args, approve)
    from agent.settings import SettingsError
    from tui import heap
    from tui.runtime.runtime import StartupError
    from tui.runtime.wiring import build_runtime

    try:
        return build_runtime(
            settings,
            resume=args.resume,
            continue_last=args.continue_last,
            chosen=given_flags(args),
            default_approve=approve,
            scripted_delay_s=delay_s,
            begun=begun,
            name=args.name,
        )
    except (StartupError, SettingsError) as exc:
        said, code = clean(str(exc)), EXIT_USAGE
    except OSError as exc:
        said, code = f"cannot open the session log: {clean(str(exc))}", EXIT_ERROR
    heap.resume_collection()
    print(f"reefline: {said}", file=sys.stderr)
    return code


def _begin_snapshots(
    settings: Settings, args: argparse.Namespace, approve: ApprovalPolicy
) -> Recorder | None:
    from tui.runtime.snapshots_soon import begin_snapshots

    resuming = bool(args.resume or args.continue_last)
    return begin_snapshots(settings, resuming=resuming, default_approve=approve)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        from tui.shell import subcommands

        return subcommands.main(argv)
    parser = build_parser()
    if argv and not argv[0].startswith("-"):
        near = difflib.get_close_matches(argv[0], SUBCOMMANDS, n=1)
        hint = f"did you mean 'reefline {near[0]}'? " if near else ""
        names = ", ".join(SUBCOMMANDS)
        parser.error(f"unknown command {argv[0]!r}: {hint}the commands are {names}")
    args = parser.parse_args(argv)  # --help and --version end here, having loaded little
    from agent.settings import SettingsError, load_settings
    from compact.backends import load_settings as load_compaction_settings

    if args.json and args.prompt is None:
        parser.error("--json needs -p PROMPT")
    if args.prompt is not None and not args.prompt.strip():
        parser.error("the prompt is empty: give -p the task, e.g. -p 'why does the build fail?'")
    try:
        settings = load_settings(
            settings_flags(args), tables={"compaction": load_compaction_settings}
        )
    except SettingsError as exc:
        print(f"reefline: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if args.prompt is None:
        return run_interactive(settings, args)
    return run_headless(settings, args)


def run_headless(settings: Settings, args: argparse.Namespace) -> int:
    """``reefline -p``: one turn, the answer on stdout (see :mod:`tui.line.headless`)."""
    import asyncio

    from tui import heap
    from tui.line.headless import run_prompt

    runtime = open_runtime(settings, args, "deny")
    if isinstance(runtime, int):
        return runtime
    heap.keep_loaded()  # the libraries and the session live as long as this process

    async def headless() -> int:
        try:
            return await run_prompt(runtime, args.prompt, json_mode=args.json)
        finally:
            await runtime.aclose()

    try:
        return asyncio.run(headless())
    except BrokenPipeError:
        runtime.close()
        raise  # stdout's reader went away: the entry point ends quietly
    except OSError as exc:
        print(f"reefline: cannot write the session log: {clean(str(exc))}", file=sys.stderr)
        runtime.close()
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
