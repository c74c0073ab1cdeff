"""``make demo``: the examples task set on the embedded default (local sandbox), first with the
oracle (every task must pass), then with ``nop`` (every task must fail)."""

from __future__ import annotations

import sys

from skillsbench_agentbeats.cli import main as cli

RUNS = (("oracle", "passed"), ("nop", "failed"))


def main() -> int:
    for agent, expect in RUNS:
        print(f"\n== examples task set, agent {agent}: every task should be {expect}", flush=True)
        try:
            cli(
                [
                    "run",
                    "--task-set",
                    "examples",
                    "--agent",
                    agent,
                    "--jobs-dir",
                    ".demo/jobs",
                    "--output",
                    f".demo/{agent}-rows.json",
                    "--expect",
                    expect,
                ]
            )
        except SystemExit as exc:
            if exc.code:
                print(f"demo failed: not every task {expect} with {agent}", file=sys.stderr)
                return int(exc.code) if isinstance(exc.code, int) else 1
    print("\ndemo ok: the oracle passes every example task and nop fails every one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
