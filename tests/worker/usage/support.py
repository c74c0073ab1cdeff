"""Run one trial of a manifest agent through the worker's engine (local bubblewrap sandbox) with
the model proxy in front of a fake provider on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support import make_task
from tests.worker.support import started_engine
from worker.api import RunRequest, RunTask, UsageSettings

AGENTS_DIR = Path(__file__).resolve().parent / "agents"  # the model-calling test agents
ENVIRONMENT = "local"  # the worker's bubblewrap sandbox
DIGEST = "sha256:" + "0" * 64
REAL_KEY = "sk-real-provider-key-0123456789abcdef"


@dataclass
class Trial:
    dir: Path
    result: dict[str, Any]
    timing: dict[str, Any]
    config: dict[str, Any]
    run_dir: Path

    def calls(self) -> list[dict[str, Any]]:
        path = self.dir / "trajectory" / "llm_trajectory.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    @property
    def usage(self) -> dict[str, Any]:
        return dict(self.result["agent_result"])


def agent_env(**extra: str) -> dict[str, str]:
    """A Python with `acp` and `httpx`, as seen from inside a sandbox: the host's system
    interpreter of this version with this venv's packages (lent to the sandbox); the venv's own
    interpreter and a pyenv one live in folders the sandbox does not show."""
    env = {"MODEL_AGENT_PYTHON": sys.executable}
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if system.exists():
        env["MODEL_AGENT_PYTHON"] = str(system)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p.endswith("site-packages"))
    return {**env, **extra}


async def run_one(
    tmp: Path,
    agent: str = "model-acp-agent",
    usage: UsageSettings | None = None,
    *,
    internet: bool = False,
    environment: str = ENVIRONMENT,
) -> Trial:
    tasks = tmp / "tasks"
    if not tasks.exists():
        tasks.mkdir(parents=True)
        # A generous agent time: a busy host (CI beside other suites) must not turn a slow
        # agent start into a failed trial; these tests check what was recorded, not speed.
        make_task(tasks, "answer-42", internet=internet, agent_timeout=300)
    jobs = tmp / "jobs"
    request = RunRequest(
        config={"task_set": "usage-tests", "condition": "with_skills"},
        task_set="usage-tests",
        task_set_digest=DIGEST,
        tasks=[RunTask(task_id="answer-42", category="testing", difficulty="easy")],
        agent=agent,
        usage=usage,
    )
    async with started_engine(jobs, tasks, environment, env={}) as engine:
        record = await engine.submit(request)
        await asyncio.wait_for(engine.wait(record.run_id), 120)
    (trial_dir,) = sorted((jobs / "runs").glob("*/trials/*"))

    def load(name: str) -> dict[str, Any]:
        return dict(json.loads((trial_dir / name).read_text()))

    return Trial(
        trial_dir, load("result.json"), load("timing.json"), load("config.json"), jobs / "runs"
    )


# A fake model provider on loopback: OpenAI chat completions (plain and streamed), OpenAI
# responses and Anthropic messages (plain and streamed), answering with scripted text and usage.
#
# It stands at the edge of the world, where a real provider would be: the proxy under test reaches
# it through litellm with ``api_base`` pointing here. Every request it gets is kept in ``requests``.
@dataclass
class Script:
    """What the fake answers: ``replies`` in turn (the last one repeats), with these usages."""

    replies: list[str] = field(default_factory=lambda: ["done"])
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cached_tokens: int = 0
    answer_model: str | None = None  # the model name the provider reports (default: as asked)


class FakeProvider:
    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/responses", self.responses, methods=["POST"]),
                Route("/v1/messages", self.messages, methods=["POST"]),
            ]
        )

    def _next_reply(self) -> str:
        n = len(self.requests) - 1
        replies = self.script.replies
        return replies[min(n, len(replies) - 1)]

    async def _take(self, request: Request) -> dict[str, Any]:
        body = await request.json()
        self.requests.append(
            {"path": request.url.path, "headers": dict(request.headers), "body": body}
        )
        return dict(body)

    def _model(self, body: dict[str, Any]) -> str:
        return self.script.answer_model or str(body.get("model"))

    async def chat(self, request: Request) -> Response:
        body = await self._take(request)
        s, text, model = self.script, self._next_reply(), self._model(body)
        usage = {
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
            "total_tokens": s.prompt_tokens + s.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": s.cached_tokens},
        }
        base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": model}
        if not body.get("stream"):
            return JSONResponse(
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                }
            )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[bytes]:
            chunk = {**base, "object": "chat.completion.chunk"}
            half = len(text) // 2
            for i, piece in enumerate((text[:half], text[half:])):
                delta: dict[str, Any] = {"content": piece}
                if i == 0:
                    delta["role"] = "assistant"
                choice = {"index": 0, "delta": delta, "finish_reason": None}
                yield _sse({**chunk, "choices": [choice]})
            yield _sse({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if include_usage:
                yield _sse({**chunk, "choices": [], "usage": usage})
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def responses(self, request: Request) -> Response:
        body = await self._take(request)
        s, text, model = self.script, self._next_reply(), self._model(body)
        return JSONResponse(
            {
                "id": "resp_fake",
                "object": "response",
                "created_at": int(time.time()),
                "status": "completed",
                "model": model,
                "output": [
                    {
                        "type": "message",
                        "id": "msg_fake",
                        "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                ],
                "usage": {
                    "input_tokens": s.prompt_tokens,
                    "output_tokens": s.completion_tokens,
                    "total_tokens": s.prompt_tokens + s.completion_tokens,
                    "input_tokens_details": {"cached_tokens": s.cached_tokens},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
        )

    async def messages(self, request: Request) -> Response:
        body = await self._take(request)
        s, text, model = self.script, self._next_reply(), self._model(body)
        # Anthropic counts cache reads apart from input_tokens.
        usage = {
            "input_tokens": s.prompt_tokens - s.cached_tokens,
            "output_tokens": s.completion_tokens,
            "cache_read_input_tokens": s.cached_tokens,
            "cache_creation_input_tokens": 0,
        }
        message = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return JSONResponse(message)

        async def events() -> AsyncIterator[bytes]:
            start = {**message, "content": [], "stop_reason": None}
            start["usage"] = {**usage, "output_tokens": 1}
            yield _sse({"type": "message_start", "message": start}, "message_start")
            yield _sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
            yield _sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
                "content_block_delta",
            )
            yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            yield _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": s.completion_tokens},
                },
                "message_delta",
            )
            yield _sse({"type": "message_stop"}, "message_stop")

        return StreamingResponse(events(), media_type="text/event-stream")


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()
