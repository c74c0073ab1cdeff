"""The purple image with HARNESS_CLIS: the PyPI harness CLIs install at their pins (openhands and
terminus on CLI_PYTHON 3.12), run as the image's unprivileged user, and are where the
agent-under-test looks for them (its PATH)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.images.support import PYTHON_CLIS, CliImage

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# Per CLI: the command the harness runs, a shell line that shows its version, and what that line
# prints at the Dockerfile's pins (the pins docs/purple-agents.md lists as verified).
VERSIONS = {
    "claude-code": ("claude", "claude --version", "2.1.332 (Claude Code)"),
    "codex": ("codex", "codex --version", "codex-cli 0.163.0"),
    "openhands": ("openhands", "openhands --version", "OpenHands CLI 1.16.0"),
    # terminus has no --version: its help proves the command starts, its venv gives the version
    "terminus": (
        "terminus",
        "terminus --help | grep -o 'Usage: terminus'; "
        '"$(dirname "$(readlink -f "$(command -v terminus)")")/python" -c '
        '\'import importlib.metadata as m; print("terminus-ai", m.version("terminus-ai"))\'',
        "terminus-ai 2.0.4",
    ),
}


def test_the_pypi_harness_clis_install_at_their_pins(
    docker_client: Any, purple_cli_image: CliImage
) -> None:
    clis = purple_cli_image.clis
    script = "; ".join(f"command -v {VERSIONS[c][0]}; {VERSIONS[c][1]}" for c in clis)
    # Through the image's own entry, as the agent-under-test is started (non-root user);
    # litellm's price table from the package, as the harness runs them (no network here).
    out = docker_client.containers.run(
        purple_cli_image.tag,
        entrypoint=["sh", "-c", f"id -un; {script}"],
        environment={"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        remove=True,
        stdout=True,
        stderr=True,
    ).decode()
    lines = [line.strip() for line in out.splitlines()]
    assert lines[0] == "skillsbench", out
    for cli in clis:
        program, _, version = VERSIONS[cli]
        assert f"/usr/local/bin/{program}" in lines, out
        assert version in lines, out
    if "terminus" in clis:
        assert "Usage: terminus" in lines, out
    # The wheels did not stay in the image's last state; terminus's tmux came with it.
    listing = docker_client.containers.run(
        purple_cli_image.tag,
        entrypoint=["sh", "-c", "ls /tmp; command -v tmux || true"],
        remove=True,
    ).decode()
    assert "wheelhouse-clis" not in listing
    assert ("/usr/bin/tmux" in listing) == ("terminus" in clis), listing


def test_the_cli_python_is_used_by_the_clis_that_need_it(
    docker_client: Any, purple_cli_image: CliImage
) -> None:
    if not set(PYTHON_CLIS) <= set(purple_cli_image.clis):
        pytest.skip(f"openhands and terminus not in the image: {purple_cli_image.missing}")
    script = "; ".join(
        f'"$(dirname "$(readlink -f "$(command -v {cli})")")/python" -c '
        "'import sys; print(sys.version_info[:2])'"
        for cli in PYTHON_CLIS
    )
    out = docker_client.containers.run(
        purple_cli_image.tag, entrypoint=["sh", "-c", script], remove=True
    ).decode()
    assert out.split("\n")[:2] == ["(3, 12)", "(3, 12)"], out
