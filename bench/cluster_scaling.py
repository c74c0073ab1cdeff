"""Scale-out on Ray: what the ``ray`` executor gains across nodes and costs per trial.

On a real Ray cluster on this machine (tests/worker/executors/support.py: head and nodes on 127.0.0.1):

1. sleep-bound trials (the oracle sleeps ``--sleep`` s; local sandbox) on 1 node, then on 2 nodes
   with the same slots per node: wall times and speed-up (target >= 1.8x);
2. ``nop`` trials one at a time, ``inprocess`` (before and after) and ``ray`` (two nodes): the
   median attempt time of each (start to finish, as the run store records it) and the difference
   (target <= +100 ms).

    uv run --frozen python bench/cluster_scaling.py [--trials 8] [--slots 2] [--sleep 10]
        [--nop-trials 15] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the project and its tests package, whatever the cwd

from tests.support import make_task  # noqa: E402
from tests.worker.executors.support import local_cluster  # noqa: E402  (before anything imports ray)
from worker.api import RunRequest, RunTask  # noqa: E402
from worker.core.failures import RetryPolicy  # noqa: E402
from worker.runs.engine import Engine, EngineSettings  # noqa: E402
from worker.runs.meta import ProofSettings  # noqa: E402


def _request(task_id: str, agent: str, n: int) -> RunRequest:
    return RunRequest(
        config={"condition": "with_skills", "num_instances": n},
        task_set="bench",
        task_set_digest="sha256:" + "0" * 64,
        tasks=[RunTask(task_id=task_id)],
        agent=agent,
    )


async def run(
    executor: str, tasks: Path, jobs: Path, task_id: str, agent: str, n: int, concurrency: int
) -> tuple[float, list[float]]:
    """The run's wall time and each attempt's time."""
    engine = Engine(
        EngineSettings(
            jobs_dir=jobs,
            tasks_dir=tasks,
            environment="local",
            concurrency=concurrency,
            retry=RetryPolicy(max_attempts=1),
            proof=ProofSettings.from_env(jobs, {}),
            executor=executor,
        )
    )
    await engine.start(resume=False)
    start = time.perf_counter()
    record = await engine.wait((await engine.submit(_request(task_id, agent, n))).run_id)
    wall = time.perf_counter() - start
    await engine.close()
    times = []
    for trial in record.trials.values():
        assert trial.row is not None and trial.row["score_eligible"], trial.row
        attempt = trial.current
        assert attempt is not None and attempt.finished_at is not None
        times.append(_seconds(attempt.finished_at) - _seconds(attempt.started_at))
    return wall, times


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=8, help="sleep-bound trials per layout")
    parser.add_argument("--slots", type=int, default=2, help="trials at once per node")
    parser.add_argument("--sleep", type=float, default=10.0, help="seconds each oracle sleeps")
    parser.add_argument("--nop-trials", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="a few trials (make bench-smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.trials, args.nop_trials, args.sleep = 2, 1, 0.5
    with tempfile.TemporaryDirectory(prefix="cluster-scaling-") as tmp:
        root = Path(tmp)
        tasks = root / "tasks"
        make_task(
            tasks,
            "sleepy",
            solve_sh=f"#!/bin/sh\nsleep {args.sleep}\necho 42 > /root/answer.txt\n",
        )
        make_task(tasks, "trivial")
        with local_cluster(root / "nodes", [args.slots]) as cluster:
            n = args.trials
            # Warm-ups fill every slot once, so each layout starts with its Ray worker
            # processes up (a node's first worker imports the project: seconds on this host).
            slots = args.slots
            await run("ray", tasks, root / "warm1", "trivial", "nop", slots, slots)
            one, _ = await run("ray", tasks, root / "one", "sleepy", "oracle", n, n)
            cluster.add_node(args.slots)
            await run("ray", tasks, root / "warm2", "trivial", "nop", 2 * slots, 2 * slots)
            two, _ = await run("ray", tasks, root / "two", "sleepy", "oracle", n, n)
            # nop trials one at a time in one run per executor (as a worker runs them: the
            # executor and its cluster connection live across trials), after a warm-up run each
            m = args.nop_trials
            await run("inprocess", tasks, root / "wi", "trivial", "nop", 1, 1)
            await run("ray", tasks, root / "wr", "trivial", "nop", 1, 1)
            _, inproc = await run("inprocess", tasks, root / "i", "trivial", "nop", m, 1)
            _, ray = await run("ray", tasks, root / "r", "trivial", "nop", m, 1)
            _, inproc2 = await run("inprocess", tasks, root / "i2", "trivial", "nop", m, 1)
            inproc += inproc2
    ideal = n * args.sleep / args.slots
    print(
        f"sleep-bound trials          {n} x oracle sleeping {args.sleep:g} s, {args.slots} slots/node"
    )
    print(f"1 node                      {one:8.2f} s   (sleep alone: {ideal:.1f} s)")
    print(f"2 nodes                     {two:8.2f} s")
    print(f"speed-up                    {one / two:8.2f} x (target >= 1.8)")
    med_in = statistics.median(inproc) * 1000
    med_ray = statistics.median(ray) * 1000
    print(f"nop trial, inprocess median {med_in:8.1f} ms ({len(inproc)} trials)")
    print(f"nop trial, ray median       {med_ray:8.1f} ms ({len(ray)} trials)")
    print(f"ray cost per trial          {med_ray - med_in:+8.1f} ms (target <= +100)")


if __name__ == "__main__":
    asyncio.run(main())
