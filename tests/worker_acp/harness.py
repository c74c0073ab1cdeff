"""Drive one agent through one trial the way the worker does (sandbox up → agent → tests copied in
→ verifier) in the worker's ``local`` sandbox, with hooks the worker's own runner does not offer
(inspecting the sandbox before teardown). End-to-end runs through the worker are in
``test_worker_run_e2e.py``."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from task_sets.task import Task, load_task
from worker.agents.base import Agent, AgentContext, AgentOutcome
from worker.sandbox.base import Sandbox, sandbox_class

TASKS = Path(__file__).parent / "tasks"


@dataclass
class TrialResult:
    outcome: AgentOutcome
    reward: float | None
    trial_dir: Path
    verifier: Any = None  # the verifier's ExecResult and the reward read: why a reward is None

    def trajectory(self, name: str = "acp_trajectory.jsonl") -> list[dict[str, Any]]:
        path = self.trial_dir / "trajectory" / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def tool_calls(self) -> list[dict[str, Any]]:
        return [e for e in self.trajectory() if e["type"] == "tool_call"]


def task(name: str = "write-answer") -> Task:
    return load_task(TASKS / name)


async def run_trial(
    agent: Agent,
    tmp: Path,
    *,
    the_task: Task | None = None,
    timeout_sec: float | None = None,
    env: dict[str, str] | None = None,
    participant_url: str | None = None,
    prepare: Any = None,
    inspect: Any = None,
    environment: str = "local",
    skills_dir: str | None = None,
    model: str | None = None,
) -> TrialResult:
    """Run the trial; ``prepare(box)`` runs before the agent, ``inspect(box)`` after the
    verifier and before the sandbox stops."""
    the_task = the_task or task()
    trial_dir = tmp / "trial"
    (trial_dir / "trajectory").mkdir(parents=True, exist_ok=True)
    events = trial_dir / "trajectory" / "acp_trajectory.jsonl"

    def record(event: dict[str, Any]) -> None:  # as the worker's TrajectoryRecorder does
        with events.open("a") as out:
            out.write(json.dumps({"timestamp": time.time(), **event}) + "\n")

    # unique ids: docker removes every container labelled with them when one sandbox stops
    box = make_sandbox(
        the_task,
        environment,
        run_id=f"r-{uuid.uuid4().hex[:8]}",
        trial_id="t",
        state_dir=tmp / "box",
    )
    await box.start()
    try:  # the sandbox goes away however the trial ends, cancellation included
        if prepare is not None:
            await prepare(box)
        ctx = AgentContext(
            sandbox=box,
            task=the_task,
            prompt=the_task.instruction,
            trial_dir=trial_dir,
            timeout_sec=timeout_sec or the_task.config.agent.timeout_sec,
            record=record,
            env=env or {},
            participant_url=participant_url,
            skills_dir=skills_dir,
            model=model,
        )
        record({"type": "user_message", "text": ctx.prompt})  # as the worker's trial does
        outcome = await agent.run(ctx)
        await box.upload(the_task.tests_dir, "/tests")
        verified = await box.exec(["sh", "/tests/test.sh"], timeout_sec=30)
        shown = await box.exec(["cat", "/logs/verifier/reward.txt"])
        reward = float(shown.stdout) if shown.exit_code == 0 else None
        if inspect is not None:
            await inspect(box)
    finally:
        await box.stop()
    return TrialResult(outcome, reward, trial_dir, (verified, shown))


def make_sandbox(
    the_task: Task, environment: str = "local", *, run_id: str, trial_id: str, state_dir: Path
) -> Sandbox:
    return sandbox_class(environment).for_task(
        the_task, run_id=run_id, trial_id=trial_id, state_dir=state_dir
    )
