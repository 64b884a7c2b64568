"""Scrolling back through a long session in the app (Pilot, a real log): PageUp alone reaches
the first entry, mounting pages as the view nears the top, with the entries in view kept in
place and at most a few pages mounted; PageDown comes back the same way."""

from __future__ import annotations

from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.tui.conftest import UI
from tui.widgets.entries import UserEntry
from tui.widgets.transcript import MOUNTED_PAGES, PAGE, REPLAY_WINDOW, Transcript


async def test_page_up_alone_reaches_the_first_entry_of_a_long_session(ui: UI) -> None:
    session = Session.create(ui.home, cwd=str(ui.workdir), registry=build_registry())
    total = REPLAY_WINDOW + PAGE * 12 + 3
    for n in range(total):
        session.append("user/message", {"content": f"message {n}\nits second line"})
    session.close()
    limit = MOUNTED_PAGES * PAGE + REPLAY_WINDOW

    app = ui.app(ui.runtime(resume=session.id))
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = app.query_one(Transcript)

        def mounted() -> list[str]:
            return [u.raw.split("\n")[0] for u in app.query(UserEntry)]

        def at_top() -> str:
            """The message whose entry is at the top of the view."""
            y = transcript.scroll_y
            entry = next(u for u in app.query(UserEntry) if u.virtual_region.bottom > y)
            return entry.raw.split("\n")[0]

        await pilot.pause()
        assert mounted()[0] != "message 0"
        most, presses, seen = 0, 0, []
        while transcript.scroll_y > 0 or mounted()[0] != "message 0":
            before = at_top()
            await ui.press(pilot, "pageup")
            await pilot.pause()
            await ui.until(pilot, lambda: not transcript._paging)
            presses += 1
            most = max(most, len(mounted()))
            seen.append(at_top())
            # Each PageUp moves the view up: never back down, never a jump past a page.
            assert int(seen[-1].split()[1]) <= int(before.split()[1]), (before, seen[-1])
            assert presses < total, "PageUp never reached the top"
        assert mounted()[0] == "message 0" and at_top() == "message 0"
        assert most <= limit
        # Down again to the newest entry by PageDown alone.
        for _ in range(presses * 3):
            newest = mounted()[-1] == f"message {total - 1}"
            if newest and transcript.is_vertical_scroll_end and not transcript._later:
                break
            await ui.press(pilot, "pagedown")
            await pilot.pause()
            await ui.until(pilot, lambda: not transcript._paging)
            assert len(mounted()) <= limit
        assert not transcript._later
        assert transcript.is_vertical_scroll_end
