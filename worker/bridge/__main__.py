"""``python -m worker.bridge --url URL --task-id ID --workspace DIR --trial-dir DIR ...``

Speaks ACP on stdin/stdout (nothing else may be printed there); diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import replace
from pathlib import Path

from acp import run_agent

from worker.bridge.agent import BridgeAgent
from worker.bridge.config import CAPS, BridgeConfig
from worker.limits import OutputCaps


def parse(argv: list[str] | None = None) -> BridgeConfig:
    parser = argparse.ArgumentParser(prog="python -m worker.bridge")
    parser.add_argument("--url", required=True, help="purple agent A2A URL")
    parser.add_argument("--task-id", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--skills-dir", default=None)
    parser.add_argument("--trial-dir", required=True, type=Path)
    parser.add_argument("--deadline-sec", required=True, type=float)
    parser.add_argument("--max-turns", type=int, default=100)
    parser.add_argument("--max-output-bytes", type=int, default=64 << 10)
    parser.add_argument("--max-files", type=int, default=100, help="files[] of a finish")
    for name in CAPS:
        parser.add_argument(f"--cap-{name.replace('_', '-')}", type=int, default=None)
    args = parser.parse_args(argv)
    given = {name: getattr(args, f"cap_{name}") for name in CAPS}
    caps = replace(OutputCaps(), **{k: v for k, v in given.items() if v is not None})
    return BridgeConfig(
        url=args.url,
        task_id=args.task_id,
        workspace=args.workspace,
        skills_dir=args.skills_dir,
        trial_dir=args.trial_dir,
        deadline_sec=args.deadline_sec,
        max_turns=args.max_turns,
        max_output_bytes=args.max_output_bytes,
        max_files=args.max_files,
        caps=caps,
    )


def main(argv: list[str] | None = None) -> None:
    config = parse(argv)
    asyncio.run(run_agent(BridgeAgent(config)))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
