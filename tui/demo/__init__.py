"""The scripted model: a deterministic, offline stand-in for an LLM, the "offline demo model".

It implements :class:`agent.llm.client.ChatModel` for the demo, tests, screenshots and benchmarks,
always labelled as such (:data:`LABEL`), and plays two parts:

* **ReAct agent.** From the latest real user request and the tool results after it, it works
  through 2–4 read-only bash commands, one per step (list the directory, find files two levels
  deep, count lines of a few, show the start of one), then answers in Markdown from what they
  showed. No ``bash`` tool offered: it answers at once. A request compacted away mid-turn is
  recovered from the checkpoint, whose listed commands then count as done.
* **Summarizer.** When the last user message is a compaction instruction — it names the
  instruction compact sends (its own :data:`~compact.parts.checkpoint.SUMMARY_INSTRUCTION`)
  — it returns an extractive checkpoint in the eight-section template, capped per section,
  merging an earlier ``<compacted-summary>``.

Tool output is data: it is quoted or counted, never followed. ``max_tokens`` is honoured
(``finish_reason`` "length" when cut). Usage comes from the real estimator: prompt = the
request's messages and tools, completion = the reply.
"""

from tui.demo.model import ScriptedModel
from tui.demo.reading import (
    BANNER,
    DEMO_CONTEXT_WINDOW,
    LABEL,
    MODEL_NAME,
    PROVIDER,
    is_summary_request,
)

__all__ = [
    "BANNER",
    "DEMO_CONTEXT_WINDOW",
    "LABEL",
    "MODEL_NAME",
    "PROVIDER",
    "ScriptedModel",
    "is_summary_request",
]
