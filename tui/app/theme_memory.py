"""The app's colour theme: the configured one at start, and one picked later saved to the
config file (``theme``), so that it is there the next time."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.theme import Theme

from agent.config_file import SettingsError, config_path, save_config_value


class ThemeMemory:
    """Applies ``configured`` to ``app`` and saves each theme picked after :meth:`start`."""

    def __init__(self, app: App[Any], configured: str | None) -> None:
        self.app = app
        self.configured = configured
        self.shown = ""
        """The theme on screen as last saved or applied."""

    def start(self) -> None:
        """Apply the configured theme (a name that is no theme is said, in a toast, and the
        default stays); then listen for changes."""
        if self.configured is not None:
            if self.configured in self.app.available_themes:
                self.app.theme = self.configured
            else:
                names = ", ".join(sorted(self.app.available_themes))
                self.app.notify(
                    f"The configured theme {self.configured!r} does not exist (the themes are "
                    f"{names}): pick one with ctrl+p, Theme.",
                    severity="warning",
                    timeout=10,
                )
        self.shown = self.app.theme
        self.app.theme_changed_signal.subscribe(self.app, self._changed)

    def _changed(self, theme: Theme) -> None:
        if theme.name == self.shown:
            return  # the one applied at start (its signal comes after), or a repeat
        self.shown = theme.name
        path = config_path()
        try:
            save_config_value(path, "theme", theme.name)
        except SettingsError as exc:
            self.app.notify(f"The theme is not saved: {exc}", severity="warning", timeout=8)
            return
