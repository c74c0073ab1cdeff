"""``make demo``: the main job on the embedded default (examples task set, local sandbox)."""

from __future__ import annotations

import sys


def main() -> int:
    print("skillsbench-agentbeats demo: components are still being built.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
