"""The README's and docs' commands run as written from the repository root (issue #16 item 6).

Every `skillsbench-agentbeats` line of a shell block in README.md and docs/*.md:
- names subcommands that exist (their `--help` answers, in-process: fast);
- is written to run: through `uv run` (a bare `skillsbench-agentbeats` needs the project's
  environment on PATH, which a fresh clone does not have);
- names repository paths that exist (`leaderboard/results/*.json`, not a `results/` folder that
  only a later step creates; `results/...` outputs are fine).
The cheap, offline commands without placeholders (README first, then docs/) run exactly as
written, through `uv run` and bash from the repository root, in about 15 s; the rest are listed
in NOT_RUN (by subcommand) or FLOW_STEPS (steps of a longer flow) with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from skillsbench_agentbeats.cli import cli
from tests.support import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = [README, *sorted((REPO_ROOT / "docs").glob("*.md"))]
ENTRY = "skillsbench-agentbeats"
SHELL_FENCES = {"", "sh", "bash", "shell", "console"}

# Subcommands whose documented lines are not run here, and why (their --help still is).
NOT_RUN = {
    "green": "a long-running server",
    "worker": "a long-running server",
    "purple": "a long-running server",
    "assess": "starts a green agent, a worker and runs a task set (tests/skillsbench_agentbeats/test_cli.py)",
    "task-set check": "runs the oracle and nop on every task (tests/skillsbench_agentbeats/test_task_set_check.py)",
    "task-set build": "writes a manifest (tests/task_sets/test_cli.py)",
    "task-set fetch": "needs the network (tests/task_sets/test_fetch.py: a loopback git server)",
    "leaderboard aggregate": "needs shard files from assess (tests/leaderboard/test_aggregate.py)",
    "leaderboard normalize": "needs a worker payload file",
    "leaderboard sample": "rewrites the committed sample files",
    "readiness": "needs evidence files (tests/leaderboard/test_readiness_cli.py)",
    "images": "needs the Docker Engine and built images",
    "deploy-bundle": "writes a deployment bundle",
    "ghcr-preflight": "needs GitHub credentials and the network",
    "agents": "lists the manifest agents of a configured folder",
    "view": "a long-running server (tests/worker/viewer)",
}
# Subcommands cheap enough to run as written when the line has no placeholder.
RUN_AS_WRITTEN = (
    "config check",
    "task-set digest",
    "task-set verify",
    "task-set shard",
    "leaderboard query",
    "leaderboard validate",
    "leaderboard report",
    "manifests check",
    "run",  # only the README's one-task oracle run (no placeholder), a few seconds
    "trials show",
    "trials requests",
    "trials list",
    "trials view",
)
# Lines of a cheap subcommand that are steps of a longer flow: not run here, and why.
FLOW_STEPS = {
    "--agent py-acp-agent": "needs python3.11 with the ACP agent's packages (tests/worker/acp)",
    "results/my-agent.json": "step 3 of the Quick Submit flow: needs the shards from step 1",
    "--results 'results/*.json'": "step 3 of the Quick Submit flow: needs the shards from step 1",
    "--agent a2a:http://127.0.0.1:9019": "needs the example purple agent started just before",
    "--task-set skillsbench-v1.1 --agent oracle --environment docker": "the real benchmark: needs "
    "its fetched tasks and Docker (tests/task_sets/test_fetch.py runs a fetched set)",
    "-a my-manifest-agent": "an example: needs your manifest agent and a model key",
}
PLACEHOLDER = re.compile(r"\[|…|\.\.\.|<[^>]*>|\b[A-Z][A-Z_]{2,}\b(?!=)|[^'\"\s]\|[^'\"\s]")
TOP_DIRS = ("tasks/", "task_sets/", "leaderboard/", "integrations/", "docs/", "tests/", "bench/")


def shell_lines(path: Path) -> Iterator[str]:
    """The lines of a file's shell blocks, continuations joined, trailing comments dropped."""
    fence: str | None = None
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        opened = re.match(r"^\s*```(\w*)", raw)
        if opened:
            fence = None if fence is not None else opened.group(1)
            continue
        if fence not in SHELL_FENCES:
            continue
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        line = re.sub(r"\s{2,}#.*$", "", line).strip()
        if line and not line.startswith("#"):
            yield re.sub(r"\s+", " ", line)


def documented() -> list[tuple[str, str]]:
    return [(path.name, line) for path in DOCS for line in shell_lines(path) if f"{ENTRY} " in line]


def subcommand(line: str) -> list[str]:
    """The subcommand path of a line: the words after the entry point up to an option/value."""
    words = line.split(f"{ENTRY} ", 1)[1].split()
    group: click.Command = cli
    path: list[str] = []
    for word in words:
        if not isinstance(group, click.Group):
            break
        ctx = click.Context(group)
        if word not in group.list_commands(ctx):
            break
        path.append(word)
        found = group.get_command(ctx, word)
        assert found is not None, path
        group = found
    return path


def test_the_docs_name_commands() -> None:
    found = documented()
    assert len(found) >= 40, found  # the parser finds the commands it should
    assert any(name == "README.md" for name, _ in found)


def test_every_documented_command_runs_through_uv_and_exists() -> None:
    runner = CliRunner()
    problems = []
    helped: set[tuple[str, ...]] = set()
    for name, line in documented():
        before = line[: line.index(ENTRY)]
        if before.startswith("docker run"):
            continue  # the command inside a container image, where it is on PATH
        if "uv run" not in before:
            problems.append(f"{name}: not run through `uv run`: {line}")
        path = subcommand(line)
        if not path:
            problems.append(f"{name}: names no subcommand: {line}")
            continue
        if tuple(path) in helped:
            continue
        helped.add(tuple(path))
        result = runner.invoke(cli, [*path, "--help"])
        if result.exit_code != 0:
            problems.append(f"{name}: `{' '.join(path)} --help` fails: {result.output[-300:]}")
    assert not problems, "\n".join(problems)


def test_documented_repository_paths_exist() -> None:
    problems = []
    for path in DOCS:
        for line in shell_lines(path):
            if ENTRY not in line and not line.startswith(("uv run", "make")):
                continue  # a folder listing, not a command
            for word in line.split():
                token = word.strip("'\"[]()")
                if not token.startswith(TOP_DIRS) or PLACEHOLDER.search(token):
                    continue
                if not list(REPO_ROOT.glob(token.rstrip("/"))):
                    problems.append(f"{path.name}: {token} does not exist: {line}")
    assert not problems, "\n".join(problems)


def _uv_env() -> dict[str, str]:
    env = dict(os.environ)
    if shutil.which("uv") is None:
        tools = REPO_ROOT / ".tools" / "bin"
        if not (tools / "uv").exists():
            pytest.skip("uv is neither on PATH nor in .tools/bin (run `make sync`)")
        env["PATH"] = f"{tools}{os.pathsep}{env.get('PATH', '')}"
    env["UV_OFFLINE"] = "1"  # tests never reach the network; the environment is synced
    env["UV_FROZEN"] = "1"
    env.pop("VIRTUAL_ENV", None)
    return env


def runnable(docs: set[str]) -> list[str]:
    """Lines of cheap subcommands without placeholders, in document order; flow steps left out."""
    lines = []
    for name, line in documented():
        path = " ".join(subcommand(line))
        if name not in docs or path not in RUN_AS_WRITTEN:
            continue
        if PLACEHOLDER.search(line.split(ENTRY, 1)[1]):
            continue
        if any(step in line for step in FLOW_STEPS):
            continue
        lines.append(line)
    return lines


def test_readme_and_docs_commands_run_as_written() -> None:
    env = _uv_env()
    readme = runnable({"README.md"})
    ran = {" ".join(subcommand(line)) for line in readme}
    # What must run: a typo in the README (or a placeholder sneaking in) shows here.
    assert {"config check", "task-set digest", "leaderboard query", "leaderboard validate"} <= ran
    assert {"leaderboard report", "manifests check", "run", "trials show"} <= ran, readme
    # The README first (its one-task run makes the trial the docs' trial commands read).
    runnable_lines = readme + runnable({path.name for path in DOCS[1:]})
    report = REPO_ROOT / "leaderboard.html"
    had_report = report.exists()
    try:
        for line in runnable_lines:
            done = subprocess.run(
                ["bash", "-c", line],
                cwd=REPO_ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{line}\nexit {done.returncode}\n{done.stderr[-2000:]}"
    finally:
        if not had_report:
            report.unlink(missing_ok=True)


def test_every_subcommand_not_run_has_a_reason() -> None:
    lines = [line for _, line in documented()]
    for step in FLOW_STEPS:  # no stale entries
        assert any(step in line for line in lines), f"FLOW_STEPS names no documented line: {step}"
    for _, line in documented():
        path = " ".join(subcommand(line))
        if path in RUN_AS_WRITTEN or line.startswith("docker run"):
            continue
        assert any(path == key or path.startswith(f"{key} ") for key in NOT_RUN), (
            f"`{path}` is documented but neither run here nor listed in NOT_RUN: {line}"
        )
