"""Fixtures of the image tests: the local Python base and the three service images."""

from __future__ import annotations

from typing import Any

import pytest

from .python_base import ensure_python_base_image
from .service_images import ensure_service_images


@pytest.fixture(scope="session")
def service_images(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Service image tags (built once per content hash; several xdist workers wait for one)."""
    try:
        base = ensure_python_base_image(docker_client)
    except RuntimeError as exc:
        pytest.skip(f"no local Python base image: {exc}")
    return ensure_service_images(docker_client, base, tmp_path_factory.mktemp("images"))


# A cold build of the base and the three service images takes minutes on a busy 2-core host;
# the suite's default 300 s per test is for the tests, not for that one build.
SERVICE_IMAGE_TIMEOUT_SEC = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "service_images" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(SERVICE_IMAGE_TIMEOUT_SEC))
