"""The purple image with HARNESS_CLIS: the PyPI harness CLIs install at their pins, run as the
image's unprivileged user, and are where the agent-under-test looks for them (its PATH)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import IMAGE_CLIS

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# What each CLI prints for --version at the Dockerfile's pins (the pins docs/purple-agents.md
# lists as verified against the real CLI).
VERSIONS = {
    "claude-code": ("claude", "2.1.332 (Claude Code)"),
    "codex": ("codex", "codex-cli 0.163.0"),
}


def test_the_pypi_harness_clis_install_at_their_pins(
    docker_client: Any, purple_cli_image: str
) -> None:
    script = "; ".join(
        f"command -v {VERSIONS[cli][0]}; {VERSIONS[cli][0]} --version" for cli in IMAGE_CLIS
    )
    # Through the image's own entry, as the agent-under-test is started (non-root user).
    out = docker_client.containers.run(
        purple_cli_image,
        entrypoint=["sh", "-c", f"id -un; {script}"],
        remove=True,
        stdout=True,
        stderr=True,
    ).decode()
    lines = out.splitlines()
    assert lines[0] == "skillsbench", out
    for cli in IMAGE_CLIS:
        program, version = VERSIONS[cli]
        assert f"/usr/local/bin/{program}" in lines, out
        assert version in lines, out
    # The wheels did not stay in the image's last state.
    listing = docker_client.containers.run(
        purple_cli_image, entrypoint=["ls", "/tmp"], remove=True
    ).decode()
    assert "wheelhouse-clis" not in listing
