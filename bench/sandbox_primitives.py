"""Median cost of the sandbox primitives a trial uses: start, one exec, stop.

    uv run --frozen python bench/sandbox_primitives.py [--repeat N] [--backend local|docker ...] [--smoke]

For docker it also times the bare SDK floor in the same run: containers.create + start +
exec_run + remove on the same image, with no sandbox code around it. Backends that cannot
run here are reported and skipped. ``measure(backend, task, repeat)`` is importable
(bench/trial_overhead.py reuses it).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The project's packages and the test helpers, whatever the cwd.
sys.path.insert(0, str(REPO))  # the project and its tests package, whatever the cwd

from task_sets.task import Task, load_task  # noqa: E402
from worker.sandbox import SandboxError, sandbox_class  # noqa: E402

DOCKERFILE = "FROM python:3.11-slim\nWORKDIR /app\nCOPY data/ ./data/\n"


def make_task(root: Path) -> Task:
    folder = root / "bench-task"
    (folder / "environment" / "data").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(
        "[agent]\ntimeout_sec = 60\n[environment]\nallow_internet = false\n"
    )
    (folder / "instruction.md").write_text("Nothing to do.\n")
    (folder / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (folder / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (folder / "environment" / "data" / "input.txt").write_text("x\n")
    return load_task(folder)


async def measure(backend: str, task: Task, repeat: int, state_root: Path) -> dict[str, float]:
    """Median seconds of start, exec("true") and stop over ``repeat`` sandboxes (after a warm-up)."""
    cls = sandbox_class(backend)
    times: dict[str, list[float]] = {"start": [], "exec": [], "stop": []}
    for i in range(repeat + 1):
        state_dir = state_root / f"{backend}-{i}"
        state_dir.mkdir(parents=True, exist_ok=True)
        sandbox = cls.for_task(task, run_id="bench", trial_id=f"bench-{i}", state_dir=state_dir)
        t0 = time.perf_counter()
        await sandbox.start()
        t1 = time.perf_counter()
        result = await sandbox.exec("true")
        t2 = time.perf_counter()
        await sandbox.stop()
        t3 = time.perf_counter()
        if result.exit_code != 0:
            raise SandboxError(f"{backend}: exec failed: {result.stderr}")
        if i == 0:
            continue  # warm-up: image build, first bwrap probe
        times["start"].append(t1 - t0)
        times["exec"].append(t2 - t1)
        times["stop"].append(t3 - t2)
    medians = {name: statistics.median(values) for name, values in times.items()}
    medians["total"] = sum(medians.values())
    return medians


async def measure_stdio(
    backend: str, task: Task, repeat: int, state_root: Path
) -> dict[str, float]:
    """Median seconds to open a streaming process, echo one line through it and end it.

    For docker, also the same through a ``docker exec -i`` CLI subprocess (the alternative).
    """
    state_dir = state_root / f"{backend}-stdio"
    state_dir.mkdir(parents=True, exist_ok=True)
    sandbox = sandbox_class(backend).for_task(
        task, run_id="bench", trial_id="bench-stdio", state_dir=state_dir
    )
    await sandbox.start()
    figures: dict[str, list[float]] = {"open_process": []}
    try:
        for _ in range(repeat + 1):
            t0 = time.perf_counter()
            proc = await sandbox.open_process(["cat"])
            proc.stdin.write(b"ping\n")
            await proc.stdin.drain()
            assert await proc.stdout.readline() == b"ping\n"
            proc.stdin.close()
            await proc.wait()
            figures["open_process"].append(time.perf_counter() - t0)
        container = getattr(sandbox, "_container_id", None)
        if backend == "docker" and container and shutil.which("docker"):
            figures["docker_exec_cli"] = []
            for _ in range(repeat + 1):
                t0 = time.perf_counter()
                cli = await asyncio.create_subprocess_exec(
                    "docker",
                    "exec",
                    "-i",
                    container,
                    "cat",
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                )
                assert cli.stdin is not None and cli.stdout is not None
                cli.stdin.write(b"ping\n")
                await cli.stdin.drain()
                assert await cli.stdout.readline() == b"ping\n"
                cli.stdin.close()
                await cli.wait()
                figures["docker_exec_cli"].append(time.perf_counter() - t0)
    finally:
        await sandbox.stop()
    return {name: statistics.median(values[1:]) for name, values in figures.items()}


def measure_bare_docker(client: Any, image: str, repeat: int) -> dict[str, float]:
    """The SDK floor: create, start, one exec_run, remove (force) — no sandbox code."""
    times: dict[str, list[float]] = {"start": [], "exec": [], "stop": []}
    for i in range(repeat + 1):
        t0 = time.perf_counter()
        container = client.containers.create(
            image, ["sleep", "infinity"], network_mode="none", init=True
        )
        container.start()
        t1 = time.perf_counter()
        container.exec_run(["true"])
        t2 = time.perf_counter()
        container.remove(force=True)
        t3 = time.perf_counter()
        if i:
            times["start"].append(t1 - t0)
            times["exec"].append(t2 - t1)
            times["stop"].append(t3 - t2)
    medians = {name: statistics.median(values) for name, values in times.items()}
    medians["total"] = sum(medians.values())
    return medians


def show(name: str, figures: dict[str, float]) -> None:
    cells = "  ".join(f"{k}={v * 1000:8.1f} ms" for k, v in figures.items())
    print(f"{name:<22} {cells}", flush=True)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--backend", action="append", choices=["local", "docker"])
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="1 repeat; a backend that cannot run is an error, not a skip (make bench-smoke)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    backends = args.backend or ["local", "docker"]
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        root = Path(tmp)
        task = make_task(root)
        print(f"median of {args.repeat} runs (after one warm-up)")
        for backend in backends:
            if backend == "docker":
                try:
                    import docker

                    from tests.support.docker_images import ensure_test_image

                    client = docker.from_env(timeout=300)
                    client.ping()
                    image = ensure_test_image(client, "python")
                except Exception as exc:
                    if args.smoke:
                        raise
                    print(f"docker: skipped ({exc})")
                    continue
            try:
                show(
                    f"{backend} sandbox", await measure(backend, task, args.repeat, root / "state")
                )
            except SandboxError as exc:
                if args.smoke:
                    raise
                print(f"{backend}: skipped ({exc})")
                continue
            if backend == "docker":
                show(
                    "docker bare SDK",
                    await asyncio.to_thread(measure_bare_docker, client, image, args.repeat),
                )
            show(
                f"{backend} stdio echo",
                await measure_stdio(backend, task, args.repeat, root / "state"),
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
