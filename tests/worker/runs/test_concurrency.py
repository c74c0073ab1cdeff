"""The worker's concurrency bound: with ``concurrency=N``, N trials run at once, never N+1.

Each trial's agent (an in-process agent resolved by a scoped fallback resolver) enters a gate and
stays there until the test lets it go, so the test decides when a slot frees. Whenever the gate
is full (N agents, or all the trials left), the test reads the engine's own run record: at most N
trials are ``running`` (the state a trial takes as soon as it holds a slot, before its sandbox
starts; one let out earlier may still be verifying) and the unfinished others ``queued``; the
first time, exactly N. Without the bound, the trials started together would all be ``running``
by then, since every one of them is scheduled before the first agent can reach the gate. No sleeps, no
timing margins: the test waits for conditions; a timeout only guards against a hang.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.worker.support import make_engine, make_task
from worker.agents.base import Agent, AgentContext, AgentOutcome
from worker.agents.registry import resolver_added
from worker.api import RunRequest, RunTask
from worker.core.failures import RetryPolicy

SPEC = "concurrency-gate-agent"
HANG_GUARD_SEC = 300


class Gate:
    """Where the agents wait; ``changed`` wakes the test on every entry and exit."""

    def __init__(self) -> None:
        self.changed = asyncio.Condition()
        self.inside: list[str] = []  # trial directories of the agents in the gate, in entry order
        self.entered = 0
        self.most_inside = 0
        self.open: set[str] = set()
        self.all_open = False

    async def wait_for(self, predicate: object) -> None:
        assert callable(predicate)
        async with self.changed:
            await self.changed.wait_for(predicate)

    async def let_out(self, trial: str) -> None:
        async with self.changed:
            self.open.add(trial)
            self.changed.notify_all()

    async def let_all_out(self) -> None:
        async with self.changed:
            self.all_open = True
            self.changed.notify_all()


def gate_agent(gate: Gate) -> type[Agent]:
    class GateAgent(Agent):
        kind = "nop"  # the row's agent_transport; rows accept the built-in kinds

        async def run(self, ctx: AgentContext) -> AgentOutcome:
            me = str(ctx.trial_dir)
            async with gate.changed:
                gate.inside.append(me)
                gate.entered += 1
                gate.most_inside = max(gate.most_inside, len(gate.inside))
                gate.changed.notify_all()
                await gate.changed.wait_for(lambda: me in gate.open or gate.all_open)
                gate.inside.remove(me)
                gate.changed.notify_all()
            return AgentOutcome()

    return GateAgent


@pytest.mark.parametrize("concurrency", [1, 2, 3])
async def test_n_trials_run_at_once_never_n_plus_one(tmp_path: Path, concurrency: int) -> None:
    trials = 2 * concurrency + 1
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    make_task(tasks, "gate")
    jobs = tmp_path / "jobs"
    engine = make_engine(
        jobs, tasks, "local", concurrency=concurrency, retry=RetryPolicy(max_attempts=1)
    )
    gate = Gate()
    agent_class = gate_agent(gate)

    def resolver(spec: str) -> Agent | None:
        return agent_class(spec) if spec == SPEC else None

    with resolver_added(resolver):
        await engine.start(resume=False)
        try:
            run = await engine.submit(
                RunRequest(
                    config={"condition": "with_skills", "num_instances": trials},
                    task_set="worker-tests",
                    task_set_digest="sha256:" + "0" * 64,
                    tasks=[RunTask(task_id="gate")],
                    agent=SPEC,
                )
            )
            async with asyncio.timeout(HANG_GUARD_SEC):
                for released in range(trials):
                    expected = min(concurrency, trials - released)
                    await gate.wait_for(lambda: len(gate.inside) == expected)  # noqa: B023
                    states = [t.state for t in engine.get(run.run_id).trials.values()]
                    running = states.count("running")
                    # A trial let out earlier may still be verifying (holding its slot).
                    assert expected <= running <= concurrency, states
                    assert states.count("queued") == trials - states.count("finished") - running
                    if released == 0:  # N at once, the rest wait for a slot
                        assert running == concurrency, states
                    assert gate.most_inside == concurrency
                    # Free one slot: the earliest agent leaves; its trial verifies and ends.
                    leaving = gate.inside[0]
                    await gate.let_out(leaving)
                    await gate.wait_for(lambda: leaving not in gate.inside)  # noqa: B023
                await engine.wait(run.run_id)
        finally:
            await gate.let_all_out()  # a failed check must not leave agents waiting
            await engine.close()
    record = engine.get(run.run_id)
    assert record.status == "completed"
    assert gate.entered == trials
    assert gate.most_inside == concurrency
    assert all(t.state == "finished" and t.row is not None for t in record.trials.values())
    assert all(t.row is not None and not t.row["passed"] for t in record.trials.values())
