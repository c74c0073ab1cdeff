"""The configurable agent-under-test participant: one image, harness and model chosen by env.

Configuration is read and checked before the server starts (see :mod:`purple_agent.config`); a bad
value stops it with one line. Every log line and every reply goes through a redactor that knows
the configured secrets, so keys never leave the process except towards the model provider.
"""

from __future__ import annotations

import logging
import os

import click
from a2a.types import AgentCard, AgentSkill
from starlette.applications import Starlette

from purple_agent.config import AgentConfig, load_config
from purple_agent.harnesses import HarnessAgent
from purple_agent.minimal import MinimalAgent
from purple_agent.redact import Redactor, install_logging, secret_env_values
from purple_agent.server import (
    TurnAgent,
    build_app,
    build_card,
    public_url,
    run_standalone,
    serve,
    server_options,
)

log = logging.getLogger("purple_agent")


def make_agent(config: AgentConfig) -> TurnAgent:
    if config.harness == "minimal":
        return MinimalAgent(config)
    return HarnessAgent(config)


def make_redactor(config: AgentConfig) -> Redactor:
    secrets = secret_env_values()
    if config.api_key is not None:
        secrets.append(config.api_key.get_secret_value())
    return Redactor(secrets)


def card_for(config: AgentConfig, url: str) -> AgentCard:
    """Names the harness and model (public facts), never a key or a base URL."""
    return build_card(
        name="SkillsBench agent under test",
        description=(
            f"Runs SkillsBench tasks over skillsbench-shell/v1 with the {config.harness} harness "
            f"and model {config.model}."
        ),
        url=url,
        skills=[
            AgentSkill(
                id="skillsbench-shell",
                name="SkillsBench task solver",
                description="Solves a task in a sandbox through skillsbench-shell/v1 actions.",
                tags=["skillsbench", "skillsbench-shell/v1", config.harness],
            )
        ],
    )


def create_app(config: AgentConfig, url: str, agent: TurnAgent | None = None) -> Starlette:
    """The participant app: card, agent (made from ``config`` unless given), redacted replies."""
    return build_app(
        card_for(config, url), agent or make_agent(config), redact=make_redactor(config).data
    )


@click.command(name="agent-under-test")
@server_options
def agent_under_test(host: str, port: int, card_url: str | None) -> None:
    """Run the configurable agent under test (configured by SKILLSBENCH_AGENT_* variables)."""
    config = load_config()
    redactor = make_redactor(config)
    install_logging(redactor)
    agent = make_agent(config)
    if isinstance(agent, HarnessAgent) and (why := agent.missing_cli()) is not None:
        log.warning("%s; every task will fail until it is installed", why)
    if isinstance(agent, HarnessAgent) and (why := agent.namespace_problem()) is not None:
        log.warning(
            "%s; the harness will run in a copy of the workspace, not at the task's own paths", why
        )
    if (why := config.key_problem(os.environ)) is not None:
        log.warning("%s; every model call will fail", why)
    if isinstance(agent, MinimalAgent) or (isinstance(agent, HarnessAgent) and not config.command):
        # Seconds of import at start-up, not counted against the first trial's time.
        agent.load_model_library_in_background()
    log.info(
        "agent under test: harness=%s model=%s provider=%s base_url=%s key=%s (pid %d)",
        config.harness,
        config.model,
        config.provider or "-",
        "set" if config.base_url else "-",
        "set" if config.api_key else "-",
        os.getpid(),
    )
    serve(create_app(config, public_url(host, port, card_url), agent), host, port)


if __name__ == "__main__":
    run_standalone(agent_under_test)
