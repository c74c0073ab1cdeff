"""``next:`` hints run as written (issue #32: after ``make sync`` they named
``skillsbench-agentbeats``, which is not on PATH; it needs ``uv run``). Each way of starting the
command prints a hint, and that hint, run by a shell with the same PATH in the same folder,
works. PATH here is what a shell has after ``make sync``: system folders only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from serving.invocation import command_prefix

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
SCRIPT = VENV_BIN / "skillsbench-agentbeats"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
TASK = "csv-sales-summary"


def _env(path: str) -> dict[str, str]:
    drop = ("UV", "UV_RUN_RECURSION_DEPTH", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop} | {"PATH": path}


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One oracle trial, for ``trials list`` to list and its hint's ``trials show`` to show."""
    folder = tmp_path_factory.mktemp("hints") / "jobs"
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "run", "--task-set", "examples",
         "--task-id", TASK, "--agent", "oracle", "--jobs-dir", str(folder)],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def _uv() -> str | None:
    local = REPO / ".tools" / "bin" / "uv"
    return str(local) if local.exists() else shutil.which("uv")


def _hint_runs(argv: list[str], path: str, cwd: Path, jobs: Path) -> str:
    """Run ``trials list`` as ``argv`` starts it, then its ``next:`` line in a shell; the hint."""
    listed = subprocess.run(
        [*argv, "trials", "list", str(jobs)],
        capture_output=True, text=True, timeout=120, cwd=cwd, env=_env(path),
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    [hint] = [line for line in listed.stdout.splitlines() if line.startswith("next: ")]
    command = hint.removeprefix("next: ").replace("TRIAL_ID_OR_TASK", TASK)
    shown = subprocess.run(
        ["/bin/sh", "-c", command],
        capture_output=True, text=True, timeout=120, cwd=cwd, env=_env(path),
    )  # fmt: skip
    assert shown.returncode == 0, f"{command!r} did not run as written: {shown.stderr}"
    assert "Trial:" in shown.stdout and TASK in shown.stdout
    return command


def test_console_script_by_its_path(jobs: Path) -> None:
    command = _hint_runs([str(SCRIPT)], SYSTEM_PATH, REPO, jobs)
    assert command.startswith(f"{SCRIPT.relative_to(REPO)} trials show {TASK}")


def test_console_script_on_path(jobs: Path) -> None:
    command = _hint_runs(["skillsbench-agentbeats"], f"{VENV_BIN}:{SYSTEM_PATH}", REPO, jobs)
    assert command.startswith(f"skillsbench-agentbeats trials show {TASK}")


def test_python_dash_m_elsewhere(jobs: Path, tmp_path: Path) -> None:
    command = _hint_runs(
        [sys.executable, "-m", "skillsbench_agentbeats"], SYSTEM_PATH, tmp_path, jobs
    )
    assert command.startswith(f"{SCRIPT} trials show {TASK}")  # absolute: outside the repo


def test_uv_run(jobs: Path) -> None:
    uv = _uv()
    if uv is None:
        pytest.skip("no uv here (make fetches one into .tools/bin)")
    command = _hint_runs([uv, "run", "--frozen", "skillsbench-agentbeats"], SYSTEM_PATH, REPO, jobs)
    shown = os.path.relpath(uv, REPO) if Path(uv).is_relative_to(REPO) else uv
    assert command.startswith(f"{shown} run skillsbench-agentbeats trials show {TASK}")


def test_prefix_rules_without_a_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rules, for cases a subprocess cannot show cheaply: uv on PATH, a python that
    PATH finds, a script in the current folder itself."""
    uv = tmp_path / "bin" / "uv"
    uv.parent.mkdir()
    uv.write_text("#!/bin/sh\n")
    uv.chmod(0o755)
    under_uv = {"UV_RUN_RECURSION_DEPTH": "1", "UV": str(uv), "PATH": str(uv.parent)}
    assert command_prefix(under_uv, "x", sys.executable) == "uv run skillsbench-agentbeats"
    python = tmp_path / "bin" / "python3"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    plain = {"PATH": str(uv.parent)}
    assert command_prefix(plain, "/x/skillsbench_agentbeats/__main__.py", str(python)) == (
        "python3 -m skillsbench_agentbeats"
    )
    monkeypatch.chdir(tmp_path / "bin")
    script = str(tmp_path / "bin" / "skillsbench-agentbeats")
    assert command_prefix({"PATH": "/nowhere"}, script, str(python)) == "./skillsbench-agentbeats"
