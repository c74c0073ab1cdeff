"""The real Amber CLI, where one is available: ``$AMBER``, ``amber`` on PATH, or a local
``ghcr.io/rdi-foundation/amber-cli`` image (run with Docker; never pulled).

``manifests check`` runs ``amber check`` on each file through it, besides our own check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

AMBER_IMAGE = "ghcr.io/rdi-foundation/amber-cli"
CHECK_TIMEOUT_SEC = 300.0


class AmberUnavailable(Exception):
    """``$AMBER`` names no executable (a setting error, not "no Amber here")."""


@dataclass(frozen=True)
class AmberCli:
    """How to run ``amber``: an executable, or ``/amber`` inside a local amber-cli image."""

    source: str  # "AMBER", "PATH" or "image"
    executable: str | None = None
    image: str | None = None

    def describe(self) -> str:
        if self.image is not None:
            return f"amber from the local image {self.image}"
        where = "$AMBER" if self.source == "AMBER" else "PATH"
        return f"amber {self.executable} (from {where})"

    def check_command(self, file: Path, deny: Sequence[str]) -> list[str]:
        args = ["check", *(a for d in deny for a in ("-D", d)), str(file)]
        if self.image is None:
            assert self.executable is not None
            return [self.executable, *args]
        # The manifest's directory (its local children) is mounted read-only at the same path.
        folder = str(file.parent)
        return [
            "docker",
            "run",
            "--rm",
            "--entrypoint",
            "/amber",
            "-v",
            f"{folder}:{folder}:ro",
            "-w",
            folder,
            self.image,
            *args,
        ]


def find_amber(env: Mapping[str, str] | None = None) -> AmberCli | None:
    """The Amber CLI to use, or None. ``$AMBER`` wins and must name an executable."""
    env = os.environ if env is None else env
    path = env.get("PATH", os.defpath)
    named = env.get("AMBER", "").strip()
    if named:
        found = shutil.which(named, path=path)
        if found is None:
            raise AmberUnavailable(f"AMBER={named} is not an executable file")
        return AmberCli("AMBER", executable=str(Path(found).resolve()))
    on_path = shutil.which("amber", path=path)
    if on_path is not None:
        return AmberCli("PATH", executable=on_path)
    image = _local_image(path)
    return AmberCli("image", image=image) if image else None


def _local_image(path: str) -> str | None:
    docker = shutil.which("docker", path=path)
    if docker is None:
        return None
    try:
        done = subprocess.run(
            [docker, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", AMBER_IMAGE],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    tags = [line for line in done.stdout.split() if line and not line.endswith(":<none>")]
    return sorted(tags)[-1] if done.returncode == 0 and tags else None


@dataclass(frozen=True)
class AmberRun:
    file: Path
    exit_code: int
    output: str


def run_amber_check(cli: AmberCli, files: Sequence[Path], deny: Sequence[str]) -> list[AmberRun]:
    """``amber check`` on each file (Amber checks one root per call)."""
    runs = []
    for file in files:
        command = cli.check_command(file.resolve(), deny)
        try:
            done = subprocess.run(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=CHECK_TIMEOUT_SEC,
            )
        except subprocess.TimeoutExpired:
            runs.append(AmberRun(file, 124, f"amber check timed out after {CHECK_TIMEOUT_SEC}s"))
            continue
        except OSError as exc:
            runs.append(AmberRun(file, 127, f"cannot run {command[0]}: {exc}"))
            continue
        runs.append(AmberRun(file, done.returncode, done.stdout))
    return runs
