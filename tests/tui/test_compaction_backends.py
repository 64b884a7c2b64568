"""``compaction.backend`` picks the backend from the registry (:mod:`compact.backends`).

A second backend is its own code, one :func:`compact.backends.register` call and this test:
a backend that never compacts, defined here, is built by the real composition root and
driven by the real loop, where the basic backend would have compacted (the demo in a small
window compacts within a few prompts). An unknown name is refused with the names that
exist (``tests/e2e/test_compaction_backend_setting.py`` asks the real ``reefline``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from agent.envelope import Envelope
from agent.hooks import Hooks
from agent.log.events import CommandDone
from agent.settings import SettingsError
from compact import backends
from compact.commands.compact import NOTHING_TO_COMPACT
from compact.contract.events import PruneTrigger
from compact.contract.service import (
    BackendParts,
    CompactionError,
    CompactionResult,
    CompactService,
)
from tests.tui.conftest import UI
from tui.commands.run import run


class NeverCompacts(CompactService):
    """Looks at every pre-step checkpoint and never compacts."""

    def __init__(self, parts: BackendParts) -> None:
        super().__init__()
        self.parts = parts
        self.checks: list[tuple[int, int]] = []
        self.closed = False

    def install(self, hooks: Hooks) -> None:
        hooks.pre_step.append(self._on_pre_step)

    async def _on_pre_step(
        self, envelope: Envelope, turn: int, step: int, signal: asyncio.Event | None = None
    ) -> None:
        self.checks.append((turn, step))

    def close(self) -> None:
        self.closed = True

    def threshold(self, window: int | None) -> int | None:
        return None

    async def compact_if_needed(
        self, envelope: Envelope, trigger: PruneTrigger, signal: asyncio.Event | None = None
    ) -> CompactionResult | None:
        return None

    async def compact_region(
        self, start: int, end: int, envelope: Envelope, signal: asyncio.Event | None = None
    ) -> CompactionResult:
        raise CompactionError("summary", "this backend never compacts")

    async def compact_now(
        self,
        envelope: Envelope,
        signal: asyncio.Event | None = None,
        focus: str | None = None,
        source_command_id: str | None = None,
    ) -> CompactionResult | None:
        return None


@pytest.fixture
def never() -> Iterator[None]:
    unregister = backends.register("never", NeverCompacts)
    yield
    unregister()


async def test_a_registered_backend_is_built_installed_and_driven_by_the_loop(
    ui: UI, never: None
) -> None:
    runtime = ui.runtime(context_window=2_500, compaction={"backend": "never"})
    service = runtime.compaction
    assert isinstance(service, NeverCompacts)
    for n in range(1, 7):  # the basic backend compacts this within six prompts
        await runtime.agent.run_turn(f"look at README.md and parser.py, round {n}")
    steps = [(e.data.turn, e.data.step) for e in runtime.session.events if e.type == "step/start"]
    assert service.checks == steps and len(steps) > 6
    assert not [e for e in runtime.session.events if e.type.startswith("compact/")]
    _ = [effect async for effect in run(runtime, "compact", "")]
    done = runtime.session.events[-1]
    assert isinstance(done, CommandDone) and done.data.text == NOTHING_TO_COMPACT
    runtime.bash.close()
    runtime.compaction.close()
    assert service.closed


async def test_the_basic_backend_is_the_default(ui: UI) -> None:
    runtime = ui.runtime()
    assert runtime.compaction.__class__.__module__.startswith("compact.basic")
    assert backends.names() == ["basic"]


def test_an_unknown_backend_is_refused_with_the_names_there_are(ui: UI) -> None:
    with pytest.raises(SettingsError) as raised:
        ui.runtime(compaction={"backend": "fancy"})
    assert "'fancy'" in str(raised.value) and "set it to one of: basic" in str(raised.value)
