"""Fixtures of the image tests: the local Python base and the three service images."""

from __future__ import annotations

from typing import Any

import pytest

from integrations.agentbeats.base_image import ensure_python_base_image
from tests.images.support import (
    BINARY_CLIS,
    CLI_PYTHON_PATH,
    PYTHON_CLIS,
    CliImage,
    ensure_cli_python_image,
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


@pytest.fixture(scope="session")
def purple_cli_image(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> CliImage:
    """The purple image built with HARNESS_CLIS, from the host's wheelhouses."""
    base = python_base(docker_client)
    clis: tuple[str, ...] = BINARY_CLIS
    cli_python: str | None = None
    missing = ""
    try:
        base = ensure_cli_python_image(docker_client, base)
        clis, cli_python = BINARY_CLIS + PYTHON_CLIS, CLI_PYTHON_PATH
    except RuntimeError as exc:
        missing = str(exc)
    try:
        tag = ensure_purple_cli_image(
            docker_client, base, tmp_path_factory.mktemp("cli-image"), clis, cli_python
        )
    except RuntimeError as exc:
        if "cli-wheelhouse.sh failed" in str(exc):  # no package index: the install cannot happen
            pytest.skip(str(exc)[:300])
        raise
    return CliImage(tag, clis, missing)


# A cold build of the base and the three service images takes minutes on a busy 2-core host;
# the suite's default 300 s per test is for the tests, not for that one build.
SERVICE_IMAGE_TIMEOUT_SEC = 1800
# Each image fixture's tests share one xdist group (--dist loadgroup), named here: one worker
# builds that image (a lock per image) and runs its tests, while the other images build on other
# workers at the same time instead of after it (the three cold builds took 36 minutes one after
# another, longer than the rest of the suite).
IMAGE_GROUPS = {
    "service_images": "service-images",
    "ray_worker_image": "image-ray-worker",
    "purple_cli_image": "image-purple-cli",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    building = set()
    for item in items:
        used = [f for f in IMAGE_GROUPS if f in getattr(item, "fixturenames", ())]
        if used:
            item.add_marker(pytest.mark.timeout(SERVICE_IMAGE_TIMEOUT_SEC))
            item.add_marker(pytest.mark.xdist_group(IMAGE_GROUPS[used[0]]))
            building.add(item.nodeid)
    # First in the collection, so that pytest-xdist hands out these long groups first (it orders
    # groups by size, then keeps the collection's order: a one-test group would otherwise wait
    # behind the hundreds of short tests collected before tests/images).
    items.sort(key=lambda item: item.nodeid not in building)
