"""``make bench-smoke``: every benchmark for a few iterations, so a broken benchmark fails CI.

Each benchmark runs as its own process with ``--smoke`` (a few iterations), from a scratch folder
as cwd (so a benchmark that only works from the repo root fails too), two at a time. The docker
modes run when a Docker engine answers and the test images they need (tests/support/docker_images.py)
can be built; else one line says why they are skipped. The figures are not judged, only that
each benchmark ends with exit code 0; any other end makes this exit 1, naming the benchmark.

    uv run --frozen python bench/smoke.py [--jobs 2] [--no-docker]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

# (script, arguments, needs docker); the slowest first, so that two at a time end together.
BENCHMARKS: list[tuple[str, list[str], bool]] = [
    ("proxy_overhead.py", [], False),
    ("green_overhead.py", [], False),
    ("trial_overhead.py", ["--environment", "docker"], True),
    ("bridge_overhead.py", [], False),
    ("bridge_memory.py", [], False),
    ("host_capacity.py", ["--environment", "docker"], True),
    ("sandbox_primitives.py", ["--backend", "docker"], True),
    ("trial_overhead.py", ["--environment", "local"], False),
    ("trial_overhead.py", ["--environment", "local", "--agent", "oracle", "--regrade"], False),
    ("trial_overhead.py", ["--environment", "docker", "--agent", "oracle", "--regrade"], True),
    ("trial_overhead.py", ["--environment", "local", "--agent", "oracle", "--module"], False),
    ("trial_overhead.py", ["--environment", "docker", "--agent", "oracle", "--module"], True),
    ("host_capacity.py", ["--environment", "local"], False),
    ("leaderboard_queries.py", [], False),
    ("work_product_rules.py", [], False),
    ("cancel_latency.py", [], False),
    ("sandbox_primitives.py", ["--backend", "local"], False),
    ("cluster_scaling.py", [], False),
]


@dataclass
class Outcome:
    name: str
    code: int
    seconds: float
    output: str


def docker_unavailable() -> str | None:
    """Why the docker modes cannot run here, or None when the engine answers and the test
    images (busybox, python) are built."""
    sys.path.insert(0, str(REPO))
    try:
        import docker

        from tests.support.docker_images import ensure_test_image

        client = docker.from_env(timeout=300)
        client.ping()
    except Exception as exc:  # no SDK, no socket, engine down: all mean "no docker here"
        return f"no Docker engine answers ({type(exc).__name__}: {exc})"
    try:
        for image in ("busybox", "python"):
            ensure_test_image(client, image)
    except Exception as exc:  # a missing host package or a failed build
        return f"the test images cannot be built ({type(exc).__name__}: {exc})"
    return None


def run(script: str, args: list[str], cwd: Path) -> Outcome:
    name = " ".join([script, *args])
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    return Outcome(name, done.returncode, time.perf_counter() - began, done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="benchmarks run at once")
    parser.add_argument("--no-docker", action="store_true", help="skip the docker modes")
    args = parser.parse_args()
    began = time.perf_counter()
    why = "--no-docker" if args.no_docker else docker_unavailable()
    chosen = [(script, extra) for script, extra, docker in BENCHMARKS if not (docker and why)]
    if why:
        print(f"bench-smoke: skip the docker modes: {why}", flush=True)
    failed: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-smoke-") as cwd,
        ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool,
    ):
        for outcome in pool.map(lambda job: run(*job, Path(cwd)), chosen):
            verdict = "ok" if outcome.code == 0 else f"FAILED (exit code {outcome.code})"
            print(f"--- {outcome.name}: {verdict} in {outcome.seconds:.1f}s", flush=True)
            print(outcome.output.rstrip(), flush=True)
            if outcome.code != 0:
                failed.append(outcome.name)
    total = time.perf_counter() - began
    if failed:
        print(f"bench-smoke: {len(failed)} failed: {'; '.join(failed)} ({total:.0f}s)")
        return 1
    print(f"bench-smoke: {len(chosen)} benchmarks ran ({total:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
