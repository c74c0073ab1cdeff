"""Green agent memory under many assessments and large bodies (mock worker, one process).

Starts ``python -m green_agent`` on loopback with no worker configured (the mock worker), then:

1. sends ``--assessments`` assessment requests (``message/send``, the smoke task set) and prints
   the green agent's resident memory (VmRSS) before, after every quarter, and at the end, with how
   many finished tasks it still answers ``tasks/get`` for (the store keeps a bounded number);
2. sends ``--big-mb`` MiB bodies (refused by the request-body limit) and prints the RSS after.

    uv run --frozen python bench/green_memory.py [--assessments 1000] [--big-mb 100]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
REQUEST = {
    "participants": {"agent": "http://127.0.0.1:9/"},
    "config": {"task_set": "smoke", "tasks": "all"},
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def send(index: int) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": index,
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": f"m-{index}",
                "role": "user",
                "parts": [{"kind": "text", "text": json.dumps(REQUEST)}],
            }
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assessments", type=int, default=1000)
    parser.add_argument("--big-mb", type=int, default=100)
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSBENCH_WORKER")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "green_agent", "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(timeout=120) as http:
            deadline = time.monotonic() + 60
            while True:
                try:
                    http.post(
                        url,
                        json={
                            "jsonrpc": "2.0",
                            "id": 0,
                            "method": "tasks/get",
                            "params": {"id": "x"},
                        },
                    )
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            print(f"rss at start: {rss_mib(proc.pid):.1f} MiB")
            ids: list[str] = []
            started = time.perf_counter()
            for index in range(args.assessments):
                answer = http.post(url, json=send(index)).json()
                ids.append(answer["result"]["id"])
                if (index + 1) % max(1, args.assessments // 4) == 0:
                    print(f"rss after {index + 1} assessments: {rss_mib(proc.pid):.1f} MiB")
            elapsed = time.perf_counter() - started
            readable = sum(
                "result"
                in http.post(
                    url,
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "tasks/get",
                        "params": {"id": task_id},
                    },
                ).json()
                for task_id in ids
            )
            print(
                f"{args.assessments} assessments in {elapsed:.1f} s; finished tasks still kept: {readable}"
            )
            body = b" " * (args.big_mb << 20)
            for _ in range(3):
                status = http.post(
                    url, content=body, headers={"content-type": "application/json"}
                ).status_code
            print(
                f"rss after three {args.big_mb} MiB bodies (answered {status}): {rss_mib(proc.pid):.1f} MiB"
            )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
