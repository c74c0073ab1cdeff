"""Green agent overhead: what the green agent adds on top of the worker's own run time.

Measures, with the green agent, the worker and a placeholder participant in separate processes
on loopback:

1. ``card``: time from starting ``python -m green_agent`` to its agent card being served (median of
   several starts).
2. ``overhead``: the end-to-end gateway-style assessment time (card fetch, streaming request,
   envelope parsed) minus the worker's own run time (its ``created_at`` -> ``updated_at`` at the
   end), for the ``examples`` task set. Target: under 100 ms median, i.e. no polling delay.

The worker is ``--worker-url`` when given; else the real worker (``skillsbench-agentbeats worker``);
with ``--fake``, the small fake worker of the tests (trials of ``--trial-sec``).

    uv run --frozen python bench/green_overhead.py [--runs 10] [--starts 5] [--worker-url URL] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from green_agent.gateway import run_assessment  # noqa: E402
from green_agent.settings import WORKER_URL  # noqa: E402

CONFIG = {"task_set": "examples", "tasks": "all"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, timeout: float = 60.0, interval: float = 0.005) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return time.perf_counter() - start
        except httpx.HTTPError:
            pass
        time.sleep(interval)
    raise RuntimeError(f"{url} not ready after {timeout}s")


def spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


BARE_SERVER = (
    "import sys, uvicorn; from starlette.applications import Starlette;"
    "from starlette.responses import JSONResponse; from starlette.routing import Route;"
    "app = Starlette(routes=[Route('/.well-known/agent-card.json', lambda r: JSONResponse({}))]);"
    "uvicorn.run(app, host='127.0.0.1', port=int(sys.argv[1]), log_level='warning')"
)


def card_start_times(starts: int, bare: bool = False) -> list[float]:
    """Process start -> card served, for ``python -m green_agent`` (or a bare uvicorn app)."""
    times = []
    for _ in range(starts):
        port = free_port()
        began = time.perf_counter()
        args = (
            ["-c", BARE_SERVER, str(port)] if bare else ["-m", "green_agent", "--port", str(port)]
        )
        proc = spawn([sys.executable, *args])
        try:
            wait_http(f"http://127.0.0.1:{port}/.well-known/agent-card.json", interval=0.002)
            times.append(time.perf_counter() - began)
        finally:
            stop(proc)
    return times


def start_worker(
    args: argparse.Namespace, jobs: Path
) -> tuple[str, subprocess.Popen[bytes] | None, str]:
    if args.worker_url:
        return args.worker_url.rstrip("/"), None, "given"
    port = free_port()
    if not args.fake:
        cmd = [
            sys.executable,
            "-m",
            "skillsbench_agentbeats",
            "worker",
            "--port",
            str(port),
            "--jobs-dir",
            str(jobs),
        ]
        kind = "real worker"
    else:
        cmd = [
            sys.executable,
            str(REPO / "tests" / "green_agent" / "fake_worker.py"),
            "--port",
            str(port),
            "--state-dir",
            str(jobs),
            "--trial-sec",
            str(args.trial_sec),
        ]
        kind = f"fake worker (trials of {args.trial_sec}s)"
    proc = spawn(cmd)
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/healthz")
    return url, proc, kind


def start_purple() -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    proc = spawn([sys.executable, "-m", "purple_agent.placeholder", "--port", str(port)])
    url = f"http://127.0.0.1:{port}/"
    wait_http(url + ".well-known/agent-card.json")
    return url, proc


RUN_ID = re.compile(r"Worker run (\S+) started")


def worker_run_seconds(worker_url: str, run_id: str) -> float:
    """The worker's own time for one run (``created_at`` -> ``updated_at`` once it ended)."""
    status = httpx.get(f"{worker_url}/runs/{run_id}", timeout=10).json()
    created = datetime.fromisoformat(status["created_at"]).timestamp()
    updated = datetime.fromisoformat(status["updated_at"]).timestamp()
    return updated - created


async def one_assessment(green_url: str, purple_url: str) -> tuple[float, str]:
    run_ids: list[str] = []

    def progress(line: str) -> None:
        found = RUN_ID.search(line)
        if found:
            run_ids.append(found.group(1))

    began = time.perf_counter()
    export = await run_assessment(green_url, {"agent": purple_url}, CONFIG, progress)
    elapsed = time.perf_counter() - began
    if export["status"] != "completed" or len(export["results"]) != 1 or not run_ids:
        raise RuntimeError(f"assessment did not complete: {export}")
    return elapsed, run_ids[0]


def loopback_round_trip(url: str, n: int = 20) -> float:
    """Median time of a bare GET of the card: how slow loopback HTTP is on this machine now."""
    times = []
    with httpx.Client() as client:
        for _ in range(n):
            began = time.perf_counter()
            client.get(url)
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--worker-url", default=None)
    parser.add_argument(
        "--fake",
        action="store_true",
        help="use the fake worker of the tests instead of the real one",
    )
    parser.add_argument("--trial-sec", type=float, default=0.2)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="1 start, 1 run, on the fake worker with short trials (make bench-smoke)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.starts, args.runs, args.trial_sec = 1, 1, 0.05
        args.fake = args.worker_url is None

    cards = card_start_times(args.starts)
    bare = card_start_times(args.starts, bare=True)
    print(
        f"card served after start: median {statistics.median(cards) * 1000:.0f} ms "
        f"(min {min(cards) * 1000:.0f}, max {max(cards) * 1000:.0f}, n={len(cards)}; target < 2 s)"
    )
    print(
        f"  calibration, bare uvicorn+starlette app: median "
        f"{statistics.median(bare) * 1000:.0f} ms (min {min(bare) * 1000:.0f})"
    )

    with tempfile.TemporaryDirectory() as tmp:
        worker_url, worker_proc, kind = start_worker(args, Path(tmp) / "jobs")
        purple_url, purple_proc = start_purple()
        green_port = free_port()
        green = spawn(
            [sys.executable, "-m", "green_agent", "--port", str(green_port)],
            env={WORKER_URL: worker_url},
        )
        green_url = f"http://127.0.0.1:{green_port}/"
        try:
            wait_http(green_url + ".well-known/agent-card.json")
            round_trip = loopback_round_trip(green_url + ".well-known/agent-card.json")
            asyncio.run(one_assessment(green_url, purple_url))  # warm-up: first request waits
            overheads, totals, worker_times = [], [], []  # for the deferred a2a-sdk import
            for _ in range(args.runs):
                total, run_id = asyncio.run(one_assessment(green_url, purple_url))
                own = worker_run_seconds(worker_url, run_id)
                totals.append(total)
                worker_times.append(own)
                overheads.append(total - own)
        finally:
            for proc in (green, purple_proc, worker_proc):
                if proc is not None:
                    stop(proc)
    print(f"bare loopback GET of the card (calibration): median {round_trip * 1000:.1f} ms")
    print(f"worker: {kind}; task set {CONFIG['task_set']}; {args.runs} assessments")
    print(f"end-to-end assess: median {statistics.median(totals) * 1000:.0f} ms")
    print(f"worker's own run:  median {statistics.median(worker_times) * 1000:.0f} ms")
    print(
        f"green overhead:    median {statistics.median(overheads) * 1000:.1f} ms "
        f"(min {min(overheads) * 1000:.1f}, max {max(overheads) * 1000:.1f}; target < 100 ms)"
    )


if __name__ == "__main__":
    main()
