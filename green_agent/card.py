"""The green agent's A2A card: 1.0 and 0.3 JSON-RPC interfaces, one skill with an example request.

:func:`card_document` is the card as served, built without importing a2a-sdk so the card can be
served within moments of start; :func:`agent_card` is the same card as an a2a-sdk object for the
request handler. A test keeps the two identical to what a2a-sdk itself would serve.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2a.types import AgentCard

CARD_PATH = "/.well-known/agent-card.json"
VERSION = "0.1.0"

EXAMPLE_REQUEST: dict[str, Any] = {
    "participants": {"agent": "http://127.0.0.1:9019/"},
    "config": {
        "task_set": "skillsbench-v1.1",
        "tasks": "all",
        "condition": "with_skills",
        "allow_excluded_tasks": False,
        "shard_index": 0,
        "num_shards": 7,
    },
}

# Keys a2a-sdk adds for 0.3 clients when a 0.3 interface is declared (the 0.3 card needs `url`).
COMPAT_03_KEYS = ("preferredTransport", "protocolVersion", "url")


def card_document(url: str) -> dict[str, Any]:
    """The card JSON exactly as served at ``/.well-known/agent-card.json``."""
    return {
        "name": "SkillsBench green agent",
        "description": (
            "Scores an A2A agent (role 'agent') on SkillsBench tasks: each selected task runs in a "
            "sandbox with the agent acting inside it, the task's verifier grades it, and the "
            "assessment ends with one DataPart holding the public result envelope."
        ),
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "version": VERSION,
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["application/json", "text/plain"],
        "skills": [
            {
                "id": "skillsbench-assessment",
                "name": "SkillsBench assessment",
                "description": (
                    "Send one text part holding {'participants': {'agent': URL}, 'config': "
                    "{...}}; config keys: task_set, tasks:'all' | task_ids, condition, "
                    "allow_excluded_tasks, shard_index, num_shards, num_instances, "
                    "participant_ids.agent."
                ),
                "tags": ["benchmark", "skillsbench", "assessment", "agentbeats"],
                "examples": [json.dumps(EXAMPLE_REQUEST)],
                "inputModes": ["text/plain"],
                "outputModes": ["application/json"],
            }
        ],
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3",
        "url": url,
    }


def agent_card(url: str) -> AgentCard:
    from a2a.types import AgentCard
    from google.protobuf.json_format import ParseDict

    document = {k: v for k, v in card_document(url).items() if k not in COMPAT_03_KEYS}
    return ParseDict(document, AgentCard())
