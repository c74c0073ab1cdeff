"""Run the oracle and ``nop`` on real SkillsBench tasks in Docker, on offline stand-in bases.

No image registry is reachable here, so the bases the real tasks' ``FROM`` lines name
(``ubuntu:24.04``, ``python:3.11-slim``, ...) are made locally: a Debian/Ubuntu root file system
by ``debootstrap`` from the distribution mirrors, ``docker import``-ed, plus one stand-in layer:

* the host's extra CA certificates (a TLS-inspecting egress proxy) in the system store, and
  ``SSL_CERT_FILE``/``PIP_CERT``/``UV_NATIVE_TLS``/``NODE_EXTRA_CA_CERTS`` pointing at it;
* ``uv``/``uvx`` (from the PyPI wheel) in ``/root/.local/bin`` with the ``env`` file uv's installer
  writes, and a ``curl`` wrapper in ``/usr/local/bin`` that answers only
  ``https://astral.sh/uv/<v>/install.sh`` with a script installing that same uv into
  ``$HOME/.local/bin`` (astral.sh is unreachable; everything else goes to the real curl, or fails
  as "not found" when the image has none, as on the real base);
* for ``python:3.X-slim``: the distribution's ``python3.X`` with pip and venv, ``python``/``pip``
  links in ``/usr/local/bin`` and no ``EXTERNALLY-MANAGED`` marker, as in the official image.

Every base is tagged ``skillsbench-checkreal/<name>:<recipe hash>`` (cached: a re-run builds
nothing) and handed to the project's own ``task-set check`` as ``--base-image-map FROM=TAG``; no
tag the test suite owns (``python:3.11-slim``, ``busybox:latest``) is touched. Each selected task
is copied to a scratch folder and checked alone (oracle then nop, ``--environment docker``) under
a per-task timeout; the task images it built are removed afterwards, the bases are kept.

    uv run --frozen python bench/check_real.py --tasks DIR [--only ID,...] [--limit N] \
        [--concurrency N] [--task-timeout SEC] [--deadline SEC] [--json-report FILE]

A task whose image does not build (a download this machine cannot reach, a file missing from the
task folder, a base we cannot make) is reported as "does not build here" with the reason, never as
an oracle failure. It is a benchmark-style script: not part of ``make test``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib
import urllib.request
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the project, whatever the cwd

from worker.trial_record.paths import RESULT_FILE  # noqa: E402
from worker.trial_record.result import TrialResult  # noqa: E402

RECIPE_VERSION = "1"
REPOSITORY = "skillsbench-checkreal"
LABEL = "skillsbench.check-real"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "skillsbench-agentbeats"
UV_VERSION = "0.9.7"
UBUNTU_MIRROR = os.environ.get("CHECK_REAL_UBUNTU_MIRROR", "http://archive.ubuntu.com/ubuntu")
DEBIAN_MIRROR = os.environ.get("CHECK_REAL_DEBIAN_MIRROR", "http://deb.debian.org/debian")
UBUNTU_KEYRING_DEB = "pool/main/u/ubuntu-keyring/ubuntu-keyring_2023.11.28.1_all.deb"
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")

# distribution -> (family, suite); Ubuntu suites use debootstrap's generic "gutsy" script, so a
# debootstrap too old to know noble still works.
DISTROS: dict[str, tuple[str, str]] = {
    "noble": ("ubuntu", "noble"),
    "jammy": ("ubuntu", "jammy"),
    "focal": ("ubuntu", "focal"),
    "bookworm": ("debian", "bookworm"),
    "bullseye": ("debian", "bullseye"),
}
# A FROM reference -> (distribution, python version or None). python:3.X-slim is Debian bookworm
# upstream; only 3.11 is native there, so other versions come from the distribution that ships
# them (3.9: bullseye, 3.10: jammy, 3.12: noble) — a looser stand-in, and the report says so.
STANDINS: dict[str, tuple[str, str | None]] = {
    "ubuntu:24.04": ("noble", None),
    "ubuntu:22.04": ("jammy", None),
    "ubuntu:20.04": ("focal", None),
    "debian:bookworm": ("bookworm", None),
    "python:3.11-slim": ("bookworm", "3.11"),
    "python:3.9-slim": ("bullseye", "3.9"),
    "python:3.9.19-slim": ("bullseye", "3.9"),
    "python:3.10-slim": ("jammy", "3.10"),
    "python:3.12-slim": ("noble", "3.12"),
    "python:3.12.8-slim": ("noble", "3.12"),
    "python:3.12.9-slim": ("noble", "3.12"),
}
# The suite's own tags: never retagged or removed by this script.
SUITE_TAGS = frozenset({"python:3.11-slim", "busybox:latest"})
NOT_BUILT = {"sandbox_build", "sandbox_config", "sandbox_start", "sandbox_unsupported"}


class BaseError(RuntimeError):
    pass


def log(message: str) -> None:
    print(f"[check-real {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kwargs)


def docker_has(ref: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", ref], capture_output=True).returncode == 0


# ---------------------------------------------------------------------------------------------
# Stand-in bases


def host_cas() -> list[Path]:
    return sorted(HOST_CA_DIR.glob("*.crt")) if HOST_CA_DIR.is_dir() else []


def _sources(family: str, suite: str) -> str:
    if family == "ubuntu":
        comps = "main restricted universe multiverse"
        return "".join(
            f"deb {UBUNTU_MIRROR} {s} {comps}\n"
            for s in (suite, f"{suite}-updates", f"{suite}-security")
        )
    security = "http://deb.debian.org/debian-security"
    sec_suite = f"{suite}-security"
    return (
        f"deb {DEBIAN_MIRROR} {suite} main\n"
        f"deb {DEBIAN_MIRROR} {suite}-updates main\n"
        f"deb {security} {sec_suite} main\n"
    )


def rootfs_tag(distro: str) -> str:
    digest = hashlib.sha256(f"{RECIPE_VERSION}:rootfs:{distro}:{DISTROS[distro]}".encode())
    for ca in host_cas():
        digest.update(ca.read_bytes())
    return f"{REPOSITORY}/{distro}-rootfs:{digest.hexdigest()[:12]}"


def _ubuntu_keyring(work: Path) -> Path | None:
    target = CACHE / "check-real" / "ubuntu-archive-keyring.gpg"
    if target.exists():
        return target
    try:
        with urllib.request.urlopen(f"{UBUNTU_MIRROR}/{UBUNTU_KEYRING_DEB}", timeout=60) as reply:
            deb = work / "ubuntu-keyring.deb"
            deb.write_bytes(reply.read())
        run(["dpkg-deb", "-x", str(deb), str(work / "keyring")])
    except (OSError, subprocess.CalledProcessError) as exc:
        log(f"no Ubuntu keyring ({exc}); debootstrap runs without signature checks")
        return None
    found = work / "keyring/usr/share/keyrings/ubuntu-archive-keyring.gpg"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(found, target)
    return target


def ensure_rootfs(distro: str) -> str:
    """``docker import`` of a minbase debootstrap of ``distro`` with the host's CAs trusted."""
    tag = rootfs_tag(distro)
    if docker_has(tag):
        return tag
    if os.geteuid() != 0:
        raise BaseError("making a base needs root (debootstrap)")
    if shutil.which("debootstrap") is None:
        raise BaseError("debootstrap is missing (apt-get install debootstrap)")
    family, suite = DISTROS[distro]
    log(f"debootstrap {distro} (a few minutes, once)")
    cache = CACHE / "check-real" / f"debs-{distro}"
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"check-real-{distro}-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        rootfs = work / "rootfs"
        cmd = ["debootstrap", "--variant=minbase", "--include=ca-certificates"]
        cmd.append(f"--cache-dir={cache}")
        if family == "ubuntu":
            keyring = _ubuntu_keyring(work)
            cmd += [f"--keyring={keyring}"] if keyring else ["--no-check-gpg"]
            cmd += [suite, str(rootfs), UBUNTU_MIRROR, "/usr/share/debootstrap/scripts/gutsy"]
        else:
            cmd += [suite, str(rootfs), DEBIAN_MIRROR]
        proc = subprocess.run(cmd, text=True, capture_output=True)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise BaseError(f"debootstrap {suite} failed: {' | '.join(tail)}")
        (rootfs / "etc/apt/sources.list").write_text(_sources(family, suite))
        for ca in host_cas():
            shutil.copy(ca, rootfs / "usr/local/share/ca-certificates" / ca.name)
        run(["chroot", str(rootfs), "update-ca-certificates"])
        for sub in ("var/lib/apt/lists", "var/cache/apt/archives"):
            for entry in (rootfs / sub).glob("*"):
                if entry.is_file():
                    entry.unlink()
        changes = [
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            'CMD ["/bin/bash"]',
            f"LABEL {LABEL}=base",
        ]
        tar = subprocess.Popen(
            ["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE
        )
        cmd = ["docker", "import"]
        for change in changes:
            cmd += ["--change", change]
        subprocess.run([*cmd, "-", tag], stdin=tar.stdout, check=True, capture_output=True)
        tar.wait()
    return tag


def uv_binaries() -> Path:
    """A folder with ``uv`` and ``uvx`` of UV_VERSION for linux x86_64, from the PyPI wheel."""
    folder = CACHE / "check-real" / f"uv-{UV_VERSION}"
    if (folder / "uv").exists() and (folder / "uvx").exists():
        return folder
    request = urllib.request.Request(
        "https://pypi.org/simple/uv/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as r:
        files = json.load(r)["files"]
    url = next(
        f["url"]
        for f in files
        if f["filename"].startswith(f"uv-{UV_VERSION}-")
        and re.search(r"-manylinux[^-]*x86_64\.whl$", f["filename"])
        and "musllinux" not in f["filename"]
    )
    with urllib.request.urlopen(url, timeout=300) as r:
        wheel = io.BytesIO(r.read())
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            base = name.rsplit("/", 1)[-1]
            if ".data/scripts/" in name and base in ("uv", "uvx"):
                (folder / base).write_bytes(zf.read(name))
                (folder / base).chmod(0o755)
    return folder


# What uv's installer writes to $HOME/.local/bin/env (sh flavour), and a stand-in for the
# installer script itself (served by the curl wrapper).
ENV_FILE = textwrap.dedent(
    """\
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
)
INSTALLER = textwrap.dedent(
    """\
    #!/bin/sh
    # check-real stand-in for https://astral.sh/uv/<version>/install.sh (unreachable here):
    # installs the uv baked into the image, as the real installer would.
    set -e
    dest="${UV_INSTALL_DIR:-${XDG_BIN_HOME:-$HOME/.local/bin}}"
    mkdir -p "$dest"
    cp /opt/check-real/uv/uv /opt/check-real/uv/uvx "$dest/"
    cp /opt/check-real/uv/env "$dest/env"
    echo "installing to $dest"
    echo "everything's installed!"
    """
)
CURL_WRAPPER = textwrap.dedent(
    """\
    #!/bin/sh
    # check-real stand-in: astral.sh is unreachable here; its uv installer is answered locally.
    for arg in "$@"; do
        case "$arg" in
            https://astral.sh/uv/*install.sh|https://astral.sh/uv/install.sh)
                cat /opt/check-real/uv/install.sh
                exit 0 ;;
        esac
    done
    for real in /usr/bin/curl /bin/curl; do
        [ -x "$real" ] && exec "$real" "$@"
    done
    echo "curl: command not found" >&2
    exit 127
    """
)


def standin_dockerfile(base: str, python: str | None) -> str:
    cert = "/etc/ssl/certs/ca-certificates.crt"
    lines = [
        f"FROM {base}",
        "COPY uv/ /opt/check-real/uv/",
        "COPY curl /usr/local/bin/curl",
        "RUN mkdir -p /root/.local/bin && cp /opt/check-real/uv/uv /opt/check-real/uv/uvx "
        "/opt/check-real/uv/env /root/.local/bin/ && chmod 755 /usr/local/bin/curl",
        f"ENV SSL_CERT_FILE={cert} REQUESTS_CA_BUNDLE={cert} PIP_CERT={cert} "
        f"NODE_EXTRA_CA_CERTS={cert} UV_NATIVE_TLS=1 LANG=C.UTF-8",
    ]
    if python:
        lines.append(
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
            f"--no-install-recommends python{python} python3-pip python3-venv python3-dev "
            f"&& rm -f /usr/lib/python{python}/EXTERNALLY-MANAGED "
            f"&& ln -sf /usr/bin/python{python} /usr/local/bin/python "
            f"&& ln -sf /usr/bin/python{python} /usr/local/bin/python3 "
            "&& printf '#!/bin/sh\\nexec /usr/local/bin/python -m pip \"$@\"\\n' > /usr/local/bin/pip "
            "&& chmod 755 /usr/local/bin/pip && ln -sf pip /usr/local/bin/pip3 "
            "&& (python -m pip install --quiet --upgrade 'pip>=23.0.1' || true) "
            "&& rm -rf /var/lib/apt/lists/*"
        )
    lines.append(f"LABEL {LABEL}=base")
    return "\n".join(lines) + "\n"


def standin_tag(ref: str) -> str:
    distro, python = STANDINS[ref]
    digest = hashlib.sha256(f"{RECIPE_VERSION}:{rootfs_tag(distro)}:{UV_VERSION}:{python}".encode())
    digest.update(standin_dockerfile("BASE", python).encode())
    digest.update((INSTALLER + CURL_WRAPPER + ENV_FILE).encode())
    name = f"python{python}" if python else distro
    return f"{REPOSITORY}/{name}:{digest.hexdigest()[:12]}"


def ensure_standin(ref: str) -> str:
    tag = standin_tag(ref)
    if docker_has(tag):
        return tag
    distro, python = STANDINS[ref]
    base = ensure_rootfs(distro)
    uv = uv_binaries()
    log(f"building stand-in {tag} for {ref}")
    with tempfile.TemporaryDirectory(prefix="check-real-standin-") as tmp:
        ctx = Path(tmp)
        shutil.copytree(uv, ctx / "uv")
        (ctx / "uv" / "env").write_text(ENV_FILE)
        (ctx / "uv" / "install.sh").write_text(INSTALLER)
        (ctx / "curl").write_text(CURL_WRAPPER)
        (ctx / "Dockerfile").write_text(standin_dockerfile(base, python))
        proc = subprocess.run(
            ["docker", "build", "-q", "-t", tag, str(ctx)], text=True, capture_output=True
        )
        if proc.returncode != 0:
            raise BaseError(f"stand-in build for {ref} failed: {proc.stderr.strip()[-400:]}")
    return tag


# ---------------------------------------------------------------------------------------------
# Tasks


@dataclass
class TaskResult:
    task_id: str
    base: str | None = None
    standin: str | None = None
    builds: bool | None = None
    status: str = "not run"  # ok | oracle fails | nop passes | does not build here | infra | ...
    reason: str = ""
    oracle_reward: float | None = None
    nop_reward: float | None = None
    oracle_failure: str | None = None
    nop_failure: str | None = None
    verifier_tampered: list[str] = field(default_factory=list)
    wall_sec: float = 0.0
    oracle_trial: str | None = None
    nop_trial: str | None = None


# Upper case only: a lower-case "from x import y" inside a RUN heredoc is not an instruction.
FROM_RE = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", re.M)


def from_refs(task: Path) -> list[str]:
    """The images a task's sandbox starts from: its Dockerfile's ``FROM`` lines and, when
    ``task.toml`` names a prebuilt image (``[environment].image``/``docker_image``, which the
    worker runs as it is, mapped like a base: dialogue-parser's ``python:3.12-slim``), that."""
    text = (task / "environment" / "Dockerfile").read_text(errors="replace")
    stages = {m.group(1) for m in re.finditer(r"\sAS\s+(\S+)\s*$", text, re.I | re.M)}
    refs = [ref for ref in FROM_RE.findall(text) if ref not in stages]
    try:
        config = tomllib.loads((task / "task.toml").read_text(errors="replace"))
    except (OSError, tomllib.TOMLDecodeError):
        return refs
    environment = config.get("environment")
    if isinstance(environment, dict):
        image = environment.get("docker_image") or environment.get("image")
        if isinstance(image, str) and image and image not in refs:
            refs.append(image)
    return refs


def missing_copies(task: Path) -> list[str]:
    """COPY/ADD sources of the Dockerfile that are absent from the build context."""
    env = task / "environment"
    text = (env / "Dockerfile").read_text(errors="replace")
    missing = []
    for m in re.finditer(r"^\s*(?:COPY|ADD)\s+(?!--from)(?:--\S+\s+)*(.+)$", text, re.I | re.M):
        if any(ch in m.group(1) for ch in "\"'\\["):
            continue  # quoted or JSON-form sources (names with spaces): not checked
        parts = m.group(1).split()
        for src in parts[:-1]:
            if "://" in src or "$" in src or any(ch in src for ch in "*?["):
                continue
            if not (env / src).exists():
                missing.append(src)
    for path in env.rglob("*"):
        if path.is_file() and path.stat().st_size == 0 and path.suffix in {".mp4", ".pcap"}:
            missing.append(str(path.relative_to(env)))
    return missing


def _trial_results(jobs: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in jobs.rglob(RESULT_FILE):
        try:
            record = TrialResult.read(path)
        except (OSError, ValueError):
            continue
        if record is None:
            continue
        data = record.document()
        data["_folder"] = str(path.parent)
        found[record.trial_id or path.parent.name] = data
        found[path.parent.name] = data
    return found


def _tampered_evidence(result: dict[str, Any]) -> list[str]:
    text = json.dumps(result)
    if "verifier_tampered" not in text:
        return []
    out = []
    for key in ("failure", "verifier", "infra_failure", "reason"):
        if key in result and "tamper" in json.dumps(result[key]):
            out.append(f"{key}: {json.dumps(result[key])[:600]}")
    return out or [text[:600]]


def check_task(
    task: Path, scratch: Path, bases: dict[str, str], timeout: float, concurrency: int
) -> TaskResult:
    result = TaskResult(task.name)
    start = time.monotonic()
    refs = from_refs(task)
    result.base = ", ".join(refs)
    unmapped = [r for r in refs if r not in bases]
    missing = missing_copies(task)
    if missing:
        result.status, result.builds = "does not build here", False
        result.reason = f"files absent from the task folder (not in the mirror): {missing[:4]}"
        return result
    if unmapped:
        result.status, result.builds = "does not build here", False
        result.reason = f"no stand-in for base {unmapped} (no registry reachable)"
        return result
    result.standin = ", ".join(bases[r] for r in refs)
    folder = scratch / task.name
    tasks_dir = folder / "tasks"
    shutil.copytree(task, tasks_dir / task.name, symlinks=True)
    report = folder / "report.json"
    jobs = folder / "jobs"
    cmd = [
        str(Path(sys.executable).parent / "skillsbench-agentbeats"), "task-set", "check",
        str(tasks_dir),
        "--task-id", task.name, "--environment", "docker", "--concurrency", str(concurrency),
        "--jobs-dir", str(jobs), "--json-report", str(report),
    ]  # fmt: skip
    for ref in refs:
        cmd += ["--base-image-map", f"{ref}={bases[ref]}"]
    with open(folder / "check.log", "w") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            result.status, result.reason = "timeout", f"no verdict within {timeout:.0f}s"
    result.wall_sec = round(time.monotonic() - start, 1)
    if not report.exists():
        if result.status != "timeout":
            tail = (folder / "check.log").read_text(errors="replace").strip().splitlines()[-3:]
            result.status, result.reason = "error", " | ".join(tail)
        return result
    row = json.loads(report.read_text())["tasks"][0]
    result.builds = row["builds"]
    result.oracle_reward, result.nop_reward = row["oracle_reward"], row["nop_reward"]
    result.oracle_trial, result.nop_trial = row["oracle_trial_id"], row["nop_trial_id"]
    trials = _trial_results(jobs)
    for agent, trial_id in (("oracle", result.oracle_trial), ("nop", result.nop_trial)):
        data = trials.get(str(trial_id), {})
        failure = data.get("failure")
        kind = failure.get("type") if isinstance(failure, dict) else failure
        setattr(result, f"{agent}_failure", kind)
        if agent == "oracle":
            result.oracle_trial = data.get("_folder", trial_id)
        else:
            result.nop_trial = data.get("_folder", trial_id)
        result.verifier_tampered += [f"{agent}: {e}" for e in _tampered_evidence(data)]
    if row["builds"] is False:
        result.status = "does not build here"
        result.reason = row["reason"]
    else:
        result.status, result.reason = row["verdict"], row["reason"]
    return result


def cleanup_task_images(task_ids: list[str]) -> None:
    """Remove the images built for ``task_ids`` (their untagged parent layers go with them).
    Never a machine-wide ``docker image prune``: it removed layers that builds running beside
    this script (a test suite's, another check) still needed ("failed to get digest")."""
    for task_id in task_ids:
        repo = f"skillsbench-env/{task_id}"
        out = subprocess.run(
            ["docker", "images", "-q", repo], capture_output=True, text=True
        ).stdout.split()
        if out:
            subprocess.run(["docker", "rmi", "-f", *sorted(set(out))], capture_output=True)


def summary_table(results: list[TaskResult]) -> str:
    headers = ("task", "base", "builds", "oracle", "nop", "status", "wall s", "reason")
    rows = [
        (
            r.task_id,
            r.base or "",
            {True: "yes", False: "no", None: "-"}[r.builds],
            "-" if r.oracle_reward is None else f"{r.oracle_reward:g}",
            "-" if r.nop_reward is None else f"{r.nop_reward:g}",
            r.status + (" TAMPERED" if r.verifier_tampered else ""),
            f"{r.wall_sec:.0f}",
            r.reason[:110],
        )
        for r in results
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)) for row in rows]
    head = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    return "\n".join([head, *lines])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, required=True, help="the real tasks folder")
    parser.add_argument("--only", default="", help="comma-separated task ids")
    parser.add_argument("--limit", type=int, default=None, help="first N selected tasks")
    parser.add_argument("--concurrency", type=int, default=1, help="tasks checked at once")
    parser.add_argument("--task-timeout", type=float, default=3600.0, help="seconds per task")
    parser.add_argument("--deadline", type=float, default=None, help="seconds for the whole run")
    parser.add_argument("--json-report", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep scratch folder and task images")
    parser.add_argument("--bases-only", action="store_true", help="make the bases and stop")
    args = parser.parse_args(argv)
    if not args.tasks.is_dir():
        parser.error(f"--tasks {args.tasks}: not a folder")
    tasks = sorted(p for p in args.tasks.iterdir() if (p / "task.toml").is_file())
    if args.only:
        wanted = [x.strip() for x in args.only.split(",") if x.strip()]
        unknown = sorted(set(wanted) - {t.name for t in tasks})
        if unknown:
            parser.error(f"--only: unknown task ids {unknown}")
        tasks = [args.tasks / t for t in wanted]
    if args.limit is not None:
        tasks = tasks[: args.limit]
    started = time.monotonic()
    needed = sorted({ref for t in tasks for ref in from_refs(t) if ref in STANDINS})
    bases: dict[str, str] = {}
    base_errors: dict[str, str] = {}
    for ref in needed:
        try:
            bases[ref] = ensure_standin(ref)
        except (BaseError, subprocess.CalledProcessError, OSError) as exc:
            base_errors[ref] = str(exc)
            log(f"no stand-in for {ref}: {exc}")
    log(f"bases: {json.dumps(bases)}")
    if args.bases_only:
        return 0 if not base_errors else 1
    results: list[TaskResult] = []
    scratch = Path(tempfile.mkdtemp(prefix="check-real-"))
    per_trial = max(1, (os.cpu_count() or 2) // max(1, args.concurrency))
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.concurrency)) as pool:
            futures = {}
            for task in tasks:
                futures[pool.submit(_bounded, task, scratch, bases, args, started, per_trial)] = (
                    task
                )
            for future in concurrent.futures.as_completed(futures):
                res = future.result()
                for ref in (res.base or "").split(", "):
                    if ref in base_errors and res.status == "does not build here":
                        res.reason += f" ({base_errors[ref]})"
                results.append(res)
                log(f"{res.task_id}: {res.status} oracle={res.oracle_reward} nop={res.nop_reward}")
                cleanup_task_images([res.task_id]) if not args.keep else None
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            log(f"scratch kept: {scratch}")
    results.sort(key=lambda r: r.task_id)
    print(summary_table(results))
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    tampered = [r for r in results if r.verifier_tampered]
    for r in tampered:
        print(f"\n!!! verifier_tampered in {r.task_id}:\n  " + "\n  ".join(r.verifier_tampered))
    if args.json_report:
        args.json_report.write_text(
            json.dumps(
                {
                    "schema": "skillsbench.agentbeats.check_real.v1",
                    "tasks_dir": str(args.tasks),
                    "bases": bases,
                    "base_errors": base_errors,
                    "counts": counts,
                    "tasks": [asdict(r) for r in results],
                },
                indent=2,
            )
            + "\n"
        )
    return 0


def _bounded(
    task: Path,
    scratch: Path,
    bases: dict[str, str],
    args: argparse.Namespace,
    started: float,
    per_trial: int,
) -> TaskResult:
    timeout = args.task_timeout
    if args.deadline is not None:
        left = args.deadline - (time.monotonic() - started)
        if left <= 30:
            return TaskResult(task.name, status="skipped", reason="global deadline reached")
        timeout = min(timeout, left)
    try:
        return check_task(task, scratch, bases, timeout, per_trial)
    except Exception as exc:  # one task's trouble must not end the run
        return TaskResult(task.name, status="error", reason=f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
