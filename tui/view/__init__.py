"""The human view of the log: one fold of session events into typed view items
(:mod:`tui.view.items`, :mod:`tui.view.fold`), rendered four ways — the app's transcript,
the plain REPL, the headless printer and the Markdown export; and the status line's fold of
the same log (:mod:`tui.view.status`)."""
