"""The header line: app, model, session and working directory, with the context percent."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from tui.text import clean, short_path


def left_cut(text: str, width: int) -> str:
    """``text`` cut from the left to ``width`` cells (``…/src/shop``)."""
    if len(text) <= width:
        return text
    return "…" + text[-(width - 1) :] if width > 1 else ""


class AppHeader(Widget):
    """`` reefline · gpt-4.1 · session 3f2a9c · ~/src/shop ............ ctx 41% ``.

    When the line is too narrow the working directory is cut from the left first, then
    dropped, then the session id is."""

    DEFAULT_CSS = "AppHeader { height: 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = ""
        self.session = ""
        self.cwd = ""
        self.demo = False
        self.percent = ""
        self.zone_style = "$text-muted"

    def show(self, *, model: str, session: str, cwd: str, demo: bool) -> None:
        self.model, self.session, self.demo = clean(model), session, demo
        self.cwd = short_path(clean(cwd))
        self.refresh()

    def show_percent(self, percent: str, style: str) -> None:
        if (percent, style) != (self.percent, self.zone_style):
            self.percent, self.zone_style = percent, style
            self.refresh()

    def render(self) -> Content:
        right = Content.assemble(("ctx ", "$text-muted"), (self.percent or "–", self.zone_style))
        head: list[str | tuple[str, str]] = [("reefline", "bold $text-accent")]
        if self.demo:
            head += [" ", ("OFFLINE DEMO", "bold $text-warning")]
        head += [(" · ", "$text-muted"), self.model]
        room = self.size.width - right.cell_length - 3
        session: list[str | tuple[str, str]] = [(" · session ", "$text-muted"), self.session]
        base = Content.assemble(*head)
        with_session = Content.assemble(*head, *session)
        if with_session.cell_length + 4 + min(len(self.cwd), 12) <= room:
            cwd = left_cut(self.cwd, room - with_session.cell_length - 3)
            left = Content.assemble(with_session, (" · ", "$text-muted"), cwd)
        elif with_session.cell_length <= room:
            left = with_session
        else:
            left = base.truncate(max(0, room), ellipsis=True)
        gap = max(1, self.size.width - left.cell_length - right.cell_length - 2)
        return Content.assemble(" ", left, " " * gap, right, " ")
