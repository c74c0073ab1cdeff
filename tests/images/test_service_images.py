"""The green, worker and purple images build from a local Python base and answer --help."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.images.support import REPO_ROOT, SERVICES

EXPECTED_HELP = {
    "green": ("--host", "--port", "--card-url"),
    "worker": ("--host", "--port", "--jobs-dir", "--environment"),
    "purple": ("placeholder", "agent-under-test"),
}


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_dockerfile_contract(service: str) -> None:
    text = (REPO_ROOT / SERVICES[service]).read_text()
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim$", text, re.M)
    assert "FROM --platform=linux/amd64 ${BASE_IMAGE}" in text
    # Locked: every third-party wheel is installed by hash from uv.lock's export.
    assert "uv export --quiet --frozen --no-dev --no-emit-project" in text
    assert "--require-hashes" in text
    assert re.search(r"^ARG WHEELHOUSE=0$", text, re.M)
    for src in re.findall(r"^COPY (?!--)(.+) \S+$", text, re.M):
        for path in src.split():
            if "[" in path or "$" in path:
                continue  # optional glob (.wheelhous[e]) or a build argument
            assert (REPO_ROOT / path).exists(), f"COPY source {path} is missing"
    # Non-root whatever starts it (Amber's helper never runs the ENTRYPOINT), and no service
    # default in image ENV (the helper passes on only PATH, HOME and TMPDIR).
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1] not in ("root", "0")
    instructions = re.sub(r"\\\n", " ", text).splitlines()  # continuation lines joined
    env_names = {
        name
        for line in instructions
        if line.startswith("ENV ")
        for name in re.findall(r"(?:^ENV|\s)([A-Z_]+)=", line)
    }
    assert env_names <= {
        *("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "VIRTUAL_ENV", "PATH", "HOME"),
        *("UV_PYTHON_DOWNLOADS", "UV_NO_CACHE", "SKILLSBENCH_SERVICE_COMMAND"),
    }, env_names


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("service", sorted(SERVICES))
def test_image_answers_help(
    docker_client: Any, service_images: dict[str, str], service: str
) -> None:
    image = docker_client.images.get(service_images[service])
    assert image.attrs["Architecture"] == "amd64"
    output = docker_client.containers.run(
        service_images[service], ["--help"], remove=True, stdout=True, stderr=True
    ).decode()
    for word in EXPECTED_HELP[service]:
        assert word in output, f"{service} --help lacks {word}:\n{output}"


@pytest.mark.docker
@pytest.mark.slow
def test_service_images_run_unprivileged(
    docker_client: Any, service_images: dict[str, str], tmp_path: Path
) -> None:
    """All three run as `skillsbench`, also when the entry is bypassed (as Amber's helper does);
    the socket's group comes from `--group-add`, and `--user 0` through the entry drops root."""
    socket_gid = Path("/var/run/docker.sock").stat().st_gid
    volumes = {"/var/run/docker.sock": {"bind": "/var/run/docker.sock", "mode": "rw"}}
    for service in ("green", "worker"):
        out = docker_client.containers.run(
            service_images[service],
            entrypoint=["id"],
            volumes=volumes,
            group_add=[str(socket_gid)],
            remove=True,
        ).decode()
        assert out.startswith("uid=10001(skillsbench)"), out
        assert f"{socket_gid}" in out.split("groups=")[1], out
        out = docker_client.containers.run(
            service_images[service],
            entrypoint=["python", "-m", "skillsbench_agentbeats.container_entry", "id"],
            volumes=volumes,
            user="0",
            remove=True,
        ).decode()
        assert out.startswith("uid=10001(skillsbench)"), out
        assert f"{socket_gid}" in out.split("groups=")[1], out
    purple = docker_client.containers.run(
        service_images["purple"], entrypoint=["id", "-u"], remove=True
    ).decode()
    assert purple.strip() == "10001"
    # Amber's helper, as the image's user, creates the framework.docker socket where the worker
    # manifest mounts it (/app/run); root's /var/run would refuse it.
    bind = (
        "import socket, sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        socket.socket(socket.AF_UNIX).bind(path); print(path, 'ok')\n"
        "    except PermissionError:\n"
        "        print(path, 'refused')\n"
    )
    out = docker_client.containers.run(
        service_images["worker"],
        entrypoint=["python", "-c", bind, "/app/run/docker.sock", "/var/run/docker.sock"],
        remove=True,
    ).decode()
    assert out.split("\n")[:2] == ["/app/run/docker.sock ok", "/var/run/docker.sock refused"], out
