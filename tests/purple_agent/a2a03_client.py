"""A genuine a2a-sdk 0.3.x client, run by the tests with the `.venv-a2a03` interpreter.

Usage: python a2a03_client.py URL < turns.json, where turns.json is a list of
{"text": str | null, "data": object | null}. All turns share one context. Prints one JSON object:
{"card": {...}, "replies": [{"state", "texts", "data"}]}.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import DataPart, Message, Part, Role, Task, TextPart


async def main(url: str, turns: list[dict]) -> dict:
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(httpx_client=http, base_url=url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        context_id = None
        replies = []
        for turn in turns:
            parts = []
            if turn.get("text") is not None:
                parts.append(Part(root=TextPart(text=turn["text"])))
            if turn.get("data") is not None:
                parts.append(Part(root=DataPart(data=turn["data"])))
            msg = Message(
                role=Role.user, parts=parts, message_id=uuid.uuid4().hex, context_id=context_id
            )
            last = None
            async for event in client.send_message(msg):
                last = event
            task = last[0] if isinstance(last, tuple) else last
            assert isinstance(task, Task), type(task)
            context_id = task.context_id
            out = [p.root for a in task.artifacts or [] for p in a.parts]
            if task.status.message is not None:
                out += [p.root for p in task.status.message.parts]
            replies.append(
                {
                    "state": task.status.state.value,
                    "texts": [p.text for p in out if isinstance(p, TextPart)],
                    "data": [p.data for p in out if isinstance(p, DataPart)],
                }
            )
        return {"card": card.model_dump(mode="json", exclude_none=True), "replies": replies}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], json.load(sys.stdin)))))
