"""Regenerate ``screenshots/*.svg`` (and ``*.png`` when ``rsvg-convert`` is installed) from the
running app on the offline demo model: ``python -m tui.shell.screenshots [--out DIR]``.

Every shot drives the real app with Textual's Pilot in a temporary home and a small sample
project, so nothing on the machine running it is read or changed. See screenshots/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import OptionList, TextArea

from agent.settings import load_settings
from tools.modes import ApprovalPolicy
from tui.app.app import ReeflineApp
from tui.commands.switching import rewind_points
from tui.runtime.wiring import build_runtime
from tui.screens.approval import ApprovalScreen
from tui.screens.summary_editor import SummaryEditorScreen
from tui.widgets.entries import UserEntry
from tui.widgets.prompt import PromptArea
from tui.widgets.timeline import TimelinePanel

Drive = Callable[[ReeflineApp, Pilot[Any]], Awaitable[None]]

SAMPLE = {
    "README.md": "# shop\n\nA tiny web shop. `make test` runs the tests.\n\n## Layout\n\n"
    "- `shop/cart.py`: the cart\n- `shop/prices.py`: prices and discounts\n",
    "Makefile": "test:\n\tpython -m pytest -q\n",
    "shop/__init__.py": "",
    "shop/cart.py": "from shop.prices import price\n\n\nclass Cart:\n"
    "    def __init__(self):\n        self.items = []\n\n    def add(self, sku, n=1):\n"
    "        self.items.append((sku, n))\n\n    def total(self):\n"
    "        return sum(price(sku) * n for sku, n in self.items)\n",
    "shop/prices.py": 'PRICES = {"apple": 3, "pear": 4}\n\n\ndef price(sku):\n'
    "    return PRICES[sku]\n",
    "tests/test_cart.py": "from shop.cart import Cart\n\n\ndef test_total():\n"
    "    cart = Cart()\n    cart.add('apple', 2)\n    assert cart.total() == 6\n",
}
PROMPTS = [
    "what is in this project? start with README.md",
    "how does shop/cart.py compute the total?",
    "and where do prices come from? look at shop/prices.py",
    "is there a test for the cart in tests/test_cart.py?",
    "what does the Makefile run?",
    "summarize shop/cart.py once more",
]


@dataclass(frozen=True)
class Shot:
    name: str
    size: tuple[int, int]
    drive: Drive
    settings: dict[str, Any]
    approve: ApprovalPolicy = "auto"
    theme: str | None = None


async def _wait(app: ReeflineApp, pilot: Pilot[Any], timeout: float = 30) -> None:
    for _ in range(int(timeout / 0.05)):
        await pilot.pause()
        if not app.busy:
            break
        await asyncio.sleep(0.05)
    for _ in range(3):
        await pilot.pause()


async def _send(app: ReeflineApp, pilot: Pilot[Any], text: str) -> None:
    prompt = app.main.part(PromptArea)
    prompt.load_text(text)
    prompt.move_cursor(prompt.document.end)
    await pilot.press("enter")
    await _wait(app, pilot)


async def _still(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    app.main.part(PromptArea).cursor_blink = False
    await pilot.pause()


async def idle(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    await _still(app, pilot)


async def one_turn(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    """One prompt, scrolled so its tool cards show."""
    await _still(app, pilot)
    await _send(app, pilot, PROMPTS[0])
    transcript = app.main.transcript
    transcript.release_anchor()
    transcript.scroll_to_widget(transcript.query(UserEntry).last(), top=True, animate=False)
    await pilot.pause()


async def past_threshold(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    """Prompts until a turn ends above the auto-compact line (the next step compacts)."""
    await _still(app, pilot)
    threshold = app.runtime.threshold_tokens or 0
    for n in range(24):
        await _send(app, pilot, PROMPTS[n % len(PROMPTS)])
        if app.runtime.measure().total >= threshold:
            break


async def compactions(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    """Prompts until auto compaction fired twice (prunes too), then /compact with a focus."""
    await _still(app, pilot)
    app.main.part(TimelinePanel).display = True
    for n in range(24):
        await _send(app, pilot, PROMPTS[n % len(PROMPTS)])
        if sum(r.trigger == "auto" for r in app.main.view.timeline.records) >= 2:
            break
    await _send(app, pilot, "/compact keep the cart and price details")
    app.main.part(PromptArea).focus()
    await pilot.pause()


async def summary(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    await compactions(app, pilot)
    rows = app.main.part(TimelinePanel).query_one(OptionList)
    records = app.main.part(TimelinePanel).records
    rows.highlighted = max(i for i, r in enumerate(records) if r.kind == "compaction")
    rows.focus()
    await pilot.press("enter")
    await pilot.pause(0.3)


async def summary_editor(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    """The summary modal, then ``e``: the editor on the newest checkpoint's summary, with a
    correction typed under its first heading."""
    await summary(app, pilot)
    await pilot.press("e")
    for _ in range(100):
        await pilot.pause(0.05)
        if isinstance(app.screen, SummaryEditorScreen):
            break
    area = app.screen.query_one(TextArea)
    area.move_cursor((1, 0))
    area.insert("- Correction: prices are in cents, not euros\n")
    await pilot.pause(0.3)


async def approval(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    await _still(app, pilot)
    await _send(app, pilot, "/approve ask")
    prompt = app.main.part(PromptArea)
    prompt.load_text("what is in this project?")
    await pilot.press("enter")
    for _ in range(200):
        await pilot.pause(0.05)
        if isinstance(app.screen, ApprovalScreen) and app.screen.armed:
            break  # on screen and taking keys (buttons enabled)
    await pilot.pause(0.3)


async def completion(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    """A turn, ``/rename``, then ``/new`` and ``/resume `` typed: the menu offers the
    earlier session by its name."""
    await _still(app, pilot)
    await _send(app, pilot, PROMPTS[0])
    await _send(app, pilot, "/rename shop tour")
    await _send(app, pilot, "/new")
    app.main.part(PromptArea).focus()
    await pilot.press(*"/resume ")
    await pilot.pause(0.2)


async def commands_menu(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    """``/`` typed: the command menu under the prompt, each command with what it does."""
    await _still(app, pilot)
    await pilot.press("/")
    await pilot.pause(0.2)


async def fork_in_list(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    """Two prompts, a rewind to before the second, then ``/sessions``: the fork is marked."""
    await _still(app, pilot)
    await _send(app, pilot, PROMPTS[0])
    await _send(app, pilot, PROMPTS[1])
    points = rewind_points(app.runtime)
    await app.run_slash("rewind", str(len(points)))
    await _wait(app, pilot)
    await app.run_slash("sessions")
    await pilot.pause(0.3)


async def session_picker(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    """Sessions here (one named with ``/rename``) and one in another folder, then
    ``/sessions``: name, age, size, folder and last prompt, this folder's first."""
    from agent.log.session import Session
    from compact.contract.registry import build_registry

    await _still(app, pilot)
    blog = Path(app.runtime.session.cwd).parent / "blog"
    blog.mkdir(exist_ok=True)
    elsewhere = Session.create(app.runtime.home, cwd=str(blog), registry=build_registry())
    elsewhere.append("turn/start", {"turn": 1})
    elsewhere.append("user/message", {"content": "draft the release notes for 1.4"})
    elsewhere.append("turn/end", {"turn": 1, "reason": "completed"})
    elsewhere.close()
    await _send(app, pilot, PROMPTS[1])
    await _send(app, pilot, PROMPTS[2])
    await _send(app, pilot, "/rename cart totals")
    await _send(app, pilot, "/new")
    await _send(app, pilot, PROMPTS[4])
    await app.run_slash("sessions")
    await pilot.pause(0.3)


async def narrow_timeline(app: ReeflineApp, pilot: Pilot[Any]) -> None:
    """Compactions at 80×24 with the timeline opened (ctrl+t): the panel is narrow."""
    await compactions(app, pilot)
    await pilot.pause(0.2)


DEMO: dict[str, Any] = {}
SMALL: dict[str, Any] = {"context_window": 4_000}
"""The timeline shots use a smaller window still, so compactions pile up in a few prompts."""
SHOTS = [
    Shot("idle-80x24", (80, 24), idle, DEMO),
    Shot("idle-120x40", (120, 40), idle, DEMO),
    Shot("turn-120x40", (120, 40), one_turn, DEMO),
    Shot("turn-80x24", (80, 24), one_turn, DEMO),
    Shot("gauge-past-threshold-120x40", (120, 40), past_threshold, DEMO),
    Shot("timeline-140x44", (140, 44), compactions, SMALL),
    Shot("timeline-200x60", (200, 60), compactions, SMALL),
    Shot("timeline-light-140x44", (140, 44), compactions, SMALL, theme="textual-light"),
    Shot("summary-140x44", (140, 44), summary, SMALL),
    Shot("summary-80x24", (80, 24), summary, SMALL),
    Shot("summary-editor-120x40", (120, 40), summary_editor, SMALL),
    Shot("approval-120x40", (120, 40), approval, DEMO, approve="ask"),
    Shot("approval-80x24", (80, 24), approval, DEMO, approve="ask"),
    Shot("completion-commands-100x30", (100, 30), commands_menu, DEMO),
    Shot("completion-resume-120x40", (120, 40), completion, DEMO),
    Shot("sessions-fork-120x40", (120, 40), fork_in_list, DEMO),
    Shot("sessions-picker-120x40", (120, 40), session_picker, DEMO),
    Shot("timeline-80x24", (80, 24), narrow_timeline, SMALL),
]


def _sample_project(root: Path) -> Path:
    project = root / "src" / "shop"
    if project.is_dir():
        return project
    for name, text in SAMPLE.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return project


async def take(shot: Shot, out: Path, scratch: Path) -> Path:
    """Run one shot in its own home; returns the SVG written."""
    home = scratch / "homes" / shot.name
    settings = load_settings({"home": home, "demo": True, **shot.settings})
    runtime = build_runtime(settings, default_approve=shot.approve, cwd=_sample_project(scratch))
    app = ReeflineApp(runtime, scripted_delay_s=0.0)
    if shot.theme:
        app.theme = shot.theme
    try:
        async with app.run_test(size=shot.size) as pilot:
            await shot.drive(app, pilot)
            path = app.save_screenshot(f"{shot.name}.svg", path=str(out))
            app.runtime.bash.policy = "deny"
            if isinstance(app.screen, ApprovalScreen):
                await pilot.press("n")
            app.action_interrupt()
            await _wait(app, pilot)
    finally:
        app.runtime.close()
    return Path(path)


def to_png(svg: Path) -> Path | None:
    """Convert with rsvg-convert when it is installed (``apt-get install librsvg2-bin``)."""
    tool = shutil.which("rsvg-convert")
    if tool is None:
        return None
    png = svg.with_suffix(".png")
    # Textual writes spaces as &#160;; without xml:space="preserve" rsvg drops leading ones.
    text = svg.read_text().replace("<svg ", '<svg xml:space="preserve" ', 1)
    with tempfile.NamedTemporaryFile("w", suffix=".svg", delete=False) as tmp:
        tmp.write(text)
    try:
        subprocess.run([tool, "-o", str(png), tmp.name], check=True)
    finally:
        os.unlink(tmp.name)
    return png


async def main_async(out: Path, only: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="reefline-shots-") as scratch:
        (Path(scratch) / "config.toml").write_text("")  # a config that sets nothing
        os.environ["REEFLINE_CONFIG"] = str(Path(scratch) / "config.toml")
        os.environ["HOME"] = scratch  # the header then shows ~/src/shop
        for shot in SHOTS:
            if only and shot.name not in only:
                continue
            started = time.monotonic()
            svg = await take(shot, out, Path(scratch))
            png = to_png(svg)
            took = f"{time.monotonic() - started:.1f}s"
            print(f"{svg}  {took}" + (f"  {png.name}" if png else "  (SVG only: no rsvg-convert)"))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tui.shell.screenshots", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    parser.add_argument("names", nargs="*", help="only these shots (default: all)")
    args = parser.parse_args(argv)
    for name in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_BASE_URL", "REEFLINE_API_KEY"):
        os.environ.pop(name, None)
    return asyncio.run(main_async(args.out, args.names))


if __name__ == "__main__":
    sys.exit(main())
