"""The real verifier shapes' toolchain, offline: a wheelhouse, uv in ``~/.local/bin``, curl.

Real SkillsBench verifiers install their test runner at grading time (``curl … | sh`` for uv,
``uvx --with pytest…``, ``pip3 install pytest…``, ``uv add pytest``). The tests reach no index, so
what those commands would download is laid in beforehand, as an install step (cached by tag):

* ``/opt/wheels``: ``pytest==8.4.1``, ``pytest-json-ctrf==0.3.5`` and their dependencies (plus
  ``colorama``, which ``uv add``'s universal lock wants), fetched once with ``pip download`` into a
  cache folder; a task's ``[verifier].env`` points uv and pip there (``UV_OFFLINE=1``,
  ``UV_FIND_LINKS``, ``PIP_NO_INDEX=1``, ``PIP_FIND_LINKS``), so its test.sh keeps the real text;
* ``/root/.local/bin/{uv,uvx,env}``: this host's uv binaries and the ``env`` file uv's installer
  writes, as ``curl -LsSf https://astral.sh/uv/…/install.sh | sh`` leaves them;
* ``curl`` (docker only): this host's curl and the libraries it loads that the base lacks, so the
  verifier's ``curl … | sh`` runs (and fails offline) as it would in a real image.

``ensure_verifier_image(client, base)`` builds a docker image from the local Python base
(tests/images/python_base.py) with all of it; ``stage_local(environment_dir)`` lays the same
files into a task's ``environment/`` for a local (bubblewrap) sandbox, whose Dockerfile then
``COPY``s them (the host's root stands in for the image there: it has python3, pip3 and curl).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

REQUIREMENTS = ("pytest==8.4.1", "pytest-json-ctrf==0.3.5", "colorama")
REPO_ROOT = Path(__file__).resolve().parents[2]
# What uv's installer (https://astral.sh/uv/install.sh) writes to $HOME/.local/bin/env.
UV_ENV_FILE = """\
#!/bin/sh
# add binaries to PATH if they aren't added yet
# affix colons on either side of $PATH to simplify matching
case ":${PATH}:" in
    *:"$HOME/.local/bin":*)
        ;;
    *)
        # Prepending path in case a system-installed binary needs to be overridden
        export PATH="$HOME/.local/bin:$PATH"
        ;;
esac
"""
LABEL = "skillsbench.test-verifier-toolchain"
_LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


class ToolchainUnavailable(RuntimeError):
    """This host cannot provide a part (no uv, no pip to fetch the wheels, no index)."""


def host_uv() -> tuple[Path, Path]:
    """This host's ``uv`` and ``uvx`` binaries."""
    candidates = [REPO_ROOT / ".tools" / "bin" / "uv"]
    found = shutil.which("uv")
    if found:
        candidates.append(Path(found))
    for uv in candidates:
        uvx = uv.with_name("uvx")
        if uv.is_file() and uvx.is_file():
            return uv.resolve(), uvx.resolve()
    raise ToolchainUnavailable("no uv binary on this host (.tools/bin/uv or uv on PATH)")


def _locked(name: str) -> Any:
    handle = open(Path(tempfile.gettempdir()) / f"skillsbench-{name}.lock", "w")  # noqa: SIM115
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def wheelhouse() -> Path:
    """A folder of the wheels ``REQUIREMENTS`` need (downloaded once, cached by recipe)."""
    key = hashlib.sha256("\0".join(("v1", *REQUIREMENTS)).encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"skillsbench-verifier-wheels-{key}"
    with _locked("verifier-wheels"):
        if (folder / ".complete").exists():
            return folder
        pip = next(
            (p for p in ("/usr/bin/python3", shutil.which("python3")) if p and _has_pip(p)), None
        )
        if pip is None:
            raise ToolchainUnavailable("no python3 with pip on this host to fetch the wheelhouse")
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        command = [pip, "-m", "pip", "download", "--only-binary=:all:", "-d", str(partial)]
        command += ["--python-version", "3.11", "--implementation", "cp"]
        command += ["--platform", "manylinux2014_x86_64", *REQUIREMENTS]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise ToolchainUnavailable(
                f"pip download of the wheelhouse failed: {done.stderr[-500:]}"
            )
        (partial / ".complete").write_text("")
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    return folder


def _has_pip(python: str) -> bool:
    return subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def stage_toolchain(folder: Path) -> None:
    """``folder/wheels`` (for /opt/wheels) and ``folder/uvbin`` (for /root/.local/bin)."""
    wheels = wheelhouse()
    uv, uvx = host_uv()
    for wheel in wheels.glob("*.whl"):
        _place(wheel, folder / "wheels" / wheel.name)
    _place(uv, folder / "uvbin" / "uv")
    _place(uvx, folder / "uvbin" / "uvx")
    (folder / "uvbin" / "env").write_text(UV_ENV_FILE)


LOCAL_DOCKERFILE = (
    "FROM python:3.11-slim\n"
    "WORKDIR {workdir}\n"
    "COPY wheels/ /opt/wheels/\n"
    "COPY uvbin/ /root/.local/bin/\n"
)


def stage_local(environment_dir: Path, workdir: str = "/root") -> None:
    """Make ``environment_dir`` a local sandbox's image with the toolchain (COPY lines)."""
    stage_toolchain(environment_dir)
    (environment_dir / "Dockerfile").write_text(LOCAL_DOCKERFILE.format(workdir=workdir))


def _curl_files() -> dict[str, Path]:
    """This host's curl and every library it loads: {path in the image: host file}."""
    curl = shutil.which("curl")
    if curl is None:
        return {}
    out = subprocess.run(["ldd", curl], capture_output=True, text=True, check=False).stdout
    files = {"/usr/bin/curl": Path(curl).resolve()}
    for match in _LDD_LINE.finditer(out):
        library = Path(match.group(1))
        folder = Path(os.path.realpath(library.parent))  # /lib → /usr/lib (usrmerge)
        files[str(folder / library.name)] = library.resolve()
    return files


def ensure_verifier_image(client: Any, base_tag: str) -> str:
    """``base_tag`` + /opt/wheels, uv in /root/.local/bin and curl (built once, cached by tag)."""
    import docker.errors

    wheels = sorted(wheelhouse().glob("*.whl"))
    uv, uvx = host_uv()
    curl = _curl_files()
    digest = hashlib.sha256(f"v1\0{client.images.get(base_tag).id}".encode())
    for item in [*wheels, uv, uvx, *sorted(curl.values())]:
        info = item.stat()
        digest.update(f"{item.name}:{info.st_size}:{int(info.st_mtime)}\0".encode())
    tag = f"skillsbench-test/verifier-toolchain:{digest.hexdigest()[:12]}"
    with _locked("verifier-toolchain-image"):
        try:
            client.images.get(tag)
            return tag
        except docker.errors.ImageNotFound:
            pass
        with tempfile.TemporaryDirectory(prefix="skillsbench-verifier-image-") as tmp:
            context = Path(tmp)
            stage_toolchain(context)
            for path, source in curl.items():
                target = context / "curlroot" / path.lstrip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
            install_curl = (
                "COPY curlroot/ /tmp/curlroot/\n"
                "RUN cp -an /tmp/curlroot/. / && rm -rf /tmp/curlroot && curl --version\n"
                if curl
                else ""
            )
            (context / "Dockerfile").write_text(
                f"FROM {base_tag}\n"
                "COPY wheels/ /opt/wheels/\n"
                "COPY uvbin/ /root/.local/bin/\n"
                "RUN chmod 755 /root/.local/bin/uv /root/.local/bin/uvx\n"
                f"{install_curl}"
                f"LABEL {LABEL}={tag}\n"
            )
            client.images.build(path=str(context), tag=tag, rm=True, pull=False, forcerm=True)
    return tag
