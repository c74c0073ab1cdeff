"""The image tests' side of the local Python base (integrations/agentbeats/base_image.py, which
``skillsbench-agentbeats images build-base`` makes for operators): the same base, and a variant
with this host's CPython 3.12 laid beside it for the purple image's CLIs."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from integrations.agentbeats.base_image import (
    LABEL,
    REPOSITORY,
    SUITE,
    ensure_python_base_image,
    exclusive,
    has_image,
    install_host_python,
)

__all__ = ["CLI_PYTHON_PATH", "ensure_cli_python_image", "ensure_python_base_image"]


# The Python the agent-under-test image's CLI_PYTHON names (openhands and terminus need 3.12).
# uv would download it from GitHub, which a machine without a registry cannot reach: a CPython
# 3.12 of this host (pyenv, built for this glibc) is laid beside the base image's 3.11 instead.
CLI_PYTHON = "3.12"
CLI_PYTHON_PATH = f"/usr/local/bin/python{CLI_PYTHON}"


def host_cli_python() -> tuple[Path, str] | None:
    """(prefix, version string) of a CPython ``CLI_PYTHON`` on this host that can be copied."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    for prefix in sorted(pyenv.glob(f"{CLI_PYTHON}.*"), reverse=True):
        python = prefix / "bin" / f"python{CLI_PYTHON}"
        if not python.is_file() or not (prefix / "lib" / f"python{CLI_PYTHON}").is_dir():
            continue
        probe = "import sys, sysconfig; print(sys.version.split()[0], sysconfig.get_config_var('Py_ENABLE_SHARED'))"
        done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
        if done.returncode != 0:
            continue
        version, shared = done.stdout.split()
        if shared == "1" and not (prefix / "lib" / f"libpython{CLI_PYTHON}.so.1.0").exists():
            continue
        return prefix, version
    return None


def ensure_cli_python_image(client: Any, base_tag: str) -> str:
    """``base_tag`` with this host's CPython ``CLI_PYTHON`` at ``CLI_PYTHON_PATH`` (built once,
    cached by tag); RuntimeError naming why when this host has none."""
    found = host_cli_python()
    if found is None:
        raise RuntimeError(
            f"no CPython {CLI_PYTHON} on this host to lay into the image (pyenv install {CLI_PYTHON})"
        )
    prefix, version = found
    base_id = client.images.get(base_tag).id
    key = hashlib.sha256(f"{base_id}\0{prefix}\0{version}\0v1".encode()).hexdigest()[:12]
    tag = f"{REPOSITORY}:{SUITE}-python{CLI_PYTHON}-{key}"
    with exclusive():
        if has_image(client, tag):
            return tag
        with tempfile.TemporaryDirectory(prefix="skillsbench-cli-python-") as tmp:
            install_host_python(prefix, Path(tmp), CLI_PYTHON, default=False)
            (Path(tmp) / "Dockerfile").write_text(
                f"FROM {base_tag}\n"
                "COPY usr/ /usr/\n"
                f"RUN ldconfig && {CLI_PYTHON_PATH} -c 'import ssl, sqlite3, ctypes, lzma, bz2'\n"
                f"LABEL {LABEL}={tag}\n"
            )
            client.images.build(path=tmp, tag=tag, rm=True, forcerm=True)  # BuildError if not
    return tag
