# The two commands: `make demo` (the main job on the embedded default) and `make test`.
# Needs only Python >= 3.11 and make; uv is brought from the package index when missing.

SHELL := /bin/bash
PYTHON ?= python3
export UV_PYTHON_DOWNLOADS := never
# Use the system certificate store (machines behind a TLS-inspecting proxy add their CA there).
export UV_SYSTEM_CERTS ?= 1
UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := .tools/bin/uv
endif
RUN := $(UV) run --frozen
PYTEST_WORKERS ?= auto

.PHONY: demo test test-redteam test-ray bench-smoke check-real lint typecheck sync host-packages clean

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet uv

.venv/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --quiet
	@touch $@

# A separate environment with a2a-sdk 0.3.x: tests drive our 1.x servers with a genuine 0.3 peer.
.venv-a2a03/.synced: $(UV) tests/a2a03/requirements.txt
	$(UV) venv --quiet --allow-existing .venv-a2a03
	$(UV) pip install --quiet --python .venv-a2a03/bin/python -r tests/a2a03/requirements.txt
	@touch $@

sync: .venv/.synced .venv-a2a03/.synced

demo: sync
	$(RUN) python -m skillsbench_agentbeats.demo

# Debian packages some tests need (Docker test images, headless Chromium): installed when root on
# Debian/Ubuntu; elsewhere the tests that need a missing one skip, naming it.
host-packages:
	@sh tests/host-packages.sh

# The Ray cluster tests share one cluster: --dist loadgroup keeps them on one xdist worker.
test: sync host-packages
	$(RUN) pytest -n $(PYTEST_WORKERS) --dist loadgroup -q --durations=30

# The red-team suites' whole matrix (tests/worker/trial/test_redteam*.py): every held attempt on
# docker as well as on local, the known breaks and the voided honest layouts (strict xfails).
# `make test` runs each attempt once (local; docker for those only docker can run).
test-redteam: sync host-packages
	SKILLSBENCH_REDTEAM_BREAKS=1 $(RUN) pytest -n $(PYTEST_WORKERS) --dist loadgroup -q tests/worker/trial/test_redteam*.py

# The Ray cluster tests alone (a multi-node cluster on this machine; also part of `make test`).
test-ray: sync
	$(RUN) pytest -p no:xdist -q -m ray_cluster tests/worker/executors/test_ray.py

# Every benchmark (bench/) for a few iterations, so a broken one fails; figures are not judged.
# The docker modes run when a Docker engine answers and the test images can be built.
bench-smoke: sync host-packages
	$(RUN) python bench/smoke.py

# The real SkillsBench tasks (a folder of them: TASKS=DIR) in Docker on offline stand-in bases:
# oracle passes, nop fails (docs/task-sets.md). Needs root, debootstrap and a Docker Engine; not in `make test`.
TASKS ?=
CHECK_REAL_ARGS ?=
check-real: sync
	@test -n "$(TASKS)" || { echo "usage: make check-real TASKS=DIR [CHECK_REAL_ARGS='--only ID,... --json-report F']"; exit 2; }
	$(RUN) python bench/check_real.py --tasks "$(TASKS)" $(CHECK_REAL_ARGS)

# lint-imports: the "may import" rules of the component table (pyproject [tool.importlinter]).
lint: sync
	$(RUN) ruff check .
	$(RUN) ruff format --check .
	$(RUN) lint-imports
	git ls-files -co --exclude-standard '*.sh' .ci/run | xargs $(RUN) shellcheck

typecheck: sync
	$(RUN) mypy

clean:
	rm -rf .venv .venv-a2a03 .tools .demo .mypy_cache .ruff_cache .pytest_cache
