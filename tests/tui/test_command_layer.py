"""The one command layer (:func:`tui.commands.run.run`): a command is written once and every
front end runs it; ``/context`` is the same rows in the app and in the plain REPL."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterator

import pytest

from agent.formatting import fmt_tokens
from tests.tui.conftest import UI
from tui.commands.effects import Effect, Said, ShowContext
from tui.commands.registry import command, unregister
from tui.commands.run import run
from tui.line.input import stream_reader
from tui.line.repl import PlainRepl
from tui.runtime.context_report import ESTIMATED, ContextReport
from tui.runtime.runtime import Runtime
from tui.screens.context import ContextScreen
from tui.widgets.entries import Notice
from tui.widgets.prompt import CompletionMenu


@pytest.fixture
def echo() -> Iterator[None]:
    """``/echo`` added as a command is added: one handler, registered beside the others
    (:mod:`tui.commands.handlers`), and nothing else anywhere."""

    @command("/echo [text]", "Say the text back.")
    async def _echo(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
        yield Said(f"echo: {args} (session {runtime.session.id})")

    yield
    unregister("echo")


def plain_repl(runtime: Runtime) -> tuple[PlainRepl, io.StringIO]:
    out = io.StringIO()
    repl = PlainRepl(runtime, stream_reader(io.StringIO("")), out)
    repl.attach(runtime)
    return repl, out


async def test_a_command_added_once_runs_in_the_app_and_the_repl(ui: UI, echo: None) -> None:
    runtime = ui.runtime()
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "/ec", enter=False, keys=True)  # the menu offers it
        menu = app.query_one(CompletionMenu)
        rows = [str(menu.get_option_at_index(i).prompt) for i in range(menu.option_count)]
        assert any(row.startswith("/echo") and "Say the text back" in row for row in rows)
        await ui.type(pilot, "/echo hello there")
        await ui.settle(pilot)
        said = [n.plain for n in app.query(Notice)]
        assert f"echo: hello there (session {runtime.session.id})" in said
        await ui.send(pilot, "/help")
        assert "/echo [text]" in [n.plain for n in app.query(Notice)][-1]
    repl, out = plain_repl(runtime)
    assert await repl.handle("/echo from the repl")
    assert await repl.handle("/help")
    repl.detach()
    text = out.getvalue()
    assert f"echo: from the repl (session {runtime.session.id})" in text
    assert "/echo [text]" in text and "Say the text back." in text


def report_rows(report: ContextReport) -> list[tuple[str, ...]]:
    """Every row of the report, as the words a reader finds on its line."""
    rows: list[tuple[str, ...]] = [
        (p.label, fmt_tokens(p.tokens), f"{100 * p.share:.0f}%") for p in report.parts
    ]
    rows += [(fact.label, fact.value) for fact in report.facts]
    rows += [(label, value) for label, value in report.usage]
    return rows


def shown(lines: list[str], row: tuple[str, ...]) -> bool:
    flat = [" ".join(line.split()) for line in lines]
    return any(all(" ".join(cell.split()) in line for cell in row) for line in flat)


async def test_context_is_the_same_rows_in_the_app_and_the_repl(ui: UI) -> None:
    runtime = ui.runtime()
    app = ui.app(runtime)
    async with app.run_test(size=(140, 50)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "/context")
        screen = app.screen
        assert isinstance(screen, ContextScreen)
        in_app = [line.plain for line in screen.lines]
    [effect] = [e async for e in run(runtime, "context")]
    assert isinstance(effect, ShowContext)
    report = effect.report
    repl, out = plain_repl(runtime)
    assert await repl.handle("/context")
    repl.detach()
    in_repl = out.getvalue().splitlines()
    rows = report_rows(report)
    labels = [row[0] for row in rows]
    for needed in ("system prompt", "tool results", "window", "free", "sandbox", "input"):
        assert needed in labels
    missing = {
        "app": [row for row in rows if not shown(in_app, row)],
        "repl": [row for row in rows if not shown(in_repl, row)],
    }
    assert missing == {"app": [], "repl": []}
    assert (ESTIMATED in "\n".join(in_app)) == (ESTIMATED in "\n".join(in_repl))
