"""``python -m worker.bridge --url URL --task-id ID --workspace DIR --trial-dir DIR ...``

Speaks ACP on stdin/stdout (nothing else may be printed there); diagnostics go to stderr.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from acp import run_agent

from worker.bridge.agent import BridgeAgent
from worker.bridge.config import CAPS, BridgeConfig
from worker.core.limits import OutputCaps


def _cap_options(command: Any) -> Any:
    """``--cap-<name>`` for every output cap the worker hands the bridge (worker/core/limits.py)."""
    for name in reversed(CAPS):
        command = click.option(f"--cap-{name.replace('_', '-')}", f"cap_{name}", type=int)(command)
    return command


@click.command(name="python -m worker.bridge")
@click.option("--url", required=True, help="purple agent A2A URL")
@click.option("--task-id", required=True)
@click.option("--workspace", required=True)
@click.option("--skills-dir", default=None)
@click.option("--trial-dir", required=True, type=click.Path(path_type=Path))
@click.option("--deadline-sec", required=True, type=float)
@click.option("--max-turns", type=int, default=100, show_default=True)
@click.option("--max-output-bytes", type=int, default=64 << 10, show_default=True)
@click.option("--max-files", type=int, default=100, show_default=True, help="files[] of a finish")
@_cap_options
def main(
    url: str,
    task_id: str,
    workspace: str,
    skills_dir: str | None,
    trial_dir: Path,
    deadline_sec: float,
    max_turns: int,
    max_output_bytes: int,
    max_files: int,
    **given_caps: int | None,
) -> None:
    given = {name: given_caps.get(f"cap_{name}") for name in CAPS}
    caps = replace(OutputCaps(), **{k: v for k, v in given.items() if v is not None})
    config = BridgeConfig(
        url=url,
        task_id=task_id,
        workspace=workspace,
        skills_dir=skills_dir,
        trial_dir=trial_dir,
        deadline_sec=deadline_sec,
        max_turns=max_turns,
        max_output_bytes=max_output_bytes,
        max_files=max_files,
        caps=caps,
    )
    asyncio.run(run_agent(BridgeAgent(config)))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
