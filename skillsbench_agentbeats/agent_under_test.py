"""``python -m skillsbench_agentbeats.agent_under_test``: the entrypoint the published manifest names."""

from purple_agent.agent_under_test import agent_under_test
from purple_agent.server import run_standalone

if __name__ == "__main__":
    run_standalone(agent_under_test)
