"""The CLI entry point answers --help and lists every component's commands."""

import subprocess
import sys

from skillsbench_agentbeats.cli import COMMANDS


def test_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in COMMANDS:
        assert name in out
