# The two commands: `make demo` (the main job on the embedded default) and `make test`.
# Needs only Python >= 3.11 and make; uv is brought from the package index when missing.

SHELL := /bin/bash
PYTHON ?= python3
export UV_PYTHON_DOWNLOADS := never
UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := .tools/bin/uv
endif
RUN := $(UV) run --frozen
PYTEST_WORKERS ?= auto

.PHONY: demo test lint typecheck sync clean

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet uv

.venv/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --quiet
	@touch $@

sync: .venv/.synced

demo: sync
	$(RUN) python -m skillsbench_agentbeats.demo

test: sync
	$(RUN) pytest -n $(PYTEST_WORKERS) -q

lint: sync
	$(RUN) ruff check .
	$(RUN) ruff format --check .

typecheck: sync
	$(RUN) mypy

clean:
	rm -rf .venv .tools .demo .mypy_cache .ruff_cache .pytest_cache
