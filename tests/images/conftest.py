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
