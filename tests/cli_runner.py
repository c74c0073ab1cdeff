"""Run the real `skillsbench-agentbeats` entry point in-process (no interpreter start-up per call)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from skillsbench_agentbeats.cli import main


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> CliResult:
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return CliResult(code, out, err)
