"""The installed ``reefline`` console script, run as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

REEFLINE = Path(sys.executable).with_name("reefline")


def test_version() -> None:
    out = subprocess.run([REEFLINE, "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    assert out.stdout.strip() == f"reefline {version('reefline')}"


def test_help() -> None:
    out = subprocess.run([REEFLINE, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    assert out.stdout.startswith("usage: reefline")
    assert "--version" in out.stdout


def test_module_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tui", "--version"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0 and "reefline" in out.stdout
