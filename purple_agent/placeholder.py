"""The placeholder participant: answers every task politely and never acts.

Its reply carries no ``skillsbench-shell/v1`` action, so the bridge ends the trial at once and the
verifier grades an untouched workspace: a score-eligible row with reward 0. Use it to smoke-test a
scenario end to end without a model.
"""

from __future__ import annotations

import click
from a2a.types import AgentCard, AgentSkill

from purple_agent.redact import Redactor, install_logging, secret_env_values
from purple_agent.server import (
    Reply,
    Turn,
    TurnAgent,
    build_app,
    build_card,
    public_url,
    run_standalone,
    serve,
    server_options,
)

REPLY = "Thank you for the task. I am a placeholder participant, so I will not take any action."


class PlaceholderAgent(TurnAgent):
    async def respond(self, turn: Turn) -> Reply:
        return Reply(text=REPLY)


def card_for(url: str) -> AgentCard:
    return build_card(
        name="SkillsBench placeholder participant",
        description="Answers every task politely and does nothing (smoke tests; scores 0).",
        url=url,
        skills=[
            AgentSkill(
                id="placeholder",
                name="Placeholder",
                description="Replies without acting on the task.",
                tags=["skillsbench", "placeholder"],
            )
        ],
    )


@click.command(name="placeholder")
@server_options
def placeholder(host: str, port: int, card_url: str | None) -> None:
    """Run the placeholder participant (answers politely, does nothing)."""
    install_logging(Redactor(secret_env_values()))
    url = public_url(host, port, card_url)
    serve(build_app(card_for(url), PlaceholderAgent()), host, port)


if __name__ == "__main__":
    run_standalone(placeholder)
