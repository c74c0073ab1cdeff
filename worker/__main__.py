"""``python -m worker …``: the worker HTTP service (same options as ``skillsbench-agentbeats worker``)."""

import sys

from skillsbench_agentbeats.cli import main

if __name__ == "__main__":
    sys.exit(main(["worker", *sys.argv[1:]]))
