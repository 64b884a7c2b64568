"""``reefline sessions | timeline | compact | uncompact | export | fork | diff``: session tools.

Viewers (``sessions``, ``timeline``, ``export``) and ``fork`` open logs read-only, so they
never disturb a session another process is running (``fork`` writes a new one). ``compact``
resumes the session like ``--resume`` and runs ``/compact`` through the consumer tier
(``--dry-run``: says what it would do, calls no model); ``uncompact`` runs ``/uncompact``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from agent.config_file import SettingsError, configured_home, names_prices
from agent.formatting import plural
from agent.llm.prices import price_book
from agent.log.catalogue import NoSuchSession, catalogue, latest, resolve
from agent.log.store import InvalidSessionId, default_home, is_open_for_writing, open_private
from tools.terminal import json_safe
from tui.exit_codes import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from tui.text import clean, first_line, short_path

if TYPE_CHECKING:
    from collections.abc import Callable

    from agent.llm.prices import ModelPrice, PriceOf
    from agent.log.session import Session
    from compact.commands.compact import CommandOutcome
    from compact.commands.uncompact import UndoOutcome


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reefline", description="Session tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser(
        "sessions", help="list this folder's sessions, most recent first (--all: every folder)"
    )
    listing.add_argument("--all", action="store_true", help="every folder's sessions too")
    listing.add_argument("--home", type=Path, help="where sessions live")
    show = sub.add_parser("timeline", help="show the compaction timeline of a session")
    show.add_argument("session", nargs="?", help="session name or id (default: the most recent)")
    show.add_argument("--json", action="store_true", help="print JSON for machines")
    show.add_argument("--home", type=Path)
    compact = sub.add_parser("compact", help="compact a session now (like /compact)")
    compact.add_argument("--focus", help="what the summary should concentrate on")
    compact.add_argument(
        "--dry-run", action="store_true", help="say what it would summarize; call no model"
    )
    undo = sub.add_parser("uncompact", help="undo a session's compaction (like /uncompact)")
    undo.add_argument("-n", "--number", type=int, help="its #N in the timeline (default: newest)")
    for runs in (compact, undo):
        runs.add_argument(
            "session", nargs="?", help="session name or id (default: the most recent)"
        )
        runs.add_argument("--home", type=Path)
        runs.add_argument("--model", help="summarizer model (default: the session's own)")
        runs.add_argument("--base-url")
        runs.add_argument("--api-key-env", metavar="NAME")
        runs.add_argument("--context-window", type=int, metavar="TOKENS")
        runs.add_argument("--demo", action="store_true", default=None)
    export = sub.add_parser("export", help="write a session's transcript as Markdown")
    export.add_argument("session", nargs="?", help="session name or id (default: the most recent)")
    export.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    export.add_argument("--home", type=Path)
    fork = sub.add_parser(
        "fork", help="a new session from a session's log just before one of its prompts"
    )
    fork.add_argument("session", help="session name or id")
    fork.add_argument(
        "--at", type=int, metavar="SEQ", help="the seq of a turn's start or of its prompt"
    )
    fork.add_argument(
        "--restore-files",
        action="store_true",
        help="also put back the files the later commands changed (from their snapshots)",
    )
    fork.add_argument("--home", type=Path)
    diff = sub.add_parser("diff", help="show what a session's commands changed in files")
    diff.add_argument("session", nargs="?", help="session name or id (default: the most recent)")
    which = diff.add_mutually_exclusive_group()
    which.add_argument("--turn", type=int, metavar="N", help="only the commands of turn N")
    which.add_argument("--seq", type=int, metavar="S", help="only the command at seq S")
    diff.add_argument("--home", type=Path)
    sub.add_parser("mcp", help="start the configured MCP servers and list their tools")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "mcp":
        from tui.commands.mcp import run_mcp_listing

        return run_mcp_listing()
    if args.command in ("compact", "uncompact"):
        return _compact(args)
    try:
        # Only the home is needed: the settings' validation (pydantic) is not loaded.
        home = configured_home(args.home) or default_home()
    except SettingsError as exc:
        return _fail(str(exc), EXIT_USAGE)
    if args.command == "sessions":
        try:
            return _sessions(home, every=args.all)
        except SettingsError as exc:  # the config's prices, read once a log needs them
            return _fail(str(exc), EXIT_USAGE)
    return _view(args, home)


def _view(args: argparse.Namespace, home: Path) -> int:
    """``timeline``, ``export`` and ``fork``: open the session read-only and show it."""
    # Loaded here, not at start: ``reefline sessions`` reads file headers only.
    from agent.log.load_report import SessionLoadError
    from agent.log.session import Session
    from compact.contract.registry import build_registry
    from compact.reports.timeline import timeline
    from tui.shell.timeline_report import timeline_json, timeline_table
    from tui.view.export import export_markdown

    session_id = args.session or _latest(home)
    if session_id is None:
        return _fail(f"there are no sessions under {home / 'sessions'} yet", EXIT_USAGE)
    try:
        session_id = resolve(home, session_id)  # a name, or the start of one, does too
    except NoSuchSession as exc:
        if exc.matches:
            return _fail(str(exc), EXIT_USAGE)  # no match: the id's own error says why
    try:
        session = Session.open(home, session_id, registry=build_registry(), readonly=True)
    except (InvalidSessionId, FileNotFoundError, SessionLoadError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        return _fail(f"cannot read the session log: {exc}", EXIT_ERROR)
    if args.command == "fork":
        return _fork(session, args.at, restore_files=args.restore_files)
    if args.command == "diff":
        from tui.shell.file_subcommands import print_diff

        return print_diff(session, home, args.turn, args.seq)
    if args.command == "timeline":
        closed = not is_open_for_writing(session.path)
        records = timeline(session.events, closed=closed)
        if args.json:
            print(json_safe(timeline_json(records)))
        elif not records:
            print(f"Session {session.id} has no compactions yet.")
        else:
            print(clean(timeline_table(records, price_of=price_book(_configured_prices()))))
        return EXIT_OK
    # The export is read on terminals too (cat, less -R): written out, nothing obeyed.
    text = clean(export_markdown(session))
    if args.output:
        fd = open_private(args.output, os.O_WRONLY | os.O_TRUNC)  # a transcript is private
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {clean(str(args.output))}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _latest(home: Path) -> str | None:
    return latest(home)


def _sessions(home: Path, *, every: bool) -> int:
    """This folder's sessions (with ``every``, then every other folder's), most recent first:
    per session a line of facts (:func:`tui.view.session_list.facts`), what was asked and,
    when it called a model, what it used and cost: ``in 41.2k · 63% cached · ~$0.12 est.``."""
    from tui.view.session_list import asked, by_folder, facts

    listed = catalogue(home)
    if not listed:
        print(f"No sessions under {clean(str(home / 'sessions'))} yet.")
        return EXIT_OK
    here = str(Path.cwd().resolve())
    groups = by_folder(listed, here)
    shown = groups if every else [group for group in groups if group.here]
    if not shown:
        print(f"No sessions started in {clean(short_path(here))}.")
    spend = _spend_reader()
    for group in shown:
        print(clean(f"{group.folder}{' (this folder)' if group.here and every else ''}:"))
        for item in group.sessions:
            print(clean(f"  {item.id}  {facts(item)}"))
            for line in asked(item):
                print(clean(f"      {line}"))
            if item.head.problem is None and (said := spend(item.stored.path)):
                print(f"      {said}")
    others = sum(len(group.sessions) for group in groups if not group.here)
    if others and not every:
        folders = plural(len(groups) - len(shown), "other folder")
        print(f"{plural(others, 'session')} in {folders}: reefline sessions --all lists them.")
    return EXIT_OK


def _spend_reader() -> Callable[[Path], str]:
    """What a log says the session used and cost (empty when it called no model), folded
    from the lines that record model calls; prices are loaded on first need."""
    from agent.usage_totals import records_a_call, usage_of_log
    from tui.runtime.usage_reading import UsageReading

    price_of: PriceOf | None = None

    def spend(path: Path) -> str:
        nonlocal price_of
        try:
            with open(path, "rb") as f:
                lines = [line for line in f if records_a_call(line)]
        except OSError:
            return ""
        if not lines:
            return ""
        if price_of is None:
            price_of = price_book(_configured_prices())
        return UsageReading.of(usage_of_log(lines), price_of).summary

    return spend


def _configured_prices() -> dict[str, ModelPrice]:
    """The config's ``prices``, validated as the app validates them; the validation is
    loaded only when the config (or the environment) sets some."""
    if not names_prices():
        return {}
    from agent.settings import load_prices

    return load_prices()


def _compact(args: argparse.Namespace) -> int:
    import asyncio

    from agent.provider import PROVIDER_SETTINGS
    from agent.settings import load_settings
    from compact.backends import load_settings as load_compaction_settings
    from compact.commands.uncompact import uncompact
    from tui.runtime.compaction_outlook import dry_run_text
    from tui.runtime.runtime import StartupError  # the model client: only this tool needs it
    from tui.runtime.wiring import build_runtime

    try:
        settings = load_settings(
            {
                "home": args.home,
                "model": args.model,
                "base_url": args.base_url,
                "api_key_env": args.api_key_env,
                "context_window": args.context_window,
                "demo": args.demo,
            },
            tables={"compaction": load_compaction_settings},
        )
        home = settings.home.expanduser() if settings.home else default_home()
        session_id = args.session or _latest(home)
        if session_id is None:
            return _fail(f"there are no sessions under {home / 'sessions'} yet", EXIT_USAGE)
        # The session's own provider, unless a flag names another: the summary is asked
        # where the conversation was held, never of a cloud model because a key is set.
        given = {key for key in PROVIDER_SETTINGS if getattr(args, key) is not None}
        runtime = build_runtime(
            settings, resume=session_id, chosen=given, default_approve="deny", runs_turns=False
        )
    except (SettingsError, StartupError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        return _fail(f"cannot open the session log: {exc}", EXIT_ERROR)
    # Only the compaction's notices are said (retries, fallbacks); its outcome ends the run.
    runtime.observe(lambda event: None, lambda item: None, lambda notice: _say(notice.text))
    outcome: UndoOutcome | CommandOutcome
    try:
        if args.command == "uncompact":
            number = "" if args.number is None else str(args.number)
            outcome = uncompact(runtime.session, runtime.meter, runtime.agent.envelope(), number)
        elif args.dry_run:
            print(clean(dry_run_text(runtime)))
            return EXIT_OK
        else:
            outcome = asyncio.run(
                runtime.compact_command.run(runtime.agent.envelope(), args.focus or "")
            )
    except OSError as exc:
        return _fail(f"cannot write the session log: {exc}", EXIT_ERROR)
    finally:
        runtime.close()
    print(clean(outcome.text))
    return EXIT_OK if outcome.ok else EXIT_ERROR


def _fork(parent: Session, at: int | None, *, restore_files: bool = False) -> int:
    """Without ``--at``: the points one can fork at; with it, the new session's id."""
    from agent.log.fork import ForkError, fork_points, fork_session
    from agent.log.store import is_open_for_writing

    if at is None:
        points = fork_points(parent)
        if not points:
            print(f"Session {parent.id} has no prompt to fork at.")
        for point in points:
            print(f"{point.seq:>6}  turn {point.turn:>3}  {clean(first_line(point.prompt, 70))}")
        return EXIT_OK
    if restore_files and is_open_for_writing(parent.path):
        # Its reefline may still run a sandbox, and what its commands left running there:
        # files are put back only once all of that is gone.
        return _fail(
            f"session {parent.id} is open in another reefline: quit it first (its sandbox "
            "and what its commands left running end with it), then fork with "
            "--restore-files again",
            EXIT_USAGE,
        )
    try:
        new_id, point = fork_session(parent, at)
    except ForkError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        return _fail(f"cannot write the new session: {exc}", EXIT_ERROR)
    print(new_id)
    print(
        f"forked {parent.id} before turn {point.turn}; go on with: reefline --resume {new_id}",
        file=sys.stderr,
    )
    if restore_files:
        from tui.shell.file_subcommands import restore_for_fork

        return restore_for_fork(parent, new_id, point.seq)
    return EXIT_OK


def _say(message: str) -> None:
    print(f"reefline: {clean(message)}", file=sys.stderr)


def _fail(message: str, code: int) -> int:
    _say(message)
    return code
