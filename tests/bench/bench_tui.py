"""The Textual app: resume to first screen, keystroke latency and memory with a long
transcript, and keeping up with a streamed reply. Each figure sits next to a baseline from
the same run.

* **Resume**: ``build_runtime(resume=…)`` + ``App.run_test`` until the transcript is mounted
  and the first frame is drawn (``pilot.pause()`` after mount), with the collector deferred as
  ``reefline`` defers it (:mod:`tui.heap`), against the core part alone (``Session.open`` +
  the ``TokenMeter`` fold of the same log). Each run, app and core alike, starts from a
  collected heap, as a fresh process would: not amid what the previous run left.
* **"Show earlier"**: a session of ~2,000 transcript entries, paged back to its start in a
  fresh process (so its peak RSS is its own). The first pages are asked for at a reader's
  pace (a press, then a pause to read it), the rest back to back (a held key). Each page is
  timed from the press until its frame is drawn. The baseline is Textual alone, in the same
  process: a column of as many plain Statics as the transcript has mounted, with as many
  mounted at the top and removed at the bottom as a page brings, back to back.
* **Keystrokes**: then, in that transcript, keys; an empty session in another fresh process
  is the baseline. A key is timed from the moment it is posted to the
  app until the first frame drawn after the prompt re-rendered with it; keys come 30 ms apart
  (a fast typist), so work a key leaves behind would delay the next one. Pilot's
  ``press`` + ``pause`` is not used for the figure: it waits for CPU idle (≥ 2 × 20 ms sleeps)
  and posts a callback to every widget on the screen, so it times the test harness.
* **Streaming**: the loopback server runs as its own process (as a real model server would:
  it must not share the GIL with the app) and streams the same paced reply twice: once
  drained by ``agent.llm.client.collect`` without a UI, once into the app through the real runtime.
  Both are timed from the first text delta to the end (for the app: the final text in the
  transcript and a frame drawn); the ratio shows whether rendering keeps up. Printed beside
  it: how much later each quarter of the deltas reached the app than the UI-less reader (a
  gap that grows is a backlog building up in the socket), and the time from the last delta
  to the final text on screen.

The whole module runs in about 1½ minutes, most of it the two 25-second streams and
mounting 2,000 entries.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import json
import math
import os
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from agent.llm.chat import ChatRequest, collect
from agent.llm.client import OpenAICompatible
from agent.llm.replies import StreamEvent, TextDelta
from agent.log.session import Session
from agent.meter import TokenMeter
from agent.settings import Settings, load_settings
from agent.tokens import Estimator
from compact.contract.registry import build_registry
from tests.bench.bench_session import build
from tests.bench.report import Figure
from tests.openai_server import ScriptedResponse
from tui import heap
from tui.app.app import ReeflineApp
from tui.runtime.wiring import build_runtime
from tui.widgets.prompt import PromptArea
from tui.widgets.reply import AssistantEntry
from tui.widgets.transcript import PAGE, REPLAY_WINDOW, ShowEarlier

GROUP = "Textual app"
ROOT = Path(__file__).resolve().parents[2]
SIZE = (120, 40)
MODEL = "m"
WINDOW = 128_000

RESUME_EVENTS = 10_000
RESUME_REPLACES = 10
RESUME_RUNS = 3

KEY_EVENTS = 5_200
"""A log of this many events renders as ~2,000 transcript entries."""
READ_PAGES = 60
"""The first pages of "show earlier" are asked for as a reader would: a press, then a pause
of READ_S to read the page (and FIRST_LOOK_S on the first screen before the first press);
the rest back to back, as a held key would."""
READ_S = 0.25
FIRST_LOOK_S = 1.0
FLOOR_PAGES = 100
KEYS = 50
KEY_WARMUP = 5
KEY_GAP_S = 0.03
PILOT_KEYS = 3

STREAM_TOKENS = 5_000
STREAM_RATE = 200
"""Tokens per second; the reply comes in about one delta per token, as model servers send."""


# --- environment --------------------------------------------------------------------------------


@contextlib.contextmanager
def isolated_env(tmp: Path) -> Iterator[Path]:
    """A private REEFLINE_HOME / REEFLINE_CONFIG / tiktoken cache for this process (and the
    children it starts), with no provider keys; the old environment comes back after."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "DEEPSEEK_", "REEFLINE_")):
            del os.environ[name]
    home = tmp / "home"
    (tmp / "config.toml").write_text("")  # a config that sets nothing
    os.environ.update(
        REEFLINE_HOME=str(home),
        REEFLINE_CONFIG=str(tmp / "config.toml"),
        TIKTOKEN_CACHE_DIR=str(tmp / "tiktoken"),
    )
    try:
        yield home
    finally:
        os.environ.clear()
        os.environ.update(saved)


def settings(base_url: str = "http://127.0.0.1:9/v1") -> Settings:
    """A real OpenAI-compatible model (no request is made unless a turn runs)."""
    flags = {"base_url": base_url, "model": MODEL, "context_window": WINDOW, "approve": "auto"}
    return load_settings(flags)


# --- resume -------------------------------------------------------------------------------------


async def _resume_app(session_id: str) -> tuple[float, int]:
    """Seconds from nothing to the resumed session on screen; entries mounted."""
    started = time.perf_counter()
    heap.defer_collection()  # as tui.shell.cli does before it opens a session for the app
    runtime = build_runtime(settings(), resume=session_id)
    app = ReeflineApp(runtime)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            elapsed = time.perf_counter() - started
            mounted = len(app.main.transcript.children)
            assert app.query(ShowEarlier), "a long session opens with its newest entries"
    finally:
        app.runtime.close()
    return elapsed, mounted


def _resume_core(home: Path, session_id: str) -> float:
    started = time.perf_counter()
    session = Session.open(home, session_id, registry=build_registry())
    meter = TokenMeter(session, Estimator(MODEL), WINDOW)
    meter.measure()  # the fold (lazy until the first reading)
    elapsed = time.perf_counter() - started
    meter.close()
    session.close()
    return elapsed


def resume_figure(home: Path) -> Figure:
    session = build(home, RESUME_EVENTS, RESUME_REPLACES)
    pristine = session.path.read_bytes()
    events = pristine.count(b"\n")
    apps: list[float] = []
    cores: list[float] = []
    for run in range(RESUME_RUNS + 1):  # run 0 warms imports, CSS and the tokenizer up
        # Opening appends closers and session/resume: start from the same bytes every time.
        session.path.write_bytes(pristine)
        gc.collect()
        app_s, mounted = asyncio.run(_resume_app(session.id))
        session.path.write_bytes(pristine)
        gc.collect()
        core_s = _resume_core(home, session.id)
        if run:
            apps.append(app_s)
            cores.append(core_s)
    app_s, core_s = statistics.median(apps), statistics.median(cores)
    return Figure(
        GROUP,
        f"resume a {events:,}-event session to first full screen ({mounted} entries mounted)",
        app_s,
        "s",
        "Session.open + TokenMeter fold",
        core_s,
        "ratio ≤ 3",
        app_s <= 3 * core_s,
    )


# --- keystrokes (run in a child process) ----------------------------------------------------


def peak_rss_mb() -> float:
    """This process's peak RSS. ``VmHWM`` where Linux has it: ``getrusage``'s ``ru_maxrss``
    survives ``exec``, so a child would report its parent's peak at fork if that was higher."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _frame(app: App[Any]) -> None:
    """Until the next frame is drawn (instrumentation of this bench only)."""
    drawn = asyncio.Event()
    display = app._display

    def app_display(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        if renderable is not None:
            drawn.set()

    app._display = app_display  # type: ignore[method-assign]
    try:
        app.screen.refresh()
        await asyncio.wait_for(drawn.wait(), 30)
    finally:
        app._display = display  # type: ignore[method-assign]


async def _type_keys(app: ReeflineApp, count: int) -> list[float]:
    """Post ``count`` keys, each timed to the first frame drawn after the prompt rendered it."""
    prompt = app.query_one(PromptArea)
    waiting: dict[str, Any] = {"want": None}
    painted = [0]
    render_lines = prompt.render_lines
    display = app._display

    def prompt_render_lines(crop: Any) -> Any:
        painted[0] = len(prompt.text)
        return render_lines(crop)

    def app_display(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        want = waiting["want"]
        if want is not None and renderable is not None and painted[0] >= want:
            waiting["at"] = time.perf_counter()
            waiting["want"] = None
            waiting["done"].set()

    # Instrumentation of this bench only: the app never knows.
    prompt.render_lines = prompt_render_lines  # type: ignore[method-assign]
    app._display = app_display  # type: ignore[method-assign]
    driver = app._driver
    assert driver is not None
    latencies = []
    for _ in range(count):
        waiting.update(want=len(prompt.text) + 1, done=asyncio.Event())
        sent = time.perf_counter()
        driver.send_message(events.Key("x", "x"))
        await asyncio.wait_for(waiting["done"].wait(), 30)
        latencies.append(waiting["at"] - sent)
        await asyncio.sleep(KEY_GAP_S)
    assert prompt.text.endswith("x" * count)
    return latencies


async def _keys(session_id: str) -> dict[str, float]:
    heap.defer_collection()  # as tui.shell.cli does
    runtime = build_runtime(settings(), resume=session_id)
    app = ReeflineApp(runtime)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            started = time.perf_counter()
            read: list[float] = []
            pages: list[float] = []
            if app.query(ShowEarlier):
                await asyncio.sleep(FIRST_LOOK_S)
            while app.query(ShowEarlier):
                page_started = time.perf_counter()
                await app.query_one(ShowEarlier).key_enter()
                await _frame(app)
                elapsed = time.perf_counter() - page_started
                if len(read) < READ_PAGES:
                    read.append(elapsed)
                    await asyncio.sleep(READ_S)
                else:
                    pages.append(elapsed)
            await pilot.pause()
            mount_s = time.perf_counter() - started
            entries = sum(1 for line in app.main.transcript.dump())
            mounted = len(app.main.transcript.children)
            widgets = sum(1 for _ in app.screen.walk_children(with_self=True))
            rss_mb = peak_rss_mb()
            app.query_one(PromptArea).focus()
            await pilot.pause()
            latencies = (await _type_keys(app, KEY_WARMUP + KEYS))[KEY_WARMUP:]
            pilot_s = []
            for _ in range(PILOT_KEYS):  # for comparison only: the harness's own round trip
                started = time.perf_counter()
                await pilot.press("y")
                await pilot.pause()
                pilot_s.append(time.perf_counter() - started)
    finally:
        app.runtime.close()
    latencies.sort()
    return {
        "median_ms": statistics.median(latencies) * 1000,
        "p95_ms": latencies[math.ceil(0.95 * len(latencies)) - 1] * 1000,
        "max_ms": latencies[-1] * 1000,
        "pilot_ms": statistics.median(pilot_s) * 1000,
        "entries": entries,
        "mounted": mounted,
        "read_ms": statistics.median(read) * 1000 if read else 0.0,
        "read_max_ms": max(read) * 1000 if read else 0.0,
        "read_pages": len(read),
        "page_ms": statistics.median(pages) * 1000 if pages else 0.0,
        "page_max_ms": max(pages) * 1000 if pages else 0.0,
        "held_pages": len(pages),
        "widgets": widgets,
        "mount_s": mount_s,
        "rss_mb": rss_mb,
    }


class _Floor(App[None]):
    """Textual alone: a scrolling column of ``count`` plain two-line Statics."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count

    def compose(self) -> ComposeResult:
        yield VerticalScroll(*(Static(f"entry {n}\nits second line") for n in range(self.count)))


async def _floor(mounted: int, count: int) -> dict[str, float]:
    """The framework's floor for a page: in a screen of ``mounted`` plain Statics (as many
    as the transcript had entries mounted), mount :data:`PAGE` more at the top and remove as
    many at the bottom, ``count`` times back to back, each until its frame is drawn."""
    app = _Floor(mounted)
    times: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        column = app.query_one(VerticalScroll)
        for n in range(count):
            started = time.perf_counter()
            with app.batch_update():
                await column.mount_all([Static(f"new {n}\nits second line") for _ in range(PAGE)],
                                       before=0)  # fmt: skip
                await column.remove_children(list(column.children)[-PAGE:])
            await _frame(app)
            times.append(time.perf_counter() - started)
    return {"floor_ms": statistics.median(times) * 1000, "floor_max_ms": max(times) * 1000}


def _in_child(mode: str, argument: str) -> Any:
    """This module's ``mode`` (``keys`` or ``resume``) in a fresh interpreter: its own peak
    RSS, and nothing earlier benchmarks of the same ``make bench`` left in this process (a
    tokenizer that failed to load, caches). Returns the JSON its last line printed."""
    out = subprocess.run(
        [sys.executable, "-m", "tests.bench.bench_tui", mode, argument],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{mode} child failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def keystroke_figures(home: Path) -> list[Figure]:
    big = build(home, KEY_EVENTS, KEY_EVENTS // 1000)
    empty = Session.create(home, cwd=str(home))
    empty.close()
    loaded: dict[str, float] = _in_child("keys", big.id)
    base: dict[str, float] = _in_child("keys", empty.id)
    entries = int(loaded["entries"])
    name = (
        f"after scrolling back through {entries:,} entries "
        f"({int(loaded['mounted']):,} mounted, {int(loaded['widgets']):,} widgets)"
    )
    for label, r in (("loaded", loaded), ("empty", base)):
        print(
            f"  [{label}: {int(r['entries'])} entries, {int(r['mounted'])} mounted, "
            f"{int(r['widgets'])} widgets, scrolled back in {r['mount_s']:.1f} s (read pages "
            f"median {r['read_ms']:.0f} ms, max {r['read_max_ms']:.0f} ms; held pages median "
            f"{r['page_ms']:.0f} ms, max {r['page_max_ms']:.0f} ms); keystroke median "
            f"{r['median_ms']:.2f} ms, p95 {r['p95_ms']:.2f} ms, max {r['max_ms']:.1f} ms; "
            f"pilot press+pause {r['pilot_ms']:.0f} ms; peak RSS {r['rss_mb']:.0f} MB]",
            flush=True,
        )
    return [
        Figure(
            GROUP,
            f"keystroke to screen, median of {KEYS}, {name}",
            loaded["median_ms"],
            "ms",
            "empty session",
            base["median_ms"],
            "≤ 50 ms",
            loaded["median_ms"] <= 50,
        ),
        Figure(
            GROUP,
            f'"show earlier" at a reader\'s pace (a press, then {READ_S} s to read): one page '
            f"of {PAGE} entries mounted and drawn, the slowest of {int(loaded['read_pages'])}",
            loaded["read_max_ms"],
            "ms",
            f"Textual alone: {PAGE} plain Statics in, {PAGE} out, the slowest of {FLOOR_PAGES}",
            loaded["floor_max_ms"],
            target="≤ 100 ms",
            ok=loaded["read_max_ms"] <= 100,
        ),
        Figure(
            GROUP,
            f'"show earlier" back to back (a held key): one page of {PAGE} entries mounted and '
            f"drawn, median of {int(loaded['held_pages'])}",
            loaded["page_ms"],
            "ms",
            f"Textual alone: {PAGE} plain Statics in, {PAGE} out, median of {FLOOR_PAGES}",
            loaded["floor_ms"],
            target="≤ 100 ms",
            ok=loaded["page_ms"] <= 100,
        ),
        Figure(
            GROUP,
            '"show earlier" back to back: the slowest of those pages (the garbage collector\'s '
            "full passes land in them)",
            loaded["page_max_ms"],
            "ms",
            f"Textual alone, the slowest of {FLOOR_PAGES}",
            loaded["floor_max_ms"],
            target="≤ 100 ms",
            ok=loaded["page_max_ms"] <= 100,
        ),
        Figure(
            GROUP,
            f"peak RSS {name}",
            loaded["rss_mb"],
            "MB",
            "empty session",
            base["rss_mb"],
            "ratio ≤ 1.5",
            loaded["rss_mb"] <= 1.5 * base["rss_mb"],
        ),
    ]


# --- streaming ----------------------------------------------------------------------------------


def stream_spec() -> dict[str, Any]:
    """~STREAM_TOKENS tokens of filler in about as many deltas, paced so the whole reply
    takes STREAM_TOKENS / STREAM_RATE seconds (the server sleeps ``delay_s`` before each)."""
    estimator = Estimator(MODEL)
    probe = ScriptedResponse(words=1000).full_text
    words = round(1000 * STREAM_TOKENS / estimator.count(probe))
    text = ScriptedResponse(words=words).full_text
    chunk = max(1, round(len(text) / STREAM_TOKENS))
    deltas = math.ceil(len(text) / chunk)
    return {
        "words": words,
        "chunk_size": chunk,
        "delay_s": STREAM_TOKENS / STREAM_RATE / deltas,
        "usage": True,
    }


@contextlib.contextmanager
def server_process(script: list[dict[str, Any]], tmp: Path) -> Iterator[str]:
    """``python -m tests.openai_server --script`` answering ``script`` in order."""
    path = tmp / "script.json"
    path.write_text(json.dumps(script))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.openai_server", "--script", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"the loopback server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def _stream_alone(base_url: str) -> tuple[float, str, list[float]]:
    """Seconds from the first text delta to the reply, drained by ``collect``; the text;
    the arrival time of every text delta."""
    model = OpenAICompatible(base_url, None, "local", request_timeout=60)
    arrivals: list[float] = []

    async def timed(stream: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
        async for item in stream:
            if isinstance(item, TextDelta):
                arrivals.append(time.perf_counter())
            yield item

    request = ChatRequest(
        model=MODEL,
        messages=[
            {"role": "system", "content": "You are a benchmark."},
            {"role": "user", "content": "stream"},
        ],
    )
    try:
        reply = await collect(timed(model.stream(request)))
    finally:
        await model.aclose()
    return time.perf_counter() - arrivals[0], reply.text, arrivals


async def _stream_app(base_url: str, text: str) -> tuple[float, float, list[float]]:
    """Seconds from the first text delta to the final text on screen, and the largest lag
    (s) between receiving text and handing it to the Markdown widget, sampled every 100 ms
    (it includes the 50 ms batching of ``AssistantEntry.write``)."""
    runtime = build_runtime(settings(base_url))
    app = ReeflineApp(runtime)
    received: list[tuple[float, int]] = []  # (time, characters received so far)

    def listener(item: StreamEvent) -> None:
        if isinstance(item, TextDelta):
            total = received[-1][1] if received else 0
            received.append((time.perf_counter(), total + len(item.text)))

    max_lag = 0.0

    async def sample() -> None:
        """Until the reply is logged (the live entry is then settled and let go)."""
        nonlocal max_lag
        streaming = False
        while True:
            await asyncio.sleep(0.1)
            live = app.main.transcript._live
            if live is None and streaming:
                return
            if not received:
                continue
            streaming = streaming or live is not None
            length = len(live.source) if live is not None and live.is_mounted else 0
            if length < received[-1][1]:
                # The oldest text not handed to the Markdown widget yet: its age.
                shown_at = next(t for t, n in received if n > length)
                max_lag = max(max_lag, time.perf_counter() - shown_at)

    def final_on_screen() -> bool:
        entries = app.main.transcript.query(AssistantEntry)
        return (
            not app.busy
            and app.main.transcript._live is None
            and bool(entries)
            and entries.last().source.strip() == text.strip()
        )

    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            runtime.agent.listen(listener)
            prompt = app.query_one(PromptArea)
            prompt.load_text("stream a long answer")
            sampler = asyncio.create_task(sample())
            await pilot.press("enter")
            deadline = time.monotonic() + 20 + 2 * STREAM_TOKENS / STREAM_RATE
            while not final_on_screen():
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        "the app never showed the final text:\n"
                        + "\n".join(app.main.transcript.dump()[-5:])
                    )
                await asyncio.sleep(0.005)
            await pilot.pause()  # the frame with it
            elapsed = time.perf_counter() - received[0][0]
            sampler.cancel()
            tail = time.perf_counter() - received[-1][0]
            print(f"  [in the app: last delta → final text on screen {tail:.2f} s]", flush=True)
    finally:
        app.runtime.close()
    return elapsed, max_lag, [t for t, _ in received]


def streaming_figures(tmp: Path) -> list[Figure]:
    spec = stream_spec()
    with server_process([spec, spec], tmp) as base_url:
        alone, text, base_arrivals = asyncio.run(_stream_alone(base_url))
        in_app, lag, app_arrivals = asyncio.run(_stream_app(base_url, text))
    # Does the app read the stream more slowly, and does the gap grow? Delta i's arrival
    # (from the first delta) in the app minus the same in the UI-less run, at each quarter.
    if len(base_arrivals) == len(app_arrivals):
        n = len(app_arrivals) - 1
        gaps = [
            (app_arrivals[i] - app_arrivals[0]) - (base_arrivals[i] - base_arrivals[0])
            for i in (n // 4, n // 2, 3 * n // 4, n)
        ]
        quarters = ", ".join(f"{g * 1000:.0f}" for g in gaps)
        print(f"  [delta arrival, app − UI-less, at 25/50/75/100%: {quarters} ms]", flush=True)
    ratio = in_app / alone
    deltas = math.ceil(len(text) / spec["chunk_size"])
    return [
        Figure(
            GROUP,
            f"stream {STREAM_TOKENS:,} tokens ({deltas:,} deltas) at {STREAM_RATE} tokens/s: "
            "first delta → final text on screen",
            in_app,
            "s",
            "same stream drained by agent.llm.collect",
            alone,
            "ratio ≤ 1.1 (no growing backlog)",
            ratio <= 1.1,
        ),
        Figure(
            GROUP,
            "largest age of received text not yet handed to the Markdown widget (sampled)",
            lag * 1000,
            "ms",
        ),
    ]


# --- entry points -------------------------------------------------------------------------------


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp, isolated_env(Path(tmp)) as home:
        figures = [Figure(**_in_child("resume", str(home)))]
        figures += keystroke_figures(home)
        figures += streaming_figures(Path(tmp))
    return figures


if __name__ == "__main__":
    if sys.argv[1:2] == ["keys"]:
        result = asyncio.run(_keys(sys.argv[2]))
        if result["entries"] > REPLAY_WINDOW:  # the long session: Textual's floor beside it
            gc.collect()  # what the app left; the libraries frozen, as reefline has them
            gc.freeze()
            result |= asyncio.run(_floor(int(result["mounted"]), FLOOR_PAGES))
        print(json.dumps(result))
    elif sys.argv[1:2] == ["resume"]:
        print(json.dumps(dataclasses.asdict(resume_figure(Path(sys.argv[2])))))
    else:
        for figure in run():
            print(figure)
