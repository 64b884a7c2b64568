"""Widgets of the Textual app, one concept per module.

``format`` holds the pure text helpers (no Textual import) that the plain REPL shares.
"""
