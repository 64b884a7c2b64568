"""The model, as the loop sees one and as one is reached: the seam (the request and the
``ChatModel`` protocol, ``chat.py``; replies and stream events with the bounds on what one reply
may ask for, ``replies.py`` and ``call_bounds.py``; the error taxonomy; the context window and
prices; the usage a server reports) and the OpenAI-compatible client behind it (the client,
the SDK's errors translated, retries, asking the server its window).

The layer under the loop: of agent's other modules it imports only the log and the floor
(an import contract holds that). The loop and compaction import the seam, never the client
(another contract). Where requests go is chosen from the settings, above: :mod:`agent.provider`.
"""
