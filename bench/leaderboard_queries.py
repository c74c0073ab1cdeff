"""Benchmark: the leaderboard query runner versus DuckDB's bare ``read_json_auto``.

Writes N generated results files (default 10,000) and times, for each query, our runner
(glob expansion, per-file shape detection, load, query) against the bare AgentBeats way
(``CREATE TABLE results AS SELECT * FROM read_json_auto(glob, filename = true)`` then the same
query) in the same process, alternating the order. Target: runner / bare <= 1.5.
A second pass makes 10% of the files gateway exports or bare envelopes, which the runner rewrites.

    uv run --frozen python bench/leaderboard_queries.py [--files 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the project's packages, whatever the cwd

import duckdb  # noqa: E402

from leaderboard.query import (  # noqa: E402
    QUERY_NAMES,
    connect,
    load_results,
    query_sql,
    run_query,
)
from leaderboard.rows import FAILURE_CATEGORIES  # noqa: E402

CATEGORIES = ("office-white-collar", "software-engineering", "natural-science", "finance-economics")
DIFFICULTIES = ("easy", "medium", "hard")


def _row(rng: random.Random, task: int) -> dict[str, Any]:
    task_id = f"task-{task:03d}"
    failed = rng.random() < 0.05
    passed = not failed and rng.random() < 0.4
    failure = rng.choice(FAILURE_CATEGORIES) if failed else None
    return {
        "task_id": task_id,
        "trial_id": f"{task_id}__agentbeats__{rng.getrandbits(32):08x}",
        "task_set": "bench",
        "task_set_digest": "sha256:" + "0" * 64,
        "condition": "with_skills",
        "score_eligible": not failed,
        "passed": passed,
        "reward": 1.0 if passed else 0.0,
        "max_score": 1.0,
        "time_used": round(rng.uniform(1, 900), 3),
        "task_digest": "sha256:" + "1" * 64,
        "category": CATEGORIES[task % len(CATEGORIES)],
        "difficulty": DIFFICULTIES[task % len(DIFFICULTIES)],
        "tags": ["bench"],
        "has_skills": True,
        "agent_transport": "a2a",
        "participant_role": "agent",
        "infra_failure_type": failure,
        "error_type": failure,
        "artifact_refs": [],
    }


def generate(folder: Path, count: int, other_shapes: float, seed: int = 1) -> None:
    rng = random.Random(seed)
    agents = [f"019e{rng.getrandbits(16):04x}-0000-7000-8000-{i:012x}" for i in range(50)]
    for index in range(count):
        agent = rng.choice(agents)
        envelope = {
            "status": "completed",
            "participants": {"agent": agent},
            "results": [_row(rng, rng.randrange(90)) for _ in range(5)],
        }
        data: dict[str, Any]
        roll = rng.random()
        if roll < other_shapes / 2:
            data = envelope  # a bare envelope
        elif roll < other_shapes:
            data = {"status": "completed", "results": [envelope]}  # a gateway export
        else:
            data = {"status": "completed", "participants": {"agent": agent}, "results": [envelope]}
        (folder / f"r{index:05d}.json").write_text(json.dumps(data))


@dataclass
class Timing:
    wall: float
    cpu: float

    @classmethod
    def since(cls, wall0: float, cpu0: float) -> Timing:
        return cls(time.perf_counter() - wall0, time.process_time() - cpu0)


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def runner_pass(pattern: str) -> dict[str, Timing]:
    """Our runner: one load, then each query; per query: load + that query."""
    start = _clock()
    con = connect()
    load_results(con, [pattern])
    load = Timing.since(*start)
    out = {}
    for name in QUERY_NAMES:
        q0 = _clock()
        run_query(con, name)
        q = Timing.since(*q0)
        out[name] = Timing(load.wall + q.wall, load.cpu + q.cpu)
    con.close()
    return out


def bare_pass(pattern: str) -> dict[str, Timing]:
    """AgentBeats' way: read_json_auto of the glob, then each query."""
    start = _clock()
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")
    con.execute(
        f"CREATE TABLE results AS SELECT * FROM read_json_auto('{pattern}', filename = true)"
    )
    load = Timing.since(*start)
    out = {}
    for name in QUERY_NAMES:
        q0 = _clock()
        con.execute(query_sql(name)).fetchall()
        q = Timing.since(*q0)
        out[name] = Timing(load.wall + q.wall, load.cpu + q.cpu)
    con.close()
    return out


def bench(folder: Path, label: str, repeat: int) -> None:
    pattern = str(folder / "*.json")
    runs: dict[str, list[dict[str, Timing]]] = {"runner": [], "bare": []}
    for i in range(repeat):
        # Alternate the order so neither side always runs on a warmer cache.
        order = ("bare", "runner") if i % 2 == 0 else ("runner", "bare")
        for side in order:
            runs[side].append((bare_pass if side == "bare" else runner_pass)(pattern))
    print(f"\n{label} (best of {repeat}; each figure = load + that query)")
    print(
        f"{'query':<14} {'runner wall':>11} {'bare wall':>10} {'ratio':>6}   {'runner cpu':>10} {'bare cpu':>9} {'ratio':>6}"
    )
    for name in QUERY_NAMES:
        rw = min(r[name].wall for r in runs["runner"])
        bw = min(r[name].wall for r in runs["bare"])
        rc = min(r[name].cpu for r in runs["runner"])
        bc = min(r[name].cpu for r in runs["bare"])
        print(
            f"{name:<14} {rw:>10.2f}s {bw:>9.2f}s {rw / bw:>6.2f}   {rc:>9.2f}s {bc:>8.2f}s {rc / bc:>6.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="50 files, once (make bench-smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.files, args.repeat = 50, 1
    with tempfile.TemporaryDirectory(prefix="bench-leaderboard-") as tmp:
        published = Path(tmp, "published")
        mixed = Path(tmp, "mixed")
        published.mkdir()
        mixed.mkdir()
        start = time.perf_counter()
        generate(published, args.files, other_shapes=0.0)
        generate(mixed, args.files, other_shapes=0.1)
        print(f"generated 2 x {args.files} files in {time.perf_counter() - start:.1f}s")
        # Warm the page cache once for both folders.
        for folder in (published, mixed):
            for path in folder.iterdir():
                path.read_bytes()
        bench(published, f"{args.files} published-shape files", args.repeat)
        bench(
            mixed,
            f"{args.files} files, 10% gateway exports / bare envelopes (rewritten)",
            args.repeat,
        )


if __name__ == "__main__":
    main()
