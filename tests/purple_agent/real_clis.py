"""The real coding-agent CLIs from PyPI, installed once into a cache outside the repository.

``cli_bin(name)`` returns a folder holding the CLI's command (to put on PATH), installing it on
first use with uv into ``$SKILLSBENCH_CLI_CACHE`` (default
``${XDG_CACHE_HOME:-~/.cache}/skillsbench-agentbeats/clis``), one venv per CLI and version, on a
Python 3.12 that uv finds or installs. It calls ``pytest.skip`` with the reason when the install
cannot happen (no uv, no Python 3.12, no package index). Run ``python -m tests.purple_agent.real_clis``
to install them all ahead of a test run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support import REPO_ROOT


@dataclass(frozen=True)
class PypiCli:
    package: str  # requirement, pinned
    command: str  # the command the harness runs
    target: str  # where it is in the venv (bin/NAME, or a path under site-packages)
    needs: tuple[str, ...] = ()  # host programs it needs


CLIS = {
    "openhands": PypiCli("openhands==1.16.0", "openhands", "bin/openhands"),
    "claude-code": PypiCli(
        "claude-agent-sdk==0.2.189", "claude", "site-packages/claude_agent_sdk/_bundled/claude"
    ),
    "codex": PypiCli(
        "openai-codex-cli-bin==0.163.0", "codex", "site-packages/codex_cli_bin/bin/codex"
    ),
    "terminus": PypiCli("terminus-ai==2.0.4", "terminus", "bin/terminus", needs=("tmux",)),
}
PYTHON = "3.12"


def cache_dir() -> Path:
    if os.environ.get("SKILLSBENCH_CLI_CACHE"):
        return Path(os.environ["SKILLSBENCH_CLI_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skillsbench-agentbeats" / "clis"


def _uv() -> str | None:
    local = REPO_ROOT / ".tools" / "bin" / "uv"
    return str(local) if local.exists() else shutil.which("uv")


def _works(python: str) -> bool:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except OSError:
        return False
    return done.stdout.strip() == PYTHON


def _python(uv: str) -> str | None:
    """A Python 3.12 interpreter: found by uv, on PATH, under pyenv, or installed by uv."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    for attempt in range(2):
        found = subprocess.run([uv, "python", "find", PYTHON], capture_output=True, text=True)
        candidates = [found.stdout.strip(), shutil.which(f"python{PYTHON}") or ""]
        candidates += [str(p) for p in sorted(pyenv.glob(f"{PYTHON}.*/bin/python{PYTHON}"))]
        for candidate in candidates:
            if candidate and _works(candidate):
                return candidate
        if attempt == 0:
            subprocess.run([uv, "python", "install", PYTHON], capture_output=True, text=True)
    return None


def install(name: str) -> tuple[Path | None, str]:
    """(bin folder, "") once installed, else (None, why not)."""
    spec = CLIS[name]
    for program in spec.needs:
        if shutil.which(program) is None:
            return (
                None,
                f"{name} needs {program}, which is not installed (Debian package {program}; `make test` installs it as root)",
            )
    venv = cache_dir() / spec.package.replace("==", "-")
    bin_dir = venv / "skillsbench-bin"
    if (bin_dir / spec.command).exists():
        return bin_dir, ""
    uv = _uv()
    if uv is None:
        return None, "uv is not installed, so the CLI cannot be installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time (pytest -n 2)
        if (bin_dir / spec.command).exists():
            return bin_dir, ""
        shutil.rmtree(venv, ignore_errors=True)
        python = _python(uv)
        if python is None:
            return None, f"no Python {PYTHON} here and uv cannot install one"
        steps = [
            [uv, "venv", "--quiet", "--python", python, str(venv)],
            [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
             spec.package],
        ]  # fmt: skip
        env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
        for argv in steps:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
            if done.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                return None, f"cannot install {spec.package} with uv: {last}"
        if spec.target.startswith("site-packages/"):
            [site] = (venv / "lib").glob("python3.*/site-packages")
            real = site / spec.target.removeprefix("site-packages/")
        else:
            real = venv / spec.target
        if not real.exists():
            return None, f"{spec.package} installed no {spec.target}"
        bin_dir.mkdir()
        (bin_dir / spec.command).symlink_to(real)
    return bin_dir, ""


if __name__ == "__main__":
    for cli in sys.argv[1:] or sorted(CLIS):
        found, why = install(cli)
        print(f"{cli}: {found or why}")
