"""Command-line entry point: ``reefline``."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version


def package_version() -> str:
    try:
        return version("reefline")
    except PackageNotFoundError:  # running from a source tree without install
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reefline",
        description=(
            "A terminal chat agent that never runs out of context: a ReAct loop with a bash "
            "tool, a live token gauge, automatic compaction and a compaction timeline."
        ),
    )
    parser.add_argument("--version", action="version", version=f"reefline {package_version()}")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    parser.parse_args(argv)
    print("reefline: the agent is not wired up yet; see README.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
