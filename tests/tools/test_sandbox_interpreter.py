"""The sandbox starts when reefline's Python lives where the jail would cover it: a
virtualenv under ``/tmp`` (a fresh clone there, as CI may make) or under a hidden folder."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RUN = r"""
import asyncio, sys
from pathlib import Path
from tools.bash import BashTool
from tools.sandbox import choose

work = Path(sys.argv[1])
tool = BashTool(cwd=work, spill_dir=work / "spill", policy="auto",
                sandbox=choose("workspace-write"))
out = asyncio.run(tool.run({"command": "echo inside; echo made > made.txt"}))
tool.close()
print(out.exit_code, out.content.splitlines()[0])
"""


def test_a_virtualenv_under_tmp_runs_sandboxed(bwrap: str, tmp_path: Path) -> None:
    if not str(tmp_path).startswith("/tmp/"):
        pytest.skip(f"the temp folder {tmp_path} is not under /tmp")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # The new interpreter sees this checkout and the dependencies of the one running us.
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    site.mkdir(parents=True, exist_ok=True)
    (site / "deps.pth").write_text(f"{ROOT}\n{sysconfig.get_paths()['purelib']}\n")
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", RUN, str(work)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "inside"], (done.stdout, done.stderr)
    assert (work / "made.txt").read_text() == "made\n"
