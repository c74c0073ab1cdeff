"""The task's resource limits hold in both sandboxes, and hitting one is the agent's failure.

* ``memory_mb = 256`` and an agent that allocates 1 GiB: killed, the row ``oom`` (failed,
  score-eligible, reward 0, not retried, the verifier not run);
* ``cpus = 1`` and four busy loops: about one CPU (the agent measures its children's CPU time);
* an agent that starts 10,000 processes: capped at the worker's process cap, ``pids_limit``,
  while the trial beside it passes;
* ``cpus`` above the host: capped, runs, recorded (result.json, run metadata); the operator's
  overrides likewise;
* the local sandbox's storage watchdog (a worker that may not mount the capped tmpfs; forced
  with ``SKILLSBENCH_SANDBOX_STORAGE=watchdog``): an agent writing three times the cap is
  stopped, ``storage_limit``, while an agent leaving a sparse 1 GiB file passes.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support import TEST_AGENTS
from tests.worker.support import make_engine, make_task, run_payload, script
from worker.api import RunRequest
from worker.core.failures import FAILURE_TABLE, FailureKind, RetryPolicy
from worker.sandbox.base import sandbox_class
from worker.sandbox.resources import ResourceSettings
from worker.viewer.cli import summary

ALLOCATE_1G = """\
python3 -c '
b = bytearray(1 << 30)
for i in range(0, len(b), 4096):
    b[i] = 1
'
echo 42 > /root/answer.txt
"""
# Four busy loops of 3 s each; the CPUs they got: their CPU time over the wall time.
BUSY_LOOPS = """\
python3 -c '
import os, time
start = time.time()
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        end = time.time() + 3
        while time.time() < end:
            pass
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
used = os.times()
cpus = (used.children_user + used.children_system) / (time.time() - start)
open("/logs/agent/cpus.txt", "w").write(str(cpus))
'
echo 42 > /root/answer.txt
"""
# Three times a 16 MiB cap, a MiB at a time; the answer only at the end.
WRITE_48M = """\
i=0
while [ $i -lt 48 ]; do i=$((i+1)); head -c 1048576 /dev/zero > /root/fill$i; sleep 0.1; done
echo 42 > /root/answer.txt
"""
# A 1 GiB file that takes no disk, left while the watchdog measures a few times.
SPARSE_1G = "truncate -s 1G /logs/agent/sparse\nsleep 2\necho 42 > /root/answer.txt\n"
FORK_10000 = "for i in $(seq 10000); do sleep 300 & done\necho 42 > /root/answer.txt\n"


@pytest.fixture(params=["local", "docker"])
def environment(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        from tests.support.docker_images import ensure_test_image

        ensure_test_image(request.getfixturevalue("docker_client"), "python")
    return str(request.param)


def _task(tasks: Path, task_id: str, **environment: Any) -> None:
    folder = make_task(tasks, task_id)
    with (folder / "task.toml").open("a") as toml:
        for key, value in environment.items():
            toml.write(f"{key} = {value}\n")


async def _run(
    tmp_path: Path,
    environment: str,
    agents: dict[str, str],
    resources: ResourceSettings | None = None,
) -> dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """Each task of ``agents`` (task id -> agent spec) in a run of its own, all at once; by task
    id: (row, result.json, the run's worker_meta)."""
    jobs = tmp_path / "jobs"
    engine = make_engine(
        jobs,
        tmp_path / "tasks",
        environment,
        concurrency=len(agents),
        retry=RetryPolicy(max_attempts=3, backoff_base_sec=0.0),
        resources=resources or ResourceSettings(),
    )
    await engine.start(resume=False)
    try:
        runs = {
            task_id: await engine.submit(
                RunRequest.model_validate(run_payload([task_id], agent=agent))
            )
            for task_id, agent in agents.items()
        }
        done = await asyncio.wait_for(
            asyncio.gather(*(engine.wait(run.run_id) for run in runs.values())), 300
        )
    finally:
        await engine.close()
    out = {}
    for task_id, record in zip(runs, done, strict=True):
        (row,) = record.rows()
        result = json.loads(
            (jobs / "runs" / record.run_id / "trials" / row["trial_id"] / "result.json").read_text()
        )
        out[task_id] = (row, result, record.worker_meta)
    return out


def _scored_zero(row: dict[str, Any], result: dict[str, Any], kind: str) -> None:
    assert row["score_eligible"] and not row["passed"] and row["reward"] == 0.0, row
    assert row["infra_failure_type"] is None, row
    assert result["failure"] == kind, result
    assert result["attempt"] == 1, "retried"
    assert "exit_code" not in result["verifier"], "the verifier ran"


def test_the_failure_table_scores_limits_as_the_agents_failures() -> None:
    for kind in (FailureKind.OOM, FailureKind.PIDS_LIMIT, FailureKind.STORAGE_LIMIT):
        meaning = FAILURE_TABLE[kind]
        assert meaning.score_eligible and not meaning.retried and meaning.category is None


async def test_out_of_memory_is_scored_oom(tmp_path: Path, environment: str) -> None:
    _task(tmp_path / "tasks", "small-memory", memory_mb=256)
    results = await _run(
        tmp_path, environment, {"small-memory": script(tmp_path, "alloc", ALLOCATE_1G)}
    )
    row, result, meta = results["small-memory"]
    _scored_zero(row, result, "oom")
    assert result["resources"]["given"]["memory_mb"] == 256
    assert result["resources"]["events"]["oom_kills"] >= 1
    assert meta["resource_limits"]["enforced"]["memory"]
    assert "oom" in result["reason"]
    trial = next((tmp_path / "jobs").glob(f"runs/*/trials/{row['trial_id']}"))
    shown = summary(trial)  # trials show
    assert "Resources: 1 CPU(s), 256 MB, 4096 processes; hit: " in shown and "OOM kill" in shown


async def test_one_cpu_is_about_one_cpu(tmp_path: Path, environment: str) -> None:
    _task(tmp_path / "tasks", "one-cpu", cpus=1)
    results = await _run(tmp_path, environment, {"one-cpu": script(tmp_path, "busy", BUSY_LOOPS)})
    row, result, _ = results["one-cpu"]
    assert row["passed"], result
    assert result["resources"]["given"]["cpus"] == 1
    measured = (tmp_path / "jobs").glob(f"runs/*/trials/{row['trial_id']}/agent/logs/cpus.txt")
    cpus = float(next(measured).read_text())
    assert 0 < cpus < 1.6, f"four busy loops under cpus = 1 got {cpus:.2f} CPUs"


async def test_ten_thousand_processes_are_capped_and_the_trial_beside_passes(
    tmp_path: Path, environment: str
) -> None:
    _task(tmp_path / "tasks", "fork-bomb")
    _task(tmp_path / "tasks", "beside")
    results = await _run(
        tmp_path,
        environment,
        {"fork-bomb": script(tmp_path, "fork", FORK_10000), "beside": "oracle"},
        resources=ResourceSettings(pids_limit=200),
    )
    row, result, meta = results["fork-bomb"]
    _scored_zero(row, result, "pids_limit")
    assert result["resources"]["given"]["pids"] == 200
    assert result["resources"]["events"]["pids_max_hits"] >= 1
    assert meta["resource_limits"]["pids_limit"] == 200
    beside, beside_result, _ = results["beside"]
    assert beside["passed"] and beside_result["failure"] is None, beside_result


async def test_local_storage_watchdog_scores_a_disk_filler_storage_limit_and_sparse_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = 16 << 20
    monkeypatch.setenv("SKILLSBENCH_CAP_SANDBOX_BYTES", str(cap))
    monkeypatch.setenv("SKILLSBENCH_SANDBOX_STORAGE", "watchdog")
    _task(tmp_path / "tasks", "filler")
    _task(tmp_path / "tasks", "sparse")
    results = await _run(
        tmp_path,
        "local",
        {
            "filler": script(tmp_path, "fill", WRITE_48M),
            "sparse": script(tmp_path, "sparse", SPARSE_1G),
        },
    )
    row, result, _ = results["filler"]
    _scored_zero(row, result, "storage_limit")
    events = result["resources"]["events"]
    assert events["storage_hits"] == 1 and cap < events["storage_used_bytes"] < 3 * cap, events
    assert "storage cap" in result["reason"]
    trial = next((tmp_path / "jobs").glob(f"runs/*/trials/{row['trial_id']}"))
    assert "storage cap hit" in summary(trial)  # trials show
    sparse, sparse_result, _ = results["sparse"]
    assert sparse["passed"] and sparse_result["failure"] is None, sparse_result


async def _host_cpus(environment: str) -> float:
    return (await sandbox_class(environment).host_capacity()).cpus


async def test_cpus_above_the_host_are_capped_and_recorded(
    tmp_path: Path, environment: str
) -> None:
    host = await _host_cpus(environment)
    _task(tmp_path / "tasks", "many-cpus", cpus=int(host) + 2)
    results = await _run(tmp_path, environment, {"many-cpus": "oracle"})
    row, result, meta = results["many-cpus"]
    assert row["passed"], result
    resources = result["resources"]
    assert resources["requested"]["cpus"] == int(host) + 2
    assert resources["given"]["cpus"] == host
    (change,) = resources["changes"]
    assert change == {
        "limit": "cpus",
        "from": int(host) + 2,
        "to": host,
        "why": f"host has {host:g} CPUs",
    }
    assert meta["resource_limits"]["changed"]["many-cpus"] == [change]


async def test_overrides_are_applied_capped_and_recorded(tmp_path: Path, environment: str) -> None:
    host = await _host_cpus(environment)
    _task(tmp_path / "tasks", "overridden", cpus=1, memory_mb=512)
    _task(tmp_path / "tasks", "over-host", cpus=1)
    settings = ResourceSettings(override_cpus=0.5, override_memory_mb=300)
    results = await _run(tmp_path, environment, {"overridden": "oracle"}, resources=settings)
    row, result, meta = results["overridden"]
    assert row["passed"], result
    assert result["resources"]["given"] == {"cpus": 0.5, "memory_mb": 300, "pids": 4096}
    assert [c["why"] for c in result["resources"]["changes"]] == ["override", "override"]
    assert meta["resource_limits"]["override_cpus"] == 0.5
    assert meta["resource_limits"]["override_memory_mb"] == 300
    big = ResourceSettings(override_cpus=host + 8)
    (tmp_path / "jobs").rename(tmp_path / "jobs-1")
    row, result, _ = (await _run(tmp_path, environment, {"over-host": "oracle"}, big))["over-host"]
    assert row["passed"], result
    assert result["resources"]["given"]["cpus"] == host
    assert [c["why"] for c in result["resources"]["changes"]] == [
        "override",
        f"host has {host:g} CPUs",
    ]


def test_settings_come_from_the_environment_and_bad_values_are_named() -> None:
    settings = ResourceSettings.from_env(
        {
            "SKILLSBENCH_PIDS_LIMIT": "512",
            "SKILLSBENCH_OVERRIDE_CPUS": "1.5",
            "SKILLSBENCH_OVERRIDE_MEMORY_MB": "2048",
        }
    )
    assert settings == ResourceSettings(512, 1.5, 2048)
    assert ResourceSettings.from_env({}) == ResourceSettings()
    with pytest.raises(ValueError, match="SKILLSBENCH_OVERRIDE_CPUS='two' is not a number"):
        ResourceSettings.from_env({"SKILLSBENCH_OVERRIDE_CPUS": "two"})
    with pytest.raises(ValueError, match="pids_limit must be at least 16"):
        ResourceSettings(pids_limit=3)
    with pytest.raises(ValueError, match="override_cpus must be above 0"):
        ResourceSettings(override_cpus=0)


async def test_an_acp_agent_killed_at_its_memory_limit_is_scored_oom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent process itself dies of the limit (an infrastructure failure by its look: the
    ACP connection closes): the limit counters make it the agent's failure, not a retried one."""
    import sys

    agents = TEST_AGENTS
    monkeypatch.setenv("SKILLSBENCH_AGENTS_DIR", str(agents))
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not system.exists():
        pytest.skip(f"{system} is missing (the sandbox shows the host's system interpreter)")
    site = os.pathsep.join(p for p in sys.path if p.endswith("site-packages"))
    _task(tmp_path / "tasks", "small-memory", memory_mb=256)
    payload = run_payload(["small-memory"], agent="acp:py-acp-agent")
    payload["usage"] = {
        "agent_env": {
            "PY_ACP_AGENT_PYTHON": str(system),
            "PY_ACP_AGENT_PYTHONPATH": site,
            "PY_ACP_AGENT_MODE": "hog",
        }
    }
    jobs = tmp_path / "jobs"
    engine = make_engine(
        jobs,
        tmp_path / "tasks",
        "local",
        concurrency=1,
        retry=RetryPolicy(max_attempts=3, backoff_base_sec=0.0),
    )
    await engine.start(resume=False)
    try:
        run = await engine.submit(RunRequest.model_validate(payload))
        done = await asyncio.wait_for(engine.wait(run.run_id), 300)
    finally:
        await engine.close()
    (row,) = done.rows()
    result = json.loads(
        (jobs / "runs" / run.run_id / "trials" / row["trial_id"] / "result.json").read_text()
    )
    _scored_zero(row, result, "oom")
