"""The session log: its events and their schema, the append-only store, the surface fold,
loading (repair, bulk load, the load report), forks and closing what a turn opened.
"""
