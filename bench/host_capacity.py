"""Host capacity: trials per minute of one worker at rising concurrency, and sandbox footprint.

Runs N `nop` trials of a trivial task through the worker engine (in-process) at each concurrency,
and prints the wall time, trials per minute and speed-up over concurrency 1; then starts K idle
sandboxes at once and prints the time to start them all and the memory the engine reports for
them. Figures for docs/scaling.md (what the trial lifecycle itself costs on this host; a real
task's agent and verifier time comes on top).

    uv run --frozen python bench/host_capacity.py --environment docker [--trials 8] \
        [--concurrency 1,2,4] [--idle 8] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The project's packages, the test helpers and bench/ itself, whatever the cwd.
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from trial_overhead import engine_run, make_task  # noqa: E402

from task_sets.task import load_task  # noqa: E402
from worker.sandbox.base import sandbox_class  # noqa: E402


async def idle_sandboxes(
    environment: str, folder: Path, state: Path, k: int
) -> tuple[float, float]:
    """Start k sandboxes at once; return (seconds to start all, MiB the engine reports in use)."""
    task = load_task(folder)
    boxes = [
        sandbox_class(environment).for_task(
            task, run_id="bench", trial_id=f"idle-{i}", state_dir=state / str(i)
        )
        for i in range(k)
    ]
    start = time.perf_counter()
    await asyncio.gather(*(box.start() for box in boxes))
    elapsed = time.perf_counter() - start
    used = 0.0
    if environment == "docker":
        import docker

        client = docker.from_env()
        for box in boxes:
            container = client.containers.get(box._container())
            stats = container.stats(stream=False)
            used += stats.get("memory_stats", {}).get("usage", 0) / 2**20
    await asyncio.gather(*(box.stop() for box in boxes))
    return elapsed, used


def docker_base_dockerfile() -> str:
    """The busybox test image (no registry here), built locally by the tests' helper."""
    import docker

    from tests.support.docker_images import ensure_test_image

    return f"FROM {ensure_test_image(docker.from_env(), 'busybox')}\nWORKDIR /root\n"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--environment", choices=["local", "docker"], default="docker")
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--idle", type=int, default=8)
    parser.add_argument(
        "--smoke", action="store_true", help="2 trials at 1,2 and 2 idle (make bench-smoke)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.trials, args.concurrency, args.idle = 2, "1,2", 2
    levels = [int(x) for x in args.concurrency.split(",")]
    dockerfile = (
        docker_base_dockerfile()
        if args.environment == "docker"
        else "FROM python:3.11-slim\nWORKDIR /root\n"
    )
    with tempfile.TemporaryDirectory(prefix="host-capacity-") as tmp:
        root = Path(tmp)
        tasks = root / "tasks"
        folder = make_task(tasks, dockerfile)
        await engine_run(args.environment, tasks, root / "warm", 1, 1)  # image build, caches
        base_rate = None
        print(f"environment={args.environment} trials={args.trials}")
        for level in levels:
            _, wall = await engine_run(
                args.environment, tasks, root / f"c{level}", args.trials, level
            )
            rate = args.trials / wall * 60
            base_rate = base_rate or rate
            print(
                f"concurrency {level}: wall {wall:6.2f}s  {rate:6.1f} trials/min  "
                f"speed-up x{rate / base_rate:.2f}"
            )
        elapsed, used = await idle_sandboxes(args.environment, folder, root / "idle", args.idle)
        print(
            f"{args.idle} idle sandboxes: started in {elapsed:.2f}s "
            f"({elapsed / args.idle:.2f}s each), engine-reported memory {used:.1f} MiB in total"
        )


if __name__ == "__main__":
    asyncio.run(main())
