"""Trial overhead: what the worker's trial lifecycle costs on top of the bare sandbox.

With the ``nop`` agent and a trivial verifier, runs N trials through the worker engine
(in-process) and, in the same run, N bare sandbox cycles (start, one exec, stop). Prints the
median of each, their ratio (target: <= 2.0 local, <= 1.5 docker), and trials per second at
concurrency 1 and 2. ``--agent oracle`` measures a passing trial instead (its solution writes
the answer): every pass is graded again on a fresh sandbox of the image plus its work product
(worker/trial/regrade.py), so the difference of ``oracle`` and ``nop`` is mostly the regrade's
cost. ``--regrade`` makes the solution also leave a file in HOME's ``.cache``, which is not work
product (a pass that the regrade could change). ``--module`` makes the answer a module the
verifier imports from its working directory: such a pass also has the verifier run once per task
on the image alone, to list what its Python imports there (lifecycle.py, ``_image_shadows``);
the first trial pays it (printed apart), the others find it cached.

    uv run --frozen python bench/trial_overhead.py --environment local|docker [--trials 20] [--smoke]
        [--agent nop|oracle] [--regrade] [--module]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The project's packages and the test helpers, whatever the cwd.
sys.path.insert(0, str(REPO))  # the project and its tests package, whatever the cwd

from task_sets.task import load_task  # noqa: E402
from worker.api import RunRequest, RunTask  # noqa: E402
from worker.core.failures import RetryPolicy  # noqa: E402
from worker.runs.engine import Engine, EngineSettings  # noqa: E402
from worker.runs.meta import ProofSettings  # noqa: E402
from worker.sandbox.base import sandbox_class  # noqa: E402

TASK_TOML = """\
version = "1.0"
[metadata]
category = "bench"
difficulty = "easy"
[agent]
timeout_sec = 60
[verifier]
timeout_sec = 60
[environment]
allow_internet = false
"""
TEST_SH = "#!/bin/sh\necho 0 > /logs/verifier/reward.txt\n"
ORACLE_TEST_SH = (
    "#!/bin/sh\n"
    'if [ "$(cat /root/answer.txt 2>/dev/null)" = 42 ]; then r=1; else r=0; fi\n'
    "echo $r > /logs/verifier/reward.txt\n"
)
SOLVE_SH = "#!/bin/sh\necho 42 > /root/answer.txt\n"
# The answer as a module the verifier imports from its working directory (/root).
MODULE_TEST_SH = (
    "#!/bin/sh\n"
    "cd /root\n"
    "if python3 -c 'import answer_module; assert answer_module.ANSWER == 42'; then r=1; else r=0; fi\n"
    "echo $r > /logs/verifier/reward.txt\n"
)
MODULE_SOLVE_SH = "#!/bin/sh\necho 'ANSWER = 42' > /root/answer_module.py\n"
# A cache of the solution's tools in HOME: not work product, so the pass is graded again.
REGRADE_SOLVE_SH = SOLVE_SH + "mkdir -p /root/.cache/bench && echo x > /root/.cache/bench/x\n"


def make_task(
    root: Path, dockerfile: str, agent: str = "nop", regrade: bool = False, module: bool = False
) -> Path:
    folder = root / "trivial"
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(TASK_TOML)
    (folder / "instruction.md").write_text("Do nothing.\n")
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    test_sh = MODULE_TEST_SH if module else ORACLE_TEST_SH
    (folder / "tests" / "test.sh").write_text(TEST_SH if agent == "nop" else test_sh)
    os.chmod(folder / "tests" / "test.sh", 0o755)
    if agent == "oracle":
        (folder / "solution").mkdir()
        solve_sh = MODULE_SOLVE_SH if module else SOLVE_SH
        if regrade:
            solve_sh += REGRADE_SOLVE_SH.removeprefix(SOLVE_SH)
        (folder / "solution" / "solve.sh").write_text(solve_sh)
        os.chmod(folder / "solution" / "solve.sh", 0o755)
    return folder


async def bare_cycles(environment: str, folder: Path, state: Path, n: int) -> list[float]:
    task = load_task(folder)
    times = []
    for i in range(n):
        sandbox = sandbox_class(environment).for_task(
            task, run_id="bench", trial_id=f"bare-{i}", state_dir=state / f"bare-{i}"
        )
        start = time.perf_counter()
        await sandbox.start()
        try:
            result = await sandbox.exec("true", timeout_sec=60)
            assert result.exit_code == 0, result
        finally:
            await sandbox.stop()
        times.append(time.perf_counter() - start)
    return times


def _request(n: int, agent: str) -> RunRequest:
    return RunRequest(
        config={"condition": "with_skills", "num_instances": n},
        task_set="bench",
        task_set_digest="sha256:" + "0" * 64,
        tasks=[RunTask(task_id="trivial")],
        agent=agent,
    )


async def engine_run(
    environment: str, tasks: Path, jobs: Path, n: int, concurrency: int, agent: str = "nop"
) -> tuple[list[float], float]:
    """Per-trial wall times (attempt start to finish, as the run store records them, so the
    worker's own bookkeeping is included) and the run's wall time."""
    engine = Engine(
        EngineSettings(
            jobs_dir=jobs,
            tasks_dir=tasks,
            environment=environment,
            concurrency=concurrency,
            retry=RetryPolicy(max_attempts=1),
            proof=ProofSettings.from_env(jobs, {}),
        )
    )
    await engine.start(resume=False)
    start = time.perf_counter()
    run = await engine.submit(_request(n, agent))
    await engine.wait(run.run_id)
    wall = time.perf_counter() - start
    for trial in engine.get(run.run_id).trials.values():
        if trial.row is not None and not trial.row["score_eligible"]:
            attempt = trial.current
            error = attempt.error if attempt else None
            raise SystemExit(f"a trial failed: {trial.row['infra_failure_type']}: {error}")
        if agent == "oracle" and trial.row is not None and not trial.row["passed"]:
            raise SystemExit(f"the oracle trial did not pass: {trial.row}")
    times = []
    for trial in engine.get(run.run_id).trials.values():
        attempt = trial.current
        assert attempt is not None and attempt.finished_at is not None
        times.append(_seconds(attempt.finished_at) - _seconds(attempt.started_at))
    return times, wall


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--environment", choices=["local", "docker"], default="local")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument(
        "--dockerfile",
        default=None,
        help="Dockerfile text of the trivial task (default: python:3.11-slim for local, "
        "the busybox test image for docker)",
    )
    parser.add_argument("--smoke", action="store_true", help="1 trial (make bench-smoke)")
    parser.add_argument("--agent", choices=["nop", "oracle"], default="nop")
    parser.add_argument(
        "--regrade",
        action="store_true",
        help="with --agent oracle: the solution also leaves a cache in HOME (a regrade)",
    )
    parser.add_argument(
        "--module",
        action="store_true",
        help="with --agent oracle: the answer is a module the verifier imports (an image listing)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.trials = 1
    if args.module and args.agent != "oracle":
        parser.error("--module needs --agent oracle")
    dockerfile = args.dockerfile or (
        "FROM python:3.11-slim\nWORKDIR /root\n"
        if args.environment == "local"
        else docker_base_dockerfile("python" if args.module else "busybox")
    )
    with tempfile.TemporaryDirectory(prefix="trial-overhead-") as tmp:
        root = Path(tmp)
        tasks = root / "tasks"
        folder = make_task(tasks, dockerfile, args.agent, args.regrade, args.module)
        n = args.trials
        agent = args.agent
        # warm-up (image builds, caches), not measured
        await bare_cycles(args.environment, folder, root / "warm", 1)
        first, _ = await engine_run(args.environment, tasks, root / "jobs-warm", 1, 1, agent)
        # Alternating rounds (one bare cycle, one trial) so that the load of a shared machine
        # weighs on both sides alike.
        bare: list[float] = []
        trial: list[float] = []
        for i in range(n):
            bare += await bare_cycles(args.environment, folder, root / f"bare-{i}", 1)
            trial += (await engine_run(args.environment, tasks, root / f"jobs-{i}", 1, 1, agent))[0]
        _, wall1 = await engine_run(args.environment, tasks, root / "jobs-c1", n, 1, agent)
        _, wall2 = await engine_run(args.environment, tasks, root / "jobs-c2", n, 2, agent)
    bare_med = statistics.median(bare)
    trial_med = statistics.median(trial)
    target = 2.0 if args.environment == "local" else 1.5
    ratio = trial_med / bare_med
    print(f"environment                 {args.environment}")
    print(f"trials per measurement      {n}")
    print(f"bare start+exec+stop median {bare_med * 1000:8.1f} ms")
    kind = " (regraded)" if args.regrade else ""
    kind += " (module)" if args.module else ""
    label = f"{args.agent}{kind} trial median"
    print(f"{label:<28}{trial_med * 1000:8.1f} ms")
    if args.module:
        print(f"{'first trial of the task':<28}{first[0] * 1000:8.1f} ms   (the image listing)")
    print(f"ratio                       {ratio:8.2f}   (target <= {target})")
    print(f"trials/s at concurrency 1   {n / wall1:8.2f}")
    print(f"trials/s at concurrency 2   {n / wall2:8.2f}")


def docker_base_dockerfile(name: str = "busybox") -> str:
    """No registry here: a test image built locally (busybox from the host's busybox-static;
    python for a verifier that imports the answer)."""
    from tests.support.docker_images import ensure_test_image
    from worker.sandbox._docker.client import docker_client

    return f"FROM {ensure_test_image(docker_client(), name)}\nWORKDIR /root\n"


if __name__ == "__main__":
    asyncio.run(main())
