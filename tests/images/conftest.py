"""Fixtures of the image tests: the local Python base and the three service images."""

from __future__ import annotations

from typing import Any

import pytest

from .python_base import ensure_python_base_image
from .service_images import (
    ensure_purple_cli_image,
    ensure_ray_worker_image,
    ensure_service_images,
)


def python_base(docker_client: Any) -> str:
    """The local Python base image (built once), or a skip naming why it cannot be made."""
    try:
        return ensure_python_base_image(docker_client)
    except RuntimeError as exc:
        pytest.skip(f"no local Python base image: {exc}")


@pytest.fixture(scope="session")
def service_images(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Service image tags (built once per content hash; several xdist workers wait for one)."""
    base = python_base(docker_client)
    return ensure_service_images(docker_client, base, tmp_path_factory.mktemp("images"))


@pytest.fixture(scope="session")
def ray_worker_image(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The worker image with the `ray` extra (WITH_RAY=1), as a Ray node runs it."""
    base = python_base(docker_client)
    return ensure_ray_worker_image(docker_client, base, tmp_path_factory.mktemp("ray-image"))


# The harness CLIs whose image install is checked here: binaries in wheels for the image's own
# Python. openhands and terminus need CLI_PYTHON 3.12, which uv downloads from GitHub (not
# reachable here); their CLIs are tested on the host (tests/purple/test_real_clis.py).
IMAGE_CLIS = ("claude-code", "codex")


@pytest.fixture(scope="session")
def purple_cli_image(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The purple image built with HARNESS_CLIS (IMAGE_CLIS), from the host's wheelhouses."""
    base = python_base(docker_client)
    try:
        return ensure_purple_cli_image(
            docker_client, base, tmp_path_factory.mktemp("cli-image"), IMAGE_CLIS
        )
    except RuntimeError as exc:
        if "cli-wheelhouse.sh failed" in str(exc):  # no package index: the install cannot happen
            pytest.skip(str(exc)[:300])
        raise


# A cold build of the base and the three service images takes minutes on a busy 2-core host;
# the suite's default 300 s per test is for the tests, not for that one build.
SERVICE_IMAGE_TIMEOUT_SEC = 1800
IMAGE_FIXTURES = {"service_images", "ray_worker_image", "purple_cli_image"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if IMAGE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.timeout(SERVICE_IMAGE_TIMEOUT_SEC))
            # On one xdist worker (--dist loadgroup): the builds are serial anyway (a lock),
            # and the other workers run the rest of the suite meanwhile instead of waiting.
            item.add_marker(pytest.mark.xdist_group("service-images"))
