"""Fixtures for the front-end tests: a real runtime on the scripted model (or on the
loopback OpenAI-compatible server) in a temporary home, and a ``ui`` helper that builds the
app and waits on it."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from agent.settings import load_settings
from tui.app.app import ReeflineApp
from tui.runtime.runtime import Runtime
from tui.runtime.wiring import build_runtime
from tui.widgets.prompt import PromptArea


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "DEEPSEEK_", "REEFLINE_")):
            monkeypatch.delenv(name)
    (tmp_path / "config.toml").write_text("")  # a config that sets nothing
    monkeypatch.setenv("REEFLINE_CONFIG", str(tmp_path / "config.toml"))


class UI:
    """Builds runtimes and apps for a test and drives them."""

    def __init__(self, home: Path, workdir: Path) -> None:
        self.home = home
        self.workdir = workdir
        self.runtimes: list[Runtime] = []
        self.apps: list[ReeflineApp] = []

    def runtime(
        self, *, approve: str = "auto", resume: str | None = None, **settings: Any
    ) -> Runtime:
        flags = {"home": self.home, "demo": True, **settings}
        runtime = build_runtime(
            load_settings(flags), resume=resume, default_approve=approve, cwd=self.workdir
        )
        self.runtimes.append(runtime)
        return runtime

    def app(self, runtime: Runtime | None = None) -> ReeflineApp:
        app = ReeflineApp(runtime or self.runtime(), scripted_delay_s=0.0)
        self.apps.append(app)
        return app

    async def type(
        self, pilot: Pilot[Any], text: str, *, enter: bool = True, keys: bool = False
    ) -> None:
        """Put ``text`` in the prompt: key by key with ``keys`` (slow), else loaded at once."""
        prompt = pilot.app.query_one(PromptArea)
        prompt.focus()
        if keys:
            await self.press(pilot, *text)
        else:
            prompt.load_text(text)
            prompt.move_cursor(prompt.document.end)
        if enter:
            await self.press(pilot, "enter")

    async def press(self, pilot: Pilot[Any], *keys: str) -> None:
        """``pilot.press``. Its wait for the screen to settle fails after 30 s: a screen that
        stops answering (the app's message loop ended) is a failure, not a slow machine."""
        await pilot.press(*keys)

    async def until(
        self, pilot: Pilot[Any], predicate: Callable[[], bool], timeout: float = 20.0
    ) -> None:
        """Wait for ``predicate``; ``timeout`` only bounds a failure (a test that passes
        waits no longer than the app takes), so it is generous for a loaded machine."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for the app")
            await pilot.pause(0.02)

    async def settle(self, pilot: Pilot[Any], timeout: float = 30.0) -> None:
        """Wait until no turn or /compact runs and every posted message was handled."""
        app = pilot.app
        assert isinstance(app, ReeflineApp)
        await self.until(pilot, lambda: not app.busy, timeout)
        for _ in range(3):
            await pilot.pause()
            await asyncio.sleep(0)

    async def send(self, pilot: Pilot[Any], text: str) -> None:
        await self.type(pilot, text)
        await pilot.pause()
        await self.settle(pilot)

    def close(self) -> None:
        for runtime in [*self.runtimes, *(app.runtime for app in self.apps)]:
            runtime.close()


@pytest.fixture
def ui(clean_env: None, tmp_path: Path, workdir: Path) -> Iterator[UI]:
    helper = UI(tmp_path / "home", workdir)
    yield helper
    helper.close()
