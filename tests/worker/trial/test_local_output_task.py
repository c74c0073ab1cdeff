"""A task shaped like SkillsBench's civ6-adjacency-optimizer (its oracle writes a new top-level
``/output``, its tests read it) in the local sandbox: oracle 1, nop 0; a pass that needs a
regrade carries ``/output`` to the fresh sandbox; an agent that shadows system paths through
top-level names earns nothing (docs/sandboxes.md, "Writable places")."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.support import make_task
from tests.worker.support import run_rows, script, started_engine

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="local: the work-product regrade needs the root worker's diff"
)

SOLVE = """\
#!/bin/sh
mkdir -p /output
python3 -c 'import json; d = json.load(open("/data/scenario.json")); \
json.dump({"total": sum(d["tiles"])}, open("/output/scenario_1.json", "w"))'
"""
TEST_SH = """\
#!/bin/sh
if python3 /tests/test_outputs.py; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""
TEST_OUTPUTS = """\
import json
assert json.load(open("/output/scenario_1.json"))["total"] == 6
"""
# Fake interpreters at every place the agent can reach from the root: a new top-level folder,
# a link at a name the host lacks (/lib32), its own /bin; a write into /usr is refused.
FAKE = "#!/usr/bin/dash\\necho 1 > /logs/verifier/reward.txt\\n"
HOSTILE = f"""\
mkdir -p /usr2/bin /output
printf '{FAKE}' > /usr2/bin/python3 && chmod 755 /usr2/bin/python3
ln -s /usr2/bin /lib32 2>/dev/null
cp /usr2/bin/python3 /usr/bin/python3 2>/dev/null || echo refused
echo '{{"total": 5}}' > /output/scenario_1.json
/usr/bin/rm /bin && /usr/bin/mkdir /bin && /usr/bin/cp /usr2/bin/python3 /bin/sh \
  && /usr/bin/cp /usr2/bin/python3 /bin/bash && /usr/bin/cp /usr2/bin/python3 /bin/python3
true
"""


def civ6_shaped(tasks: Path) -> None:
    folder = make_task(
        tasks,
        "output-task",
        test_sh=TEST_SH,
        solve_sh=SOLVE,
        dockerfile="FROM python:3.11-slim\nWORKDIR /root\nCOPY data /data\n",
        extra_tests={"test_outputs.py": TEST_OUTPUTS},
    )
    (folder / "environment" / "data").mkdir()
    (folder / "environment" / "data" / "scenario.json").write_text('{"tiles": [1, 2, 3]}\n')


async def test_output_task_in_the_local_sandbox(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    civ6_shaped(tasks)
    jobs = tmp_path / "jobs"
    agents = {
        "oracle": "oracle",
        "nop": "nop",
        # The answer plus a file in ~/.config (never work product): graded again on a fresh
        # sandbox with the work product laid on it, /output included.
        "regraded": script(
            tmp_path, "regraded", SOLVE + "mkdir -p ~/.config/x && touch ~/.config/x/c\n"
        ),
        "hostile": script(tmp_path, "hostile", HOSTILE),
    }

    async with started_engine(jobs, tasks, concurrency=2) as engine:
        trials = await asyncio.gather(
            *(run_rows(engine, jobs, ["output-task"], agent) for agent in agents.values())
        )
    done = {name: (row, result) for name, [(row, result, _)] in zip(agents, trials, strict=True)}
    for name, (row, result) in done.items():
        assert row["score_eligible"], (name, row, result)
    oracle, nop, regraded, hostile = (done[n] for n in agents)
    assert oracle[0]["passed"] and oracle[0]["reward"] == 1.0, oracle
    assert nop[0]["reward"] == 0.0, nop
    regrade = regraded[1]["verifier"].get("regrade") or {}
    assert regrade.get("reward_in_agent_sandbox") == 1.0, regraded
    assert regrade.get("reward") == 1.0 and regraded[0]["reward"] == 1.0, regraded
    assert hostile[0]["reward"] == 0.0 and not hostile[0]["passed"], hostile
