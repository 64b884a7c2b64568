"""The status line is a fold of the log (plus transient state), never set by hand: a real
turn and a real ``/compact`` on the demo runtime, observed through ``Runtime.observe`` as a
front end observes them, move it through what happened and back to idle."""

from __future__ import annotations

from agent.log.events import Event
from tests.tui.conftest import UI
from tui.commands.run import run
from tui.runtime.runtime import Runtime
from tui.view.status import StatusFold

Seen = list[tuple[str, str, int | None]]


def observe(ui: UI) -> tuple[StatusFold, Seen, Runtime]:
    runtime = ui.runtime()
    fold = StatusFold()
    seen: Seen = []

    def on_event(event: Event) -> None:
        fold.feed(event)
        reading = fold.reading
        if not seen or seen[-1] != (reading.activity, reading.detail, reading.step):
            seen.append((reading.activity, reading.detail, reading.step))

    runtime.observe(on_event, lambda item: None, lambda notice: None)
    return fold, seen, runtime


async def test_a_turn_goes_thinking_bash_thinking_idle(ui: UI) -> None:
    fold, seen, runtime = observe(ui)
    await runtime.agent.run_turn("what is in README.md")
    activities = [activity for activity, _, _ in seen]
    assert activities[0] == "thinking" and activities[-1] == "idle"
    bash = [(detail, step) for activity, detail, step in seen if activity == "bash"]
    assert ("ls -la", 1) in bash
    assert any(activity == "thinking" and step and step > 1 for activity, _, step in seen)
    # Replaying the same log from the start reads the same: the fold is the log's.
    again = StatusFold()
    again.restart(runtime.session.events)
    assert again.reading.activity == fold.reading.activity == "idle"


async def test_compact_goes_compacting_manual_then_idle(ui: UI) -> None:
    _, seen, runtime = observe(ui)
    await runtime.agent.run_turn("explore the README.md")
    await runtime.agent.run_turn("now parser.py")
    seen.clear()
    _ = [effect async for effect in run(runtime, "compact", "the parser")]
    assert seen[0] == ("compacting", "manual", None)
    assert seen[-1][0] == "idle"
    assert all(activity in ("compacting", "idle") for activity, _, _ in seen)


async def test_transient_state_shows_over_the_log_and_leaves_it_as_it_was(ui: UI) -> None:
    fold, _, runtime = observe(ui)
    fold.going_back("to before turn 1")
    assert (fold.reading.activity, fold.reading.detail) == ("rewinding", "to before turn 1")
    fold.restart(runtime.session.events)  # another session opens
    assert fold.reading.activity == "rewinding"  # the rewind is still being written
    fold.going_back(None)
    assert fold.reading.activity == "idle"
    fold.asking("rm -rf build")
    assert fold.reading.activity == "approval"
    fold.asking(None)
    assert fold.reading.activity == "idle"
