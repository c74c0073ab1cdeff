"""Cancel latency: how long ``POST /runs/{id}/cancel`` takes on a big queued run, and the longest
time the worker's event loop is blocked meanwhile.

A run of N trials (tasks x 100 instances) on the real worker app (in-process, local sandbox,
concurrency 1) whose agent sleeps: one trial runs, the others are queued. The cancel answers
when every trial has its ``worker_cancelled`` row. A probe coroutine wakes every 5 ms; its
longest lateness is the longest event-loop stall (targets at 10,000 trials: cancel < 1 s,
stall < 100 ms). Submitting the run and reading its status are timed too. Wall-clock figures
follow the host's load (printed at the end); the CPU time of the cancel much less so.

    uv run --frozen python bench/cancel_latency.py [--trials 1000 10000] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The project's packages and the test helpers, whatever the cwd.
sys.path.insert(0, str(REPO))  # the project and its tests package, whatever the cwd

import httpx  # noqa: E402

from tests.support import make_task  # noqa: E402
from worker.runs.engine import Engine, EngineSettings  # noqa: E402
from worker.runs.meta import ProofSettings  # noqa: E402
from worker.runs.store import TRIALS_PER_STEP  # noqa: E402
from worker.service.app import create_app  # noqa: E402

INSTANCES = 100
TICK_SEC = 0.005


class StallProbe:
    """Wakes every TICK_SEC; ``longest`` is the worst lateness seen (the loop was blocked, or the
    process got no CPU on a loaded host); ``longest_cpu`` the most CPU time the event loop's
    thread used between two wake-ups (blocking by the worker's own code, whatever the load)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.longest_cpu = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + TICK_SEC
            cpu = time.thread_time()
            await asyncio.sleep(TICK_SEC)
            self.longest = max(self.longest, loop.time() - due)
            self.longest_cpu = max(self.longest_cpu, time.thread_time() - cpu)

    async def __aenter__(self) -> StallProbe:
        self.longest = self.longest_cpu = 0.0
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(2 * TICK_SEC)  # the probe is waiting before the measured call
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.sleep(4 * TICK_SEC)  # the probe sees a stall that ends the call
        assert self._task is not None
        self._task.cancel()


async def measure(root: Path, trials: int) -> dict[str, Any]:
    n_tasks = max(1, trials // INSTANCES)
    instances = trials // n_tasks
    tasks_dir, jobs = root / "tasks", root / "jobs"
    tasks_dir.mkdir()
    task_ids = [f"bench-{i:04d}" for i in range(n_tasks)]
    for task_id in task_ids:
        make_task(tasks_dir, task_id)
    agent = root / "sleep.sh"
    agent.write_text("sleep 600\n")
    engine = Engine(
        EngineSettings(
            jobs_dir=jobs,
            tasks_dir=tasks_dir,
            environment="local",
            concurrency=1,
            proof=ProofSettings.from_env(jobs, {}),
        )
    )
    await engine.start()
    app = create_app(engine, manage_engine=False, script_dir=root)
    payload = {
        "config": {"task_set": "bench", "condition": "with_skills", "num_instances": instances},
        "task_set": "bench",
        "task_set_digest": "sha256:" + "0" * 64,
        "tasks": [{"task_id": t, "category": "bench", "tags": ["bench"]} for t in task_ids],
        "agent": f"script:{agent}",
    }
    figures: dict[str, Any] = {"trials": n_tasks * instances}
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as http:
            async with StallProbe() as probe:
                started = time.perf_counter()
                response = await http.post("/runs", json=payload, timeout=300)
                figures["submit_sec"] = time.perf_counter() - started
                figures["submit_stall_ms"] = probe.longest * 1000
            assert response.status_code == 201, response.text
            run_id = response.json()["run_id"]
            while True:  # until the one trial the concurrency allows is running
                status = (await http.get(f"/runs/{run_id}", timeout=300)).json()
                if status["progress"]["running"] == 1:
                    break
                await asyncio.sleep(0.05)
            # What a trial's state change costs the store (a journal line) and the event loop's
            # CPU for it, against a full save of the run (what every change cost before).
            record = engine.get(run_id)
            trial = next(iter(record.trials.values()))
            await engine.store.save_trial(record, trial)  # the first in the process warms up
            started, cpu = time.perf_counter(), time.thread_time()
            await engine.store.save_trial(record, trial)
            figures["trial_save_ms"] = (time.perf_counter() - started) * 1000
            figures["trial_save_cpu_ms"] = (time.thread_time() - cpu) * 1000
            cpu = time.thread_time()
            await engine.store.save(record)
            figures["full_save_cpu_ms"] = (time.thread_time() - cpu) * 1000
            # The client shares the loop (ASGI transport): it decodes the answers afterwards.
            async with StallProbe() as probe:
                started = time.perf_counter()
                await http.get(f"/runs/{run_id}", timeout=300)
                figures["status_sec"] = time.perf_counter() - started
            figures["status_stall_ms"] = probe.longest * 1000
            async with StallProbe() as probe:
                started, cpu = time.perf_counter(), time.process_time()
                cancelled = await http.post(f"/runs/{run_id}/cancel", timeout=300)
                figures["cancel_sec"] = time.perf_counter() - started
                figures["cancel_cpu_sec"] = time.process_time() - cpu
            figures["cancel_stall_ms"] = probe.longest * 1000
            figures["cancel_stall_cpu_ms"] = probe.longest_cpu * 1000
            async with StallProbe() as probe:
                started = time.perf_counter()
                final = await http.get(f"/runs/{run_id}", timeout=300)
                figures["final_status_sec"] = time.perf_counter() - started
            figures["final_status_stall_ms"] = probe.longest * 1000
            figures["final_status_stall_cpu_ms"] = probe.longest_cpu * 1000
            assert final.status_code == 200
            doc = cancelled.json()
            assert cancelled.status_code == 200, cancelled.text
            assert doc["status"] == "cancelled", doc["status"]
            assert len(doc["rows"]) == figures["trials"], len(doc["rows"])
    finally:
        await engine.close()
    return figures


async def main_async(sizes: list[int]) -> None:
    print(
        f"{'trials':>7} {'submit s':>9} {'stall ms':>9} {'status s':>9} {'stall ms':>9} "
        f"{'cancel s':>9} {'cpu s':>6} {'stall ms':>9} {'cpu ms':>7} {'status s':>9} {'stall ms':>9}"
        f" {'cpu ms':>7}"
    )
    print(f"{'':>7} {'':>19} {'(queued run)':>19} {'':>34} {'(all rows)':>19}")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="cancel-bench-") as scratch:
            f = await measure(Path(scratch), size)
        print(
            f"{f['trials']:>7} {f['submit_sec']:>9.3f} {f['submit_stall_ms']:>9.1f} "
            f"{f['status_sec']:>9.3f} {f['status_stall_ms']:>9.1f} "
            f"{f['cancel_sec']:>9.3f} {f['cancel_cpu_sec']:>6.2f} {f['cancel_stall_ms']:>9.1f} "
            f"{f['cancel_stall_cpu_ms']:>7.1f} "
            f"{f['final_status_sec']:>9.3f} {f['final_status_stall_ms']:>9.1f} "
            f"{f['final_status_stall_cpu_ms']:>7.1f}",
            flush=True,
        )
        print(
            f"{'':>7} a trial's state change: {f['trial_save_ms']:.1f} ms, event-loop CPU "
            f"{f['trial_save_cpu_ms']:.2f} ms (a full save of the run: event-loop CPU "
            f"{f['full_save_cpu_ms']:.1f} ms, in steps of {TRIALS_PER_STEP} trials)",
            flush=True,
        )
    print("targets at 10,000 trials: cancel < 1 s, longest stall during cancel < 100 ms")
    print(
        "(cpu s: the process's CPU time during the cancel, all threads; cpu ms: the most CPU the "
        f"event loop's thread used between two 5 ms probe ticks; load now {_load()})"
    )


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--smoke", action="store_true", help="one small run (CI)")
    args = parser.parse_args()
    asyncio.run(main_async([200] if args.smoke else args.trials))


if __name__ == "__main__":
    main()
