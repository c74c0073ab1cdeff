"""``python -m skillsbench_agentbeats.placeholder_agent``: the entrypoint the published manifest names."""

from purple_agent.placeholder import placeholder
from purple_agent.server import run_standalone

if __name__ == "__main__":
    run_standalone(placeholder)
