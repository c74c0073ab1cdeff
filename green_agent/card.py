"""The green agent's A2A card: 1.0 and 0.3 JSON-RPC interfaces, one skill with an example."""

from __future__ import annotations

import json

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill

EXAMPLE_REQUEST: dict[str, object] = {
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


def agent_card(url: str, version: str = "0.1.0") -> AgentCard:
    return AgentCard(
        name="SkillsBench green agent",
        description=(
            "Scores an A2A agent (role 'agent') on SkillsBench tasks: each selected task runs in a "
            "sandbox with the agent acting inside it, the task's verifier grades it, and the "
            "assessment ends with one DataPart holding the public result envelope."
        ),
        version=version,
        provider=AgentProvider(organization="SkillsBench", url="https://www.skillsbench.ai"),
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url),
            AgentInterface(protocol_binding="JSONRPC", protocol_version="0.3", url=url),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["application/json", "text/plain"],
        skills=[
            AgentSkill(
                id="skillsbench-assessment",
                name="SkillsBench assessment",
                description=(
                    "Send one text part holding {'participants': {'agent': URL}, 'config': {...}}; "
                    "config keys: task_set, tasks:'all' | task_ids, condition, "
                    "allow_excluded_tasks, shard_index, num_shards, num_instances, "
                    "participant_ids.agent."
                ),
                tags=["benchmark", "skillsbench", "assessment", "agentbeats"],
                examples=[json.dumps(EXAMPLE_REQUEST)],
                input_modes=["text/plain"],
                output_modes=["application/json"],
            )
        ],
    )
