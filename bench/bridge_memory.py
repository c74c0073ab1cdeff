"""Memory of the a2a bridge while a purple agent floods it.

For each flooding mode of the test peer (tests/worker/bridge/faulty_peer.py: endless artifact
chunks, one endless streamed event, one endless JSON body), runs one trial of the
``write-answer`` test task through the bridge in the local sandbox and prints the bridge
process's peak resident memory (VmHWM, read from /proc while it runs), how the trial ended and
how long that took. Without a bound the first mode grew past 400 MB in about a minute.

    uv run --frozen python bench/bridge_memory.py [--modes flood-artifacts,huge-event,huge-body] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The project's packages and the test helpers, whatever the cwd.
sys.path.insert(0, str(REPO))  # the project and its tests package, whatever the cwd

from tests.worker.support import run_trial, served  # noqa: E402
from worker.agents.a2a import A2AAgent  # noqa: E402

PEER = REPO / "tests" / "worker" / "bridge" / "faulty_peer.py"
MODES = ("flood-artifacts", "huge-event", "huge-body")


def bridge_pid(trial_dir: Path) -> int | None:
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"worker.bridge" in argv and str(trial_dir).encode() in argv:
            return int(proc.name)
    return None


def peak_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def one(mode: str, timeout_sec: float) -> None:
    argv = lambda port: [sys.executable, str(PEER), str(port), mode]  # noqa: E731
    with (
        tempfile.TemporaryDirectory(prefix="bridge-memory-") as scratch,
        served(argv, {"PATH": "/usr/bin:/bin"}) as url,
    ):
        tmp = Path(scratch)
        started = time.perf_counter()
        trial = asyncio.create_task(run_trial(A2AAgent(f"a2a:{url}"), tmp, timeout_sec=timeout_sec))
        peak, pid = 0.0, None
        while not trial.done():
            pid = pid or bridge_pid(tmp / "trial")
            peak = max(peak, peak_mib(pid) if pid else 0.0)
            await asyncio.wait({trial}, timeout=0.05)
        result = trial.result()
        elapsed = time.perf_counter() - started
    failure = result.outcome.failure.value if result.outcome.failure else "none"
    print(f"{mode:16} bridge peak RSS {peak:6.1f} MiB  {failure} after {elapsed:.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--timeout-sec", type=float, default=300.0, help="the trial's deadline")
    parser.add_argument("--smoke", action="store_true", help="one mode (huge-body) only")
    args = parser.parse_args()
    modes = ["huge-body"] if args.smoke else args.modes.split(",")
    for mode in modes:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r}: choose from {', '.join(MODES)}")
        asyncio.run(one(mode, args.timeout_sec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
