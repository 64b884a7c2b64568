"""The command line: ``reefline``'s flags, how they become settings, and the version.

Kept apart from what runs them so that parsing (and ``--help``, ``--version``) loads no
model client and no terminal library.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

from tools.modes import POLICIES, SANDBOX_MODES
from tui.exit_codes import EXIT_USAGE


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # ~30 ms: only for --version

    try:
        return version("reefline")
    except PackageNotFoundError:  # running from a source tree without install
        return "0+unknown"


class _Version(argparse.Action):
    """``--version``, looking the version up only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"reefline {package_version()}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        hints = "".join(f"\n{hint}" for hint in self._flag_hints(message))
        self.exit(EXIT_USAGE, f"reefline: {message}{hints}\n(see reefline --help)\n")

    def _flag_hints(self, message: str) -> list[str]:
        """``did you mean --model?`` for each mistyped flag an "unrecognized arguments"
        error names (argparse before 3.14 suggests none)."""
        if not message.startswith("unrecognized arguments:"):
            return []
        known = [flag for action in self._actions for flag in action.option_strings]
        hints = []
        for word in message.partition(":")[2].split():
            flag = word.partition("=")[0]
            if not flag.startswith("--"):
                continue
            near = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
            if near:
                hints.append(f"{flag}: did you mean {near[0]}?")
        return hints


SUBCOMMANDS = ("sessions", "timeline", "compact", "uncompact", "export", "fork", "diff", "mcp")
"""The session tools (:mod:`tui.shell.subcommands`), named first on the command line."""

SESSION_TOOLS = """\
session tools (each takes --help):
  reefline sessions              this folder's sessions, most recent first (--all: every folder)
  reefline timeline [ID]         the compaction timeline of a session (--json for machines)
  reefline compact [ID]          compact a session now, like /compact (--focus TEXT)
  reefline uncompact [ID]        undo a session's newest compaction, like /uncompact (-n N)
  reefline diff [ID]             what a session's commands changed (--turn N | --seq S)
  reefline export [ID]           a session's transcript as Markdown (-o FILE)
  reefline fork ID [--at SEQ]    a new session from before one of its prompts (lists them)
  reefline mcp                   start the configured MCP servers and list their tools"""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="reefline",
        description=(
            "A terminal chat agent that never runs out of context: a ReAct loop with a bash "
            "tool, a live token gauge, automatic compaction and a compaction timeline."
        ),
        epilog=SESSION_TOOLS
        + "\n\nConnect a model with OPENAI_API_KEY or DEEPSEEK_API_KEY, or --base-url for a\n"
        "local OpenAI-compatible server (Ollama, vLLM, llama.cpp). With none, reefline runs\n"
        "an offline demo model.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    run = parser.add_argument_group("running")
    run.add_argument("-p", "--prompt", help="run one turn for PROMPT headless and print the answer")
    run.add_argument(
        "--json", action="store_true", help="with -p: print every event as a JSON line on stdout"
    )
    run.add_argument(
        "--resume",
        metavar="NAME",
        help="continue a session: its name, the start of its name, or its id",
    )
    run.add_argument(
        "--name", metavar="NAME", help="name the session (see reefline sessions; /rename)"
    )
    run.add_argument(
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the most recent session started in this folder",
    )
    run.add_argument(
        "--approve",
        choices=POLICIES,
        help="bash approval policy (default: ask in the app, deny with -p)",
    )
    run.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        help="confine bash commands with bubblewrap (default: workspace-write while commands "
        "run without asking and bubblewrap works, else off)",
    )
    run.add_argument(
        "--sandbox-network",
        action="store_true",
        default=None,
        help="let sandboxed commands reach the network",
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
        "sandbox": args.sandbox,
        "sandbox_network": args.sandbox_network,
        "home": args.home,
        "demo": args.demo,
    }


def given_flags(args: argparse.Namespace) -> set[str]:
    """The settings the command line gave (a resumed session keeps its own provider unless
    one of them names another: see :func:`agent.provider.session_settings`)."""
    return {key for key, value in settings_flags(args).items() if value is not None}
