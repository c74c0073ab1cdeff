"""``skillsbench-agentbeats images build-base``: the operator's command for the local base image
the service images build on where no registry answers (issue #32: only a test helper made it)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from integrations.agentbeats.base_image import LABEL, recipe_tag, unavailable_reason

pytestmark = pytest.mark.docker


def test_build_base_makes_the_image_and_prints_its_tag(docker_client: Any) -> None:
    reason = unavailable_reason()
    if reason is not None and not any(
        recipe_tag() in tags for tags in (i.tags for i in docker_client.images.list())
    ):
        pytest.skip(f"cannot make the local base image here: {reason}")
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "images", "build-base"],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tag = done.stdout.strip()
    assert tag == recipe_tag()
    image = docker_client.images.get(tag)
    assert image.labels.get(LABEL) == tag
    ran = docker_client.containers.run(
        tag, ["python3", "-c", "import sys, venv, ssl; print(sys.version_info[:2])"], remove=True
    )
    assert ran.decode().strip() == "(3, 11)"
