"""Overhead of the worker's model proxy per model call.

Against the same fake provider (tests/worker/usage/support.py on loopback), in alternating
rounds so that a change of machine load hits both alike:
- direct: an OpenAI chat-completions POST to the fake provider;
- proxied: the same POST to the model proxy (trial key, litellm ``acompletion`` to the fake,
  record line, price lookup).
Prints both medians (ms) and the added latency per call, for plain and streamed calls.

    uv run --frozen python bench/proxy_overhead.py [--calls 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The project's packages and the test helpers, whatever the cwd.
sys.path.insert(0, str(REPO))  # the project and its tests package, whatever the cwd

import httpx  # noqa: E402

from tests.support import serve  # noqa: E402
from tests.worker.usage.support import FakeProvider  # noqa: E402
from worker.usage.proxy import ModelProxy  # noqa: E402
from worker.usage.session import ModelRoute, UsageCaps  # noqa: E402

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}


async def _time(client: httpx.AsyncClient, url: str, key: str, stream: bool, n: int) -> list[float]:
    out = []
    body = {**BODY, "stream": stream}
    for _ in range(n):
        start = time.perf_counter()
        response = await client.post(url, json=body, headers={"authorization": f"Bearer {key}"})
        await response.aread()
        assert response.status_code == 200, response.text
        out.append((time.perf_counter() - start) * 1000)
    return out


async def main(calls: int, rounds: int) -> None:
    fake = FakeProvider()
    proxy = ModelProxy()
    with tempfile.TemporaryDirectory() as tmp:
        async with serve(fake.app) as fake_url:
            started = time.perf_counter()
            await proxy.start()
            print(f"proxy start (litellm import included): {time.perf_counter() - started:.1f} s")
            route = ModelRoute("openai/bench-model", api_base=f"{fake_url}/v1", api_key="sk-bench")
            session = proxy.open_session("bench", route, UsageCaps(), Path(tmp))
            async with httpx.AsyncClient(timeout=30) as client:
                for stream in (False, True):
                    direct: list[float] = []
                    proxied: list[float] = []
                    await _time(
                        client, f"{proxy.base_url()}/v1/chat/completions", session.key, stream, 3
                    )
                    for _ in range(rounds):
                        direct += await _time(
                            client, f"{fake_url}/v1/chat/completions", "x", stream, calls
                        )
                        proxied += await _time(
                            client,
                            f"{proxy.base_url()}/v1/chat/completions",
                            session.key,
                            stream,
                            calls,
                        )
                    d, p = statistics.median(direct), statistics.median(proxied)
                    kind = "streamed" if stream else "plain"
                    print(
                        f"{kind:8} calls={len(direct)}: direct median {d:.2f} ms, "
                        f"through proxy {p:.2f} ms, added {p - d:.2f} ms per call"
                    )
            await proxy.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a few calls only (make bench-smoke)")
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.rounds = 3, 1
    asyncio.run(main(args.calls, args.rounds))
