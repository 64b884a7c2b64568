"""The committed screenshots show what a user would see: no path of the machine they were
made on (a temporary directory, a home) appears in them."""

from __future__ import annotations

import html
import re
from pathlib import Path

SHOTS = Path(__file__).resolve().parents[2] / "screenshots"
MACHINE_PATHS = re.compile(r"reefline-shots|/tmp/|pytest-of-|/root/|/home/\w+")


def test_no_screenshot_shows_a_machine_path() -> None:
    svgs = sorted(SHOTS.glob("*.svg"))
    assert len(svgs) >= 10
    for svg in svgs:
        text = html.unescape(svg.read_text()).replace("\u00a0", " ")
        found = MACHINE_PATHS.findall(text)
        assert not found, f"{svg.name} shows {sorted(set(found))}"
    for png in SHOTS.glob("*.png"):
        assert png.with_suffix(".svg").exists(), f"{png.name} has no SVG to check"
