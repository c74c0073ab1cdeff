"""``skillsbench-agentbeats purple placeholder|agent-under-test``."""

from __future__ import annotations

import click

from purple_agent.agent_under_test import agent_under_test
from purple_agent.placeholder import placeholder


@click.group(name="purple")
def purple() -> None:
    """Run a purple (participant) agent."""


purple.add_command(placeholder)
purple.add_command(agent_under_test)
