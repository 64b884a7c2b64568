"""Command-line entry point: ``reefline``.

``reefline -p "task"`` runs one turn headless; ``reefline`` alone starts the interactive
front end. Exit codes: 0 ok, 1 error, 2 usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from agent.settings import Settings, SettingsError, load_settings
from tui import subcommands
from tui.headless import EXIT_ERROR, EXIT_USAGE, run_prompt
from tui.runtime import StartupError
from tui.text import clean
from tui.wiring import build_runtime


def package_version() -> str:
    try:
        return version("reefline")
    except PackageNotFoundError:  # running from a source tree without install
        return "0+unknown"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"reefline: {message}\n(see reefline --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="reefline",
        description=(
            "A terminal chat agent that never runs out of context: a ReAct loop with a bash "
            "tool, a live token gauge, automatic compaction and a compaction timeline."
        ),
        epilog=(
            "Connect a model with OPENAI_API_KEY or DEEPSEEK_API_KEY, or --base-url for a "
            "local OpenAI-compatible server (Ollama, vLLM, llama.cpp). With none, reefline "
            "runs an offline demo model."
        ),
    )
    parser.add_argument("--version", action="version", version=f"reefline {package_version()}")
    run = parser.add_argument_group("running")
    run.add_argument("-p", "--prompt", help="run one turn for PROMPT headless and print the answer")
    run.add_argument(
        "--json", action="store_true", help="with -p: print every event as a JSON line on stdout"
    )
    run.add_argument("--resume", metavar="ID", help="continue the session ID")
    run.add_argument(
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the most recent session",
    )
    run.add_argument(
        "--approve",
        choices=["ask", "auto", "deny"],
        help="bash approval policy (default: ask in the app, deny with -p)",
    )
    run.add_argument("--home", type=Path, help="where sessions live (default: $REEFLINE_HOME)")
    run.add_argument(
        "--plain",
        action="store_true",
        help="line-mode REPL instead of the full-screen app (also when stdin is not a terminal)",
    )
    model = parser.add_argument_group("model")
    model.add_argument("--model", help="model name, e.g. gpt-4.1, deepseek-chat, qwen2.5:7b")
    model.add_argument(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1"
    )
    model.add_argument(
        "--api-key-env", metavar="NAME", help="environment variable that holds the API key"
    )
    model.add_argument(
        "--context-window",
        type=int,
        metavar="TOKENS",
        help="context window of the model, when reefline does not know it",
    )
    model.add_argument(
        "--demo", action="store_true", default=None, help="use the offline demo model"
    )
    return parser


def settings_flags(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "model": args.model,
        "base_url": args.base_url,
        "api_key_env": args.api_key_env,
        "context_window": args.context_window,
        "approve": args.approve,
        "home": args.home,
        "demo": args.demo,
    }


def run_interactive(settings: Settings, args: argparse.Namespace) -> int:
    """``reefline`` without -p: the Textual app, or the plain REPL (``--plain``, or whenever
    stdin or stdout is not a terminal). Bash approval defaults to ask, and to deny when
    nobody can answer (stdin is not a terminal)."""
    plain = args.plain or not (sys.stdin.isatty() and sys.stdout.isatty())
    try:
        runtime = build_runtime(
            settings,
            resume=args.resume,
            continue_last=args.continue_last,
            default_approve="ask" if sys.stdin.isatty() else "deny",
            scripted_delay_s=0.0 if plain else 0.02,
        )
    except (StartupError, SettingsError) as exc:
        print(f"reefline: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"reefline: cannot open the session log: {clean(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    if plain:
        from tui.repl import run_repl

        return asyncio.run(run_repl(runtime))
    from tui.app import run_app

    return run_app(runtime)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in subcommands.NAMES:
        return subcommands.main(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.json and args.prompt is None:
        parser.error("--json needs -p PROMPT")
    if args.prompt is not None and not args.prompt.strip():
        parser.error("the prompt is empty: give -p the task, e.g. -p 'why does the build fail?'")
    try:
        settings = load_settings(settings_flags(args))
    except SettingsError as exc:
        print(f"reefline: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if args.prompt is None:
        return run_interactive(settings, args)
    try:
        runtime = build_runtime(
            settings,
            resume=args.resume,
            continue_last=args.continue_last,
            default_approve="deny",
        )
    except (StartupError, SettingsError) as exc:
        print(f"reefline: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"reefline: cannot open the session log: {clean(str(exc))}", file=sys.stderr)
        return EXIT_ERROR

    async def headless() -> int:
        try:
            return await run_prompt(runtime, args.prompt, json_mode=args.json)
        finally:
            await runtime.aclose()

    try:
        return asyncio.run(headless())
    except OSError as exc:
        print(f"reefline: cannot write the session log: {clean(str(exc))}", file=sys.stderr)
        runtime.close()
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
