"""Overhead of the a2a bridge per ``exec`` action.

Measures, in one run against the same scripted purple agent (a2a-sdk 1.x on loopback):
- through the bridge: the time between consecutive A2A requests of a trial whose purple agent
  answers every turn with ``{"action":"exec","command":"true"}`` (purple round trip + ACP
  terminal/* in the sandbox + trajectory recording);
- raw: one A2A round trip to the purple agent (same client library, same context) plus one
  ``sandbox.exec("true")``, timed separately; medians added.
The two are measured in alternating rounds so that a change of machine load hits both alike.
Prints both medians and their ratio (target <= 1.5).

    uv run --frozen python bench/bridge_overhead.py [--actions 20] [--rounds 3] [--environment local] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The project's packages and the test helpers, whatever the cwd.
sys.path.insert(0, str(REPO))  # the project and its tests package, whatever the cwd

import httpx  # noqa: E402
from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.helpers import new_data_part, new_text_part  # noqa: E402
from a2a.types import Message, Role, SendMessageRequest  # noqa: E402

from task_sets.task import load_task  # noqa: E402
from tests.worker.support import purple_server  # noqa: E402
from worker.agents.a2a import A2AAgent  # noqa: E402
from worker.agents.base import AgentContext  # noqa: E402
from worker.sandbox.base import Sandbox, sandbox_class  # noqa: E402
from worker.trial_record.paths import A2A_TRAJECTORY_FILE  # noqa: E402

TASK = REPO / "tests" / "worker" / "tasks" / "write-answer"


def make_sandbox(environment: str, state_dir: Path) -> Sandbox:
    task = load_task(TASK)
    return sandbox_class(environment).for_task(
        task, run_id="bench", trial_id=uuid.uuid4().hex[:8], state_dir=state_dir
    )


async def through_bridge(url: str, sandbox: Sandbox, trial_dir: Path, actions: int) -> list[float]:
    agent = A2AAgent(f"a2a:{url}")
    agent.max_turns = actions + 1
    ctx = AgentContext(
        sandbox=sandbox,
        task=load_task(TASK),
        prompt="benchmark",
        trial_dir=trial_dir,
        timeout_sec=600,
        record=lambda event: None,
    )
    outcome = await agent.run(ctx)
    assert outcome.failure is None, outcome.message
    events = [
        json.loads(line) for line in (trial_dir / A2A_TRAJECTORY_FILE).read_text().splitlines()
    ]
    starts = [e["timestamp"] for e in events if e["type"] == "a2a_request"]
    return [b - a for a, b in itertools.pairwise(starts[1:])]  # skip turn 1 (warm-up)


async def raw_round_trips(
    url: str, sandbox: Sandbox, actions: int
) -> tuple[list[float], list[float]]:
    a2a_times: list[float] = []
    exec_times: list[float] = []
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(
            url, client_config=ClientConfig(streaming=False, httpx_client=http)
        )
        context_id = ""
        result = {"action_result": {"exit_code": 0, "stdout": "", "stderr": "", "truncated": False}}
        for n in range(actions + 1):
            message = Message(
                role=Role.ROLE_USER,
                message_id=uuid.uuid4().hex,
                context_id=context_id,
                parts=[new_text_part("exec finished: exit code 0"), new_data_part(result)],
            )
            start = time.perf_counter()
            async for event in client.send_message(SendMessageRequest(message=message)):
                context_id = event.task.context_id if event.HasField("task") else context_id
            a2a = time.perf_counter() - start
            start = time.perf_counter()
            done = await sandbox.exec(["sh", "-c", "true"], cwd=sandbox.workdir, timeout_sec=60)
            ran = time.perf_counter() - start
            assert done.exit_code == 0
            if n:  # skip the warm-up round
                a2a_times.append(a2a)
                exec_times.append(ran)
        await client.close()
    return a2a_times, exec_times


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--actions", type=int, default=20, help="exec actions per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--environment", default="local")
    parser.add_argument(
        "--smoke", action="store_true", help="3 actions, 1 round (make bench-smoke)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.actions, args.rounds = 3, 1
    with tempfile.TemporaryDirectory() as tmp, purple_server("loop") as url:
        root = Path(tmp)
        sandbox = make_sandbox(args.environment, root / "box")
        await sandbox.start()
        bridge: list[float] = []
        a2a: list[float] = []
        ran: list[float] = []
        try:
            for n in range(args.rounds):
                bridge += await through_bridge(url, sandbox, root / f"trial-{n}", args.actions)
                raw_a2a, raw_exec = await raw_round_trips(url, sandbox, args.actions)
                a2a += raw_a2a
                ran += raw_exec
        finally:
            await sandbox.stop()
    bridge_ms = statistics.median(bridge) * 1000
    a2a_ms, exec_ms = statistics.median(a2a) * 1000, statistics.median(ran) * 1000
    raw_ms = a2a_ms + exec_ms
    print(
        f"sandbox: {type(sandbox).__name__}   exec actions: {len(bridge)} (bridge), {len(a2a)} (raw)"
    )
    print(f"through the bridge, per exec action (median): {bridge_ms:8.2f} ms")
    print(f"raw A2A round trip (median):                  {a2a_ms:8.2f} ms")
    print(f"raw sandbox exec (median):                    {exec_ms:8.2f} ms")
    print(f"raw A2A + raw exec:                           {raw_ms:8.2f} ms")
    print(f"ratio bridge / raw: {bridge_ms / raw_ms:.2f}  (target <= 1.5)")


if __name__ == "__main__":
    asyncio.run(main())
