"""The Textual app and its parts: sending, approval, shutdown, theme memory, the bridge from
the core to Textual."""
