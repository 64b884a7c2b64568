"""The scripted session of the fidelity bench: its shape, the facts planted in it, the step
logs the model reads, and the model itself (an agent reading one log per step, and a
summarizer that keeps every fact it is shown).

Facts of every kind are planted in each session, placed in proportion to its length: in the
first user message, as a standing instruction in a later turn's prompt, at the head, middle
and tail of outputs, as an error's file and line in an output, as a value a later output
corrects (only the newest may be what is visible), and in the model's own reply text only.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.llm.chat import ChatRequest
from agent.llm.client import ToolCall
from agent.llm.errors import ContextOverflow
from agent.llm.replies import Completed, Reply, StreamEvent
from agent.log.events import Usage
from agent.tokens import Estimator
from tests.bench.economy import Counter, PromptCache

SUMMARY_MARK = "## Primary request and intent"

Behaviour = Literal["silent", "noting"]
Where = Literal["prompt", "rule", "head", "middle", "tail", "error", "corrected", "reply"]


@dataclass(frozen=True)
class Shape:
    """One session: ``turns`` turns of ``steps`` bash steps, each reading a log of about
    ``output_tokens`` tokens, against a ``window``-token model."""

    turns: int
    steps: int
    window: int
    output_tokens: int

    @property
    def title(self) -> str:
        return (
            f"{self.turns} turns × {self.steps} bash steps of ~{self.output_tokens:,} tokens, "
            f"{self.window // 1000}k window"
        )


@dataclass(frozen=True)
class Fact:
    label: str
    """Short name in the tables."""
    key: str
    """The token searched for in the final request."""
    sentence: str
    where: Where
    turn: int
    step: int | None
    """None: in the turn's prompt."""
    old_key: str = ""
    """A corrected value: its first, superseded value."""
    old_sentence: str = ""
    old_turn: int = 0
    old_step: int = 0

    def kept(self, text: str) -> bool:
        """Is the fact what ``text`` (the final request) shows? A corrected value: its newest
        form is visible and the old one does not come after it."""
        if self.old_key:
            return self.key in text and text.rfind(self.key) > text.rfind(self.old_key)
        return self.key in text


def _at(shape: Shape, share: float) -> tuple[int, int]:
    """The (turn, step) at ``share`` of the session's steps."""
    index = int(share * shape.turns * shape.steps)
    return index // shape.steps + 1, index % shape.steps + 1


def plant(shape: Shape) -> tuple[Fact, ...]:
    """The session's facts, placed in proportion to its length."""
    rule_turn = min(shape.turns, max(2, int(0.4 * shape.turns) + 1))
    old, new = _at(shape, 0.1), _at(shape, 0.65)
    return (
        Fact("prompt", "FACT-PROMPT-7731", "The deploy token is named FACT-PROMPT-7731.",
             "prompt", 1, None),
        Fact("rule", "FACT-RULE-3141",
             "From now on never touch vendor/ (rule FACT-RULE-3141).", "rule", rule_turn, None),
        Fact("head", "FACT-HEAD-0918", "The flaky test is test_refund_race, ticket FACT-HEAD-0918.",
             "head", *_at(shape, 0.06)),
        Fact("middle", "FACT-MIDDLE-4410",
             "The cache is invalidated by the nightly job FACT-MIDDLE-4410.", "middle",
             *_at(shape, 0.2)),
        Fact("tail", "FACT-TAIL-2207", "The payment provider sandbox key id is FACT-TAIL-2207.",
             "tail", *_at(shape, 0.35)),
        Fact("error", "src/billing/refund.py:214",
             "src/billing/refund.py:214: TypeError: unsupported operand type(s) for -: "
             "'Decimal' and 'float'", "error", *_at(shape, 0.5)),
        Fact("corrected", "FACT-PORT-NEW-6652",
             "The staging database port changed: it is now FACT-PORT-NEW-6652.", "corrected",
             *new, old_key="FACT-PORT-OLD-5432",
             old_sentence="The staging database listens on port FACT-PORT-OLD-5432.",
             old_turn=old[0], old_step=old[1]),
        Fact("reply", "FACT-REPLY-8086", "I will name the fix branch fix/FACT-REPLY-8086.",
             "reply", *_at(shape, 0.3)),
        Fact("head2", "FACT-HEAD2-1207", "The release branch is frozen under change FACT-HEAD2-1207.",
             "head", *_at(shape, 0.75)),
        Fact("tail2", "FACT-TAIL2-3390", "The on-call rotation file is ops/FACT-TAIL2-3390.yaml.",
             "tail", *_at(shape, 0.85)),
    )  # fmt: skip


def prompt(shape: Shape, facts: tuple[Fact, ...], turn: int) -> str:
    said = " ".join(
        f.sentence for f in facts if f.step is None and f.turn == turn and f.where != "reply"
    )
    return f"Turn {turn}: read the {shape.steps} step logs of turn {turn} one by one." + (
        f" {said} Keep it in mind." if said else ""
    )


def outputs(shape: Shape, facts: tuple[Fact, ...], estimator: Estimator) -> dict[str, str]:
    """The step logs by file name (``out-<turn>-<step>.log``), ~``output_tokens`` each, the
    facts planted where they say."""
    planted: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for f in facts:
        if f.old_key:
            planted.setdefault((f.old_turn, f.old_step), []).append(("middle", f.old_sentence))
            planted.setdefault((f.turn, f.step or 0), []).append(("middle", f.sentence))
        elif f.where in ("head", "middle", "tail", "error"):
            planted.setdefault((f.turn, f.step or 0), []).append((f.where, f.sentence))
    logs = {}
    for turn in range(1, shape.turns + 1):
        for step in range(1, shape.steps + 1):
            lines: list[str] = []
            tokens = 0
            n = 0
            while tokens < shape.output_tokens:
                n += 1
                line = (
                    f"2026-11-30T12:{n % 60:02d}:{(n * 7) % 60:02d}Z worker-{n % 5} "
                    f"turn{turn} step{step} processed batch {turn * 1000 + step * 50 + n} "
                    f"in {(n * 13) % 97} ms, queue depth {(n * 3) % 17}"
                )
                lines.append(line)
                tokens += estimator.count(line + "\n")
            for where, sentence in planted.get((turn, step), ()):
                at = {"head": 1, "middle": len(lines) // 2, "tail": len(lines) - 1}
                if where == "error":
                    lines.insert(len(lines) // 3, sentence)
                else:
                    lines.insert(at[where], f"NOTE {sentence}")
            logs[f"out-{turn}-{step}.log"] = "\n".join(lines) + "\n"
    return logs


_TURN = re.compile(r"Turn \d+:|Final question")
_ORIGINAL = re.compile(r"^### Output of .*?\(tool call ([^)\s]+)\)\n(.*?)(?=^### Output of |\Z)",
                       re.M | re.S)  # fmt: skip


@dataclass
class BenchModel:
    """The scripted provider: an agent that reads one log per step, and a summarizer that
    keeps every fact it is shown. Refuses a request over its window, as a server would, and
    prices every request it receives with the prefix-cache model (:mod:`tests.bench.economy`)."""

    behaviour: Behaviour
    counter: Counter
    shape: Shape
    facts: tuple[Fact, ...]
    window: int
    provider: str = "bench"
    cache: PromptCache = field(init=False)
    steps_done: dict[int, int] = field(default_factory=dict)
    requests: int = 0
    summary_calls: int = 0
    largest: int = 0
    final_request: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        self.cache = PromptCache(self.counter)

    @property
    def prompt_tokens(self) -> int:
        return self.cache.prompt_tokens

    def context_window(self, model: str) -> int | None:
        return self.window

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        priced = self.cache.price(request, limit=self.window)
        self.requests += 1
        self.largest = max(self.largest, priced.prompt)
        if priced.refused:
            raise ContextOverflow(
                f"bench says: this model's maximum context length is {self.window} tokens",
                status=400,
                limit=self.window,
            )
        if _is_summary(request):
            self.summary_calls += 1
            reply = self._summary(request)
        else:
            reply = self._step(request)
        completion = self.counter.estimator.count(reply.text) + 8 * len(reply.tool_calls)
        reply.usage = Usage(
            prompt_tokens=priced.prompt, completion_tokens=completion, cached_tokens=priced.cached
        )
        yield Completed(reply)

    def _step(self, request: ChatRequest) -> Reply:
        turn = _current_turn(request.messages, self.shape.turns)
        done = self.steps_done.get(turn, 0)
        if turn > self.shape.turns:
            self.final_request = request.messages
            return Reply("Here is what I know.", None, [], "stop", None, "bench")
        if done >= self.shape.steps:
            return Reply(f"Turn {turn} is done.", None, [], "stop", None, "bench")
        step = self.steps_done[turn] = done + 1
        text = f"Step {step}: reading out-{turn}-{step}.log."
        for fact in self.facts:
            if fact.where == "reply" and (fact.turn, fact.step) == (turn, step):
                text = f"{fact.sentence} {text}"  # said by both behaviours
        last = request.messages[-1]
        if self.behaviour == "noting" and last.get("role") == "tool":
            seen = str(last.get("content"))
            for fact in self.facts:
                for key, sentence in ((fact.old_key, fact.old_sentence), (fact.key, fact.sentence)):
                    if key and key in seen:
                        text = f"Noted: {sentence} {text}"
        args = json.dumps({"command": f"cat out-{turn}-{step}.log"})
        call = ToolCall(id=f"call-{turn}-{step}", name="bash", arguments=args)
        return Reply(text, None, [call], "tool_calls", None, "bench")

    def _summary(self, request: ChatRequest) -> Reply:
        """A good summarizer's checkpoint: every user request and fact it is shown (an
        earlier checkpoint's included), a corrected value only in its newest form."""
        body = request.messages[1:-1]
        text = conversation_text(body, str(request.messages[-1].get("content") or ""))
        requests = [
            " ".join(str(m["content"]).split())[:200]
            for m in body
            if m.get("role") == "user" and "<compacted-summary>" not in str(m["content"])
        ]
        earlier = re.findall(r"^- User: .*$", text, flags=re.M)
        kept = []
        for f in self.facts:
            if f.old_key and text.rfind(f.old_key) > text.rfind(f.key):
                kept.append(f.old_sentence)
            elif f.key in text:
                kept.append(f.sentence)
        commands = sum(len(m.get("tool_calls") or ()) for m in body)
        summary = "\n".join(
            [
                SUMMARY_MARK,
                *dict.fromkeys([*earlier, *(f"- User: {r}" for r in requests)]),
                "## Critical context",
                *(f"- {s}" for s in kept),
                "## Current work",
                f"- {commands} more commands run (cat of step logs)",
            ]
        )
        cap = request.max_tokens
        over = cap is not None and self.counter.estimator.count(summary) > cap
        return Reply(summary, None, [], "length" if over else "stop", None, "bench")


def _is_summary(request: ChatRequest) -> bool:
    last = str(request.messages[-1].get("content") or "")
    if request.tool_choice == "none":
        return True
    return SUMMARY_MARK in last and "<compacted-summary>" not in last


def conversation_text(body: list[dict[str, Any]], final: str) -> str:
    """What a summary request shows, in conversation order: each original the final message
    carries (``### Output of … (tool call <id>)``) stands where its placeholder is; one
    whose call is not in ``body`` counts as older than everything in it."""
    originals = {m.group(1): m.group(2) for m in _ORIGINAL.finditer(final)}
    parts = []
    for m in body:
        content = str(m.get("content") or "")
        call = m.get("tool_call_id")
        if m.get("role") == "tool" and call in originals:
            content += "\n" + originals.pop(call)
        parts.append(content)
    return "\n".join([*originals.values(), *parts])


def _current_turn(messages: list[dict[str, Any]], turns: int) -> int:
    """The turn being worked on: the newest turn prompt on the surface, or quoted by the
    checkpoint when the prompt itself was compacted away."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        found = _TURN.findall(str(message.get("content") or ""))
        if found:
            last = found[-1]
            return turns + 1 if last.startswith("Final") else int(last.split()[1].rstrip(":"))
    raise AssertionError("no turn prompt on the surface")
