"""A purple agent that solves the csv-sales-summary example task over skillsbench-shell/v1.

Run: python csv_sales_purple.py 9019   (then: --agent a2a:http://127.0.0.1:9019)
"""

import csv
import io
import json
import sys
import uuid

import uvicorn
from a2a.helpers import get_data_parts, new_data_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, Role
from starlette.applications import Starlette


def decide(data: dict) -> dict:
    if data.get("protocol") == "skillsbench-shell/v1":  # turn 1: the task's context
        return {"action": "read_file", "path": "sales.csv"}
    content = data["action_result"]["content"]  # turn 2: the file we asked for
    totals: dict[str, float] = {}
    for row in csv.DictReader(io.StringIO(content)):
        revenue = int(row["units"]) * float(row["unit_price"])
        totals[row["region"]] = totals.get(row["region"], 0.0) + revenue
    summary = {
        "total_revenue": round(sum(totals.values()), 2),
        "revenue_by_region": {region: round(value, 2) for region, value in totals.items()},
        "top_region": max(totals, key=totals.__getitem__),
    }
    return {"action": "finish", "files": [{"path": "summary.json", "content": json.dumps(summary)}]}


class ShellAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        data = get_data_parts(list(context.message.parts))[0]
        reply = Message(
            role=Role.ROLE_AGENT,
            message_id=uuid.uuid4().hex,
            context_id=context.context_id,
            parts=[new_data_part(decide(data))],
        )
        await event_queue.enqueue_event(reply)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


port = int(sys.argv[1])
url = f"http://127.0.0.1:{port}/"
card = AgentCard(
    name="csv-sales-purple",
    description="Solves csv-sales-summary",
    version="0.1.0",
    supported_interfaces=[
        AgentInterface(protocol_binding="JSONRPC", protocol_version=v, url=url)
        for v in ("1.0", "0.3")
    ],
    capabilities=AgentCapabilities(streaming=False),
    default_input_modes=["text/plain", "application/json"],
    default_output_modes=["application/json"],
    skills=[
        AgentSkill(
            id="shell", name="shell", description="skillsbench-shell/v1", tags=["skillsbench"]
        )
    ],
)
handler = DefaultRequestHandler(
    agent_executor=ShellAgent(), task_store=InMemoryTaskStore(), agent_card=card
)
app = Starlette(
    routes=[
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
    ]
)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
