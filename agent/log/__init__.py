"""The session log: its events and their schema, the append-only store, the surface fold and
the chat messages derived from it, loading (repair, bulk load, the load report) and forks.

The bottom layer of agent: it imports of agent's other modules only the floor's redaction
(an import contract holds that), so whatever the loop does with a turn lives above it.
"""
