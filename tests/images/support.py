"""Helpers of the image tests: the local Python base (integrations/agentbeats/base_image.py, which
``skillsbench-agentbeats images build-base`` makes for operators) and a variant with this host's
CPython 3.12 laid beside it for the purple image's CLIs, the service images, the verifier
toolchain, a registry that accepts pushes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from integrations.agentbeats.base_image import (
    LABEL,
    REPOSITORY,
    SUITE,
    exclusive,
    has_image,
    install_host_python,
)

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


# Build the three service images for tests, from the local Python base and a host wheelhouse.
#
# Build containers here cannot verify TLS to the package index, so the wheels are downloaded on the
# host (integrations/images/wheelhouse.sh, cached by a hash of uv.lock and the pinned tool versions)
# and the images build with `WHEELHOUSE=1`. Each image is tagged with a hash of its Dockerfile,
# its build context and the base image id, so a re-run with unchanged sources builds nothing.
REPO_ROOT = Path(__file__).resolve().parents[2]
SERVICES = {
    "green": "green_agent/Dockerfile",
    "worker": "worker/Dockerfile",
    "purple": "purple_agent/Dockerfile",
}
CONTEXT_SOURCES = (
    "pyproject.toml",
    "uv.lock",
    "README.md",
    "skillsbench_agentbeats",
    "task_sets",
    "leaderboard",
    "worker",
    "green_agent",
    "purple_agent",
    "serving",
    "tasks",
)
SKIP_NAMES = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
WHEELHOUSE_SCRIPT = REPO_ROOT / "integrations" / "images" / "wheelhouse.sh"
PLATFORM = "linux/amd64"

_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


@contextlib.contextmanager
def _exclusive(name: str) -> Iterator[None]:
    """One holder of ``name`` at a time across threads and processes (pytest-xdist workers):
    one builder per image (the service set, the Ray node, the purple CLI image), one download
    per wheelhouse. Different images build at once (their tests are in separate xdist groups),
    so one's waits (downloads, layer commits) overlap another's work."""
    with _thread_locks_guard:
        lock = _thread_locks.setdefault(name, threading.Lock())
    path = Path(tempfile.gettempdir()) / f"skillsbench-{name}.lock"
    with lock, open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return root / "skillsbench-agentbeats"


def wheelhouse_key() -> str:
    digest = hashlib.sha256()
    for path in (REPO_ROOT / "uv.lock", WHEELHOUSE_SCRIPT):
        digest.update(path.read_bytes())
    for line in (REPO_ROOT / "worker" / "Dockerfile").read_text().splitlines():
        if line.startswith(("ARG UV_VERSION=", "ARG HATCHLING_VERSION=")):
            digest.update(line.encode())
    return digest.hexdigest()[:16]


def ensure_wheelhouse() -> Path:
    """The host wheelhouse for the current uv.lock (downloaded once, then reused)."""
    return _download_once(cache_dir() / f"wheelhouse-{wheelhouse_key()}", WHEELHOUSE_SCRIPT)


def _download_once(dest: Path, script: Path, *args: str) -> Path:
    """``dest`` as ``script DEST ARGS`` fills it, run only when no complete copy is cached (into
    a partial folder first, so an interrupted download is never taken for a whole one)."""
    done = dest / ".complete"
    if done.exists():
        return dest
    with _exclusive(f"download-{dest.name}"):
        if done.exists():  # another worker made it while this one waited
            return dest
        partial = dest.with_name(dest.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        done_proc = subprocess.run(
            ["bash", str(script), str(partial), *args],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done_proc.returncode != 0:
            raise RuntimeError(f"{script.name} failed: {done_proc.stderr.strip()[-2000:]}")
        shutil.rmtree(dest, ignore_errors=True)
        partial.rename(dest)
        done.touch()
    return dest


def _source_files() -> list[Path]:
    files: list[Path] = []
    for name in CONTEXT_SOURCES:
        path = REPO_ROOT / name
        if path.is_file():
            files.append(path)
            continue
        for sub in sorted(path.rglob("*")):
            rel = sub.relative_to(REPO_ROOT)
            if sub.is_file() and not SKIP_NAMES.intersection(rel.parts) and sub.suffix != ".pyc":
                files.append(sub)
    return files


def stage_context(dest: Path, wheelhouse: Path | None) -> str:
    """Copy the build context into dest; return a hash of its sources (wheelhouse excluded)."""
    digest = hashlib.sha256()
    for path in _source_files():
        rel = path.relative_to(REPO_ROOT)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    for dockerfile in SERVICES.values():
        digest.update((REPO_ROOT / dockerfile).read_bytes())
    if wheelhouse is not None:
        wheels = dest / ".wheelhouse"
        wheels.mkdir()
        for wheel in wheelhouse.glob("*.whl"):
            os.link(wheel, wheels / wheel.name)
    return digest.hexdigest()


def image_tag(service: str, context_hash: str, base_id: str) -> str:
    key = hashlib.sha256(f"{context_hash}\0{base_id}\0{service}".encode()).hexdigest()[:12]
    return f"skillsbench-agentbeats-{service}:test-{key}"


def ensure_service_images(client: Any, base_image: str, work_dir: Path) -> dict[str, str]:
    """Build (or reuse) the green, worker and purple images; return service -> tag."""
    with _exclusive("service-images"):
        base_id = client.images.get(base_image).id
        context = work_dir / "context"
        context_hash = stage_context(context, ensure_wheelhouse())
        tags = {name: image_tag(name, context_hash, base_id) for name in SERVICES}
        for name, dockerfile in SERVICES.items():
            if not has_image(client, tags[name]):
                build_image(client, context, dockerfile, tags[name], base_image)
        _prune_older(client, tags)
        return tags


def ensure_ray_worker_image(client: Any, base_image: str, work_dir: Path) -> str:
    """Build (or reuse) the worker image with the `ray` extra (WITH_RAY=1): a Ray node."""
    return _ensure_variant(client, base_image, work_dir, "worker-ray", "worker", {"WITH_RAY": "1"})


def _ensure_variant(
    client: Any,
    base_image: str,
    work_dir: Path,
    name: str,
    service: str,
    build_args: dict[str, str],
    cli_wheels: Callable[[], Path] | None = None,
) -> str:
    """Build (or reuse) ``service``'s image with ``build_args``, tagged as ``name``; with
    ``cli_wheels`` in the context as .wheelhouse-clis."""
    with _exclusive(f"image-{name}"):
        base_id = client.images.get(base_image).id
        context = work_dir / "context"
        context_hash = stage_context(context, ensure_wheelhouse())
        if cli_wheels is not None:
            wheels = context / ".wheelhouse-clis"
            wheels.mkdir()
            for wheel in cli_wheels().glob("*.whl"):
                os.link(wheel, wheels / wheel.name)
        variant = json.dumps(build_args, sort_keys=True)
        tag = image_tag(name, f"{context_hash}\0{variant}", base_id)
        if not has_image(client, tag):
            build_image(client, context, SERVICES[service], tag, base_image, build_args)
        _prune_older(client, {name: tag})
        return tag


def _prune_older(client: Any, keep: dict[str, str]) -> None:
    """Remove test tags of earlier sources, so repeated runs do not fill the disk."""
    import docker.errors

    for current in keep.values():
        repository = current.rsplit(":", 1)[0]
        for image in client.images.list(name=repository):
            for tag in image.tags:
                if tag != current and tag.startswith(f"{repository}:test-"):
                    with contextlib.suppress(docker.errors.APIError):
                        client.images.remove(tag)


def build_image(
    client: Any,
    context: Path,
    dockerfile: str,
    tag: str,
    base_image: str,
    extra_args: dict[str, str] | None = None,
) -> None:
    stream = client.api.build(
        path=str(context),
        dockerfile=dockerfile,
        tag=tag,
        buildargs={"BASE_IMAGE": base_image, "WHEELHOUSE": "1", **(extra_args or {})},
        platform=PLATFORM,
        rm=True,
        forcerm=True,
        decode=True,
        timeout=1800,
    )
    log: list[str] = []
    for chunk in stream:
        if "error" in chunk:
            tail = "".join(log[-30:])
            raise RuntimeError(f"building {tag} from {dockerfile} failed: {chunk['error']}\n{tail}")
        if "stream" in chunk:
            log.append(chunk["stream"])
    if not has_image(client, tag):
        raise RuntimeError(f"building {tag} produced no image:\n{''.join(log[-30:])}")


CLI_WHEELHOUSE_SCRIPT = REPO_ROOT / "integrations" / "images" / "cli-wheelhouse.sh"


def ensure_cli_wheelhouse(clis: tuple[str, ...]) -> Path:
    """The PyPI harness CLIs' wheels at the purple Dockerfile's pins (downloaded once)."""
    digest = hashlib.sha256(" ".join(clis).encode())
    for path in (CLI_WHEELHOUSE_SCRIPT, REPO_ROOT / SERVICES["purple"]):
        digest.update(path.read_bytes())
    dest = cache_dir() / f"wheelhouse-clis-{digest.hexdigest()[:16]}"
    return _download_once(dest, CLI_WHEELHOUSE_SCRIPT, *clis)


def ensure_purple_cli_image(
    client: Any,
    base_image: str,
    work_dir: Path,
    clis: tuple[str, ...],
    cli_python: str | None = None,
) -> str:
    """Build (or reuse) the purple image with HARNESS_CLIS=``clis`` from the two wheelhouses
    (and CLI_PYTHON=``cli_python``, a path in ``base_image``, when given)."""
    args = {"HARNESS_CLIS": " ".join(clis)}
    if cli_python is not None:
        args["CLI_PYTHON"] = cli_python
    return _ensure_variant(
        client,
        base_image,
        work_dir,
        "purple-clis",
        "purple",
        args,
        cli_wheels=lambda: ensure_cli_wheelhouse(clis),
    )


# The real verifier shapes' toolchain, offline: a wheelhouse, uv in ``~/.local/bin``, curl.
#
# Real SkillsBench verifiers install their test runner at grading time (``curl … | sh`` for uv,
# ``uvx --with pytest…``, ``pip3 install pytest…``, ``uv add pytest``). The tests reach no index, so
# what those commands would download is laid in beforehand, as an install step (cached by tag):
#
# * ``/opt/wheels``: ``pytest==8.4.1``, ``pytest-json-ctrf==0.3.5`` and their dependencies (plus
#   ``colorama``, which ``uv add``'s universal lock wants), fetched once with ``pip download`` into a
#   cache folder; a task's ``[verifier].env`` points uv and pip there (``UV_OFFLINE=1``,
#   ``UV_FIND_LINKS``, ``PIP_NO_INDEX=1``, ``PIP_FIND_LINKS``), so its test.sh keeps the real text
#   (and ``PIP_COMPILE=0``: docs/sandboxes.md, "Tests and images");
# * ``/root/.local/bin/{uv,uvx,env}``: this host's uv binaries and the ``env`` file uv's installer
#   writes, as ``curl -LsSf https://astral.sh/uv/…/install.sh | sh`` leaves them;
# * ``curl`` (docker only): this host's curl and the libraries it loads that the base lacks, so the
#   verifier's ``curl … | sh`` runs (and fails offline) as it would in a real image.
#
# ``ensure_verifier_image(client, base)`` builds a docker image from the local Python base
# (tests/images/support.py) with all of it; ``stage_local(environment_dir)`` lays the same
# files into a task's ``environment/`` for a local (bubblewrap) sandbox, whose Dockerfile then
# ``COPY``s them (the host's root stands in for the image there: it has python3, pip3 and curl).
REQUIREMENTS = ("pytest==8.4.1", "pytest-json-ctrf==0.3.5", "colorama")
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
VERIFIER_LABEL = "skillsbench.test-verifier-toolchain"
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


# The toolchain image's apt setting that makes an offline `apt-get update` give up at once.
APT_OFFLINE_CONF = "/etc/apt/apt.conf.d/00skillsbench-test-offline"


def ensure_verifier_image(client: Any, base_tag: str) -> str:
    """``base_tag`` + /opt/wheels, uv in /root/.local/bin and curl (built once, cached by tag)."""
    import docker.errors

    wheels = sorted(wheelhouse().glob("*.whl"))
    uv, uvx = host_uv()
    curl = _curl_files()
    digest = hashlib.sha256(f"v2\0{client.images.get(base_tag).id}".encode())
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
                # The verifier's `apt-get update` finds no network here: apt's retries wait 1, 2
                # and 4 s before it gives up (7 s a verifier run); fail at once instead.
                f"RUN printf 'Acquire::Retries \"0\";\\n' > {APT_OFFLINE_CONF}\n"
                f"{install_curl}"
                f"LABEL {VERIFIER_LABEL}={tag}\n"
            )
            client.images.build(path=str(context), tag=tag, rm=True, pull=False, forcerm=True)
    return tag


TOOL_PACKAGES = ("git", "nodejs", "npm", "maven")


def ensure_tools_image(client: Any, verifier_tag: str) -> str:
    """``verifier_tag`` + git, node/npm and maven from Debian's packages (the verifier shapes
    that run them: tests/worker/trial/test_implicit_inputs.py), built once, cached by tag."""
    import docker.errors

    base_id = client.images.get(verifier_tag).id
    digest = hashlib.sha256(f"v1\0{base_id}\0{' '.join(TOOL_PACKAGES)}".encode()).hexdigest()
    tag = f"skillsbench-test/verifier-tools:{digest[:12]}"
    with _locked("verifier-tools-image"):
        if has_image(client, tag):
            return tag
        with tempfile.TemporaryDirectory(prefix="skillsbench-tools-image-") as tmp:
            (Path(tmp) / "Dockerfile").write_text(
                f"FROM {verifier_tag}\n"
                "RUN apt-get -o Acquire::Retries=3 update && DEBIAN_FRONTEND=noninteractive "
                "apt-get -o Acquire::Retries=3 install -y "
                f"--no-install-recommends {' '.join(TOOL_PACKAGES)} && "
                "rm -rf /var/lib/apt/lists/* && git --version && node --version && "
                "npm --version && mvn -v\n"
                f"LABEL {VERIFIER_LABEL}={tag}\n"
            )
            try:
                client.images.build(path=tmp, tag=tag, rm=True, pull=False, forcerm=True)
            except docker.errors.BuildError as exc:
                log = "".join(str(part.get("stream", "")) for part in exc.build_log)[-1500:]
                raise ToolchainUnavailable(f"git/node/npm/maven image: {exc}\n{log}") from None
    return tag


def managed_python_download(dest: Path, url_folder: str) -> tuple[str, str]:
    """A uv "python download" of the host's Debian Python (``/usr/bin/python3.X`` with its
    ``/usr/lib/python3.X``) in ``dest``: ``cpython.tar.gz`` and ``dl.json`` (uv's
    ``python-downloads-json-url`` format, the archive at ``file://<url_folder>/cpython.tar.gz``).
    It stands in for python-build-standalone, whose host is unreachable here. Returns (key,
    version): ``cpython-3.11.2-linux-x86_64-gnu``, ``3.11.2``. Debian's build is the image's,
    and it runs relocated (it finds its library next to itself)."""
    import tarfile

    exe = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not exe.exists():
        exe = next(iter(sorted(Path("/usr/bin").glob("python3.[0-9]*[0-9]"))), Path("/nonexistent"))
    library = Path("/usr/lib") / exe.name
    if not exe.is_file() or not (library / "os.py").is_file():
        raise ToolchainUnavailable("no Debian Python (/usr/bin/python3.X, /usr/lib/python3.X) here")
    version = subprocess.run(
        [str(exe), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    major, minor, patch = (int(part) for part in version.split(".")[:3])
    key = f"cpython-{version}-linux-x86_64-gnu"
    skip = {"test", "idlelib", "tkinter", "turtledemo", "lib2to3", "__pycache__"}
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / "cpython.tar.gz"

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = info.name.split("/")
        if skip & set(parts[3:4] + parts[4:]) or (info.issym() and info.linkname.startswith("/")):
            return None  # uv refuses absolute links (Debian's sitecustomize.py -> /etc/...)
        return info

    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        tar.add(exe, f"python/bin/{exe.name}")
        for alias in ("python3", "python"):
            link = tarfile.TarInfo(f"python/bin/{alias}")
            link.type, link.linkname = tarfile.SYMTYPE, exe.name
            tar.addfile(link)
        tar.add(library, f"python/lib/{exe.name}", filter=keep)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    entry = {
        "name": "cpython",
        "arch": {"family": "x86_64", "variant": None},
        "os": "linux",
        "libc": "gnu",
        "major": major,
        "minor": minor,
        "patch": patch,
        "prerelease": "",
        "url": f"file://{url_folder}/cpython.tar.gz",
        "sha256": digest,
        "variant": None,
    }
    (dest / "dl.json").write_text(json.dumps({key: entry}))
    return key, version


# A minimal registry that accepts pushes (OCI distribution API), for the Docker Engine on loopback.
#
# Enough of the protocol for `docker push`: blob existence checks, chunked and monolithic uploads,
# cross-repository mounts refused (the client then uploads), manifests stored by tag and by digest.
# The engine treats 127.0.0.0/8 as an insecure registry, so plain HTTP on loopback works.
API_HEADER = {"Docker-Distribution-API-Version": "registry/2.0"}


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class PushRegistry:
    blobs: dict[str, bytes] = field(default_factory=dict)
    manifests: dict[tuple[str, str], tuple[str, bytes]] = field(default_factory=dict)
    uploads: dict[str, bytearray] = field(default_factory=dict)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v2/", self._root, methods=["GET"]),
                Route(
                    "/v2/{name:path}/blobs/uploads/",
                    self._start_upload,
                    methods=["POST"],
                ),
                Route(
                    "/v2/{name:path}/blobs/uploads/{upload}",
                    self._upload,
                    methods=["PATCH", "PUT", "GET", "DELETE"],
                ),
                Route("/v2/{name:path}/blobs/{digest}", self._blob, methods=["GET", "HEAD"]),
                Route(
                    "/v2/{name:path}/manifests/{reference}",
                    self._manifest,
                    methods=["GET", "HEAD", "PUT"],
                ),
            ]
        )

    def manifest_digests(self, name: str) -> set[str]:
        return {_digest(body) for (repo, _), (_, body) in self.manifests.items() if repo == name}

    async def _root(self, request: Request) -> Response:
        return JSONResponse({}, headers=API_HEADER)

    async def _start_upload(self, request: Request) -> Response:
        name = request.path_params["name"]
        upload = uuid.uuid4().hex
        self.uploads[upload] = bytearray()
        body = await request.body()
        digest = request.query_params.get("digest")
        if digest:  # monolithic upload in the POST itself
            return self._finish(name, upload, body, digest)
        return Response(
            status_code=202,
            headers={
                **API_HEADER,
                "Location": f"/v2/{name}/blobs/uploads/{upload}",
                "Docker-Upload-UUID": upload,
                "Range": "0-0",
            },
        )

    async def _upload(self, request: Request) -> Response:
        name, upload = request.path_params["name"], request.path_params["upload"]
        if upload not in self.uploads:
            return JSONResponse({"errors": [{"code": "BLOB_UPLOAD_UNKNOWN"}]}, status_code=404)
        if request.method == "DELETE":
            del self.uploads[upload]
            return Response(status_code=204)
        body = await request.body()
        if request.method == "PATCH":
            self.uploads[upload].extend(body)
            size = len(self.uploads[upload])
            return Response(
                status_code=202,
                headers={
                    **API_HEADER,
                    "Location": f"/v2/{name}/blobs/uploads/{upload}",
                    "Docker-Upload-UUID": upload,
                    "Range": f"0-{max(size - 1, 0)}",
                },
            )
        if request.method == "GET":
            size = len(self.uploads[upload])
            return Response(status_code=204, headers={"Range": f"0-{max(size - 1, 0)}"})
        return self._finish(name, upload, body, request.query_params.get("digest", ""))

    def _finish(self, name: str, upload: str, tail: bytes, digest: str) -> Response:
        data = bytes(self.uploads.pop(upload)) + tail
        if _digest(data) != digest:
            return JSONResponse({"errors": [{"code": "DIGEST_INVALID"}]}, status_code=400)
        self.blobs[digest] = data
        return Response(
            status_code=201,
            headers={
                **API_HEADER,
                "Location": f"/v2/{name}/blobs/{digest}",
                "Docker-Content-Digest": digest,
            },
        )

    async def _blob(self, request: Request) -> Response:
        digest = request.path_params["digest"]
        data = self.blobs.get(digest)
        if data is None:
            return JSONResponse({"errors": [{"code": "BLOB_UNKNOWN"}]}, status_code=404)
        headers = {**API_HEADER, "Docker-Content-Digest": digest, "Content-Length": str(len(data))}
        if request.method == "HEAD":
            return Response(status_code=200, headers=headers)
        return Response(data, headers=headers, media_type="application/octet-stream")

    async def _manifest(self, request: Request) -> Response:
        name, reference = request.path_params["name"], request.path_params["reference"]
        if request.method == "PUT":
            body = await request.body()
            media_type = request.headers.get("content-type", "")
            digest = _digest(body)
            self.manifests[(name, reference)] = (media_type, body)
            self.manifests[(name, digest)] = (media_type, body)
            return Response(
                status_code=201,
                headers={
                    **API_HEADER,
                    "Location": f"/v2/{name}/manifests/{digest}",
                    "Docker-Content-Digest": digest,
                },
            )
        stored = self.manifests.get((name, reference))
        if stored is None:
            return JSONResponse({"errors": [{"code": "MANIFEST_UNKNOWN"}]}, status_code=404)
        media_type, body = stored
        headers = {**API_HEADER, "Docker-Content-Digest": _digest(body), "Content-Type": media_type}
        if request.method == "HEAD":
            return Response(status_code=200, headers={**headers, "Content-Length": str(len(body))})
        return Response(body, headers=headers)


# The PyPI harness CLIs whose image install is checked here. claude-code and codex are binaries
# in wheels for the image's own Python; openhands and terminus need CLI_PYTHON 3.12, which uv
# would download from GitHub (not reachable here), so the test lays this host's CPython 3.12
# into the base (support.ensure_cli_python_image) and names it by path, as an operator whose
# base image carries one would. Without one on the host only the first two are built.
BINARY_CLIS = ("claude-code", "codex")
PYTHON_CLIS = ("openhands", "terminus")


@dataclass(frozen=True)
class CliImage:
    tag: str
    clis: tuple[str, ...]
    missing: str  # why PYTHON_CLIS are not in it ("" when they are)


# A task folder whose Dockerfile starts FROM ``base`` (the images build-tasks tests).
def write_task(root: Path, task_id: str, base: str, skills: bool) -> None:
    folder = root / task_id
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(
        textwrap.dedent(
            """\
            version = "1.0"
            [metadata]
            category = "testing"
            difficulty = "easy"
            [agent]
            timeout_sec = 60
            [environment]
            cpus = 1
            memory_mb = 256
            """
        )
    )
    (folder / "instruction.md").write_text(f"Task {task_id}.\n")
    (folder / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (folder / "environment" / "Dockerfile").write_text(
        f"FROM {base}\nWORKDIR /app\nCOPY marker.txt /app/marker.txt\n"
    )
    (folder / "environment" / "marker.txt").write_text(f"{task_id}\n")
    if skills:
        skill = folder / "environment" / "skills" / "lookup"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: lookup\n---\nLook it up.\n")
