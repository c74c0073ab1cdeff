"""Real loopback servers for the purple-agent tests: our A2A apps, a fake model, a bridge client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.types import GetTaskRequest, Message, Role, SendMessageRequest, TaskState
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support import (
    REPO_ROOT,
    STARTUP_DEADLINE_SEC,
    InProcessServer,
    free_port,
    wait_for_http,
)
from worker.bridge.protocol import Action, find_action


@contextlib.asynccontextmanager
async def serving(make_app: Callable[[str], Any]) -> AsyncIterator[str]:
    """Serve ``make_app(base_url)`` on 127.0.0.1 in this event loop; yields the base URL."""
    port = free_port()
    app = make_app(f"http://127.0.0.1:{port}/")
    server = InProcessServer(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + STARTUP_DEADLINE_SEC
    while not server.started:
        if task.done():
            task.result()
            raise AssertionError(f"server on port {port} stopped before it started")
        if time.monotonic() > deadline:
            raise AssertionError(f"server on port {port} did not start in time")
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@dataclass
class ProcessAgent:
    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


@contextlib.contextmanager
def spawned(module: str, env: Mapping[str, str], log_path: Path) -> Iterator[ProcessAgent]:
    """``python -m module --host 127.0.0.1 --port P`` with its stderr+stdout in ``log_path``."""
    port = free_port()
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **env}
    with open(log_path, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO_ROOT,
            env=full_env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    agent = ProcessAgent(f"http://127.0.0.1:{port}", proc, log_path)
    try:
        wait_for_http(f"{agent.url}/.well-known/agent-card.json", proc, what=module, log=log_path)
        yield agent
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class TurnReply:
    state: str
    text: str
    data: list[Any]
    action: Action | None


class BridgeClient:
    """Plays the bridge's side of skillsbench-shell/v1 with a real a2a-sdk 1.x client."""

    def __init__(self, url: str, streaming: bool = False) -> None:
        self.url = url
        self.streaming = streaming
        self.context_id: str | None = None
        self._http = httpx.AsyncClient(timeout=60)
        self._client: Any = None

    async def __aenter__(self) -> BridgeClient:
        self._client = await create_client(
            self.url, client_config=ClientConfig(streaming=self.streaming, httpx_client=self._http)
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.close()
        await self._http.aclose()

    async def send(self, text: str | None = None, data: dict[str, Any] | None = None) -> TurnReply:
        parts = []
        if text is not None:
            parts.append(new_text_part(text))
        if data is not None:
            parts.append(new_data_part(data))
        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            context_id=self.context_id or "",
            parts=parts,
        )
        events = [ev async for ev in self._client.send_message(SendMessageRequest(message=message))]
        kinds = [ev.WhichOneof("payload") for ev in events]
        assert kinds[0] == "task", kinds
        task = events[0].task
        if self.streaming:  # task, status updates, artifact: read the final task back
            assert kinds[-1] == "status_update" and len(kinds) > 2, kinds
            task = await self._client.get_task(GetTaskRequest(id=task.id))
        else:
            assert kinds == ["task"], kinds
        self.context_id = task.context_id
        out_parts = [p for a in task.artifacts for p in a.parts]
        if task.status.HasField("message"):
            out_parts += list(task.status.message.parts)
        data_parts = get_data_parts(out_parts)
        return TurnReply(
            state=TaskState.Name(task.status.state),
            text="\n".join(get_text_parts(out_parts)),
            data=data_parts,
            action=find_action(data_parts),
        )


DEFAULT_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


@dataclass
class FakeModel:
    """An OpenAI chat-completions endpoint that plays a script of assistant turns.

    Each script item is either ``{"shell": "cmd"}`` (one tool call), ``{"text": "…"}`` (a final
    answer) or ``{"status": 401, "error": "…"}`` (an error response); ``"usage"`` beside either
    replaces :data:`DEFAULT_USAGE` (``None``: the response has no usage). Requests are recorded.
    """

    script: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth_headers: list[str] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._complete, methods=["POST"])])

    async def _complete(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        self.auth_headers.append(request.headers.get("authorization", ""))
        step = {
            "usage": DEFAULT_USAGE,
            **self.script[min(len(self.requests), len(self.script)) - 1],
        }
        if "status" in step:
            return JSONResponse(
                {"error": {"message": step["error"], "type": "invalid_request_error"}},
                status_code=step["status"],
            )
        message: dict[str, Any] = {"role": "assistant", "content": step.get("text")}
        if "shell" in step:
            n = len(self.requests)
            message["tool_calls"] = [
                {
                    "id": f"call_{n}",
                    "type": "function",
                    "function": {
                        "name": "shell",
                        "arguments": json.dumps({"command": step["shell"]}),
                    },
                }
            ]
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if "shell" in step else "stop",
                    }
                ],
                **({"usage": step["usage"]} if step.get("usage") is not None else {}),
            }
        )


# A local model provider that speaks chat completions, Responses and Anthropic Messages.
#
# It plays the model a real CLI expects for the csv-sales-summary task: the first answer of a
# conversation runs one shell command through the CLI's own shell tool (named as the request's
# tool list names it), a command that reads ``/root/sales.csv`` and writes ``/root/summary.json``
# at the instruction's absolute paths, as a real model does; once the conversation holds a tool
# result it answers that it is done. Terminus (no tools; JSON answers) gets the same command as
# keystrokes. Every request is counted with the tokens it reports (100 in, 20 out).
SOLVE = (
    "python3 -c 'import csv, json, collections; t = collections.defaultdict(float); "
    '[t.__setitem__(r["region"], t[r["region"]] + int(r["units"]) * float(r["unit_price"])) '
    'for r in csv.DictReader(open("/root/sales.csv"))]; '
    'json.dump({"total_revenue": round(sum(t.values()), 2), '
    '"revenue_by_region": {k: round(v, 2) for k, v in t.items()}, '
    '"top_region": max(t, key=t.get)}, open("/root/summary.json", "w"))\''
)
IN_TOKENS, OUT_TOKENS = 100, 20
_SHELL_NAMES = ("terminal", "execute_bash", "bash", "shell_command", "exec_command", "shell")


@dataclass
class FakeProvider:
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.requests)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self._dispatch, methods=["POST"])])

    async def _dispatch(self, request: Request) -> JSONResponse:
        path = request.url.path
        body = await request.json()
        self.requests.append((path, body))
        self.keys.append(
            request.headers.get("x-api-key") or request.headers.get("authorization", "")
        )
        if path.endswith("/chat/completions"):
            return JSONResponse(self._chat(body))
        if path.endswith("/responses"):
            return JSONResponse(self._responses(body))
        if path.endswith("/messages"):
            return JSONResponse(self._anthropic(body))
        return JSONResponse({"error": {"message": f"no such route {path}"}}, status_code=404)

    # -- chat completions (openhands: tools; terminus: JSON content) ------------------------
    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        n = self.calls
        messages = body.get("messages") or []
        tools = [t["function"] for t in body.get("tools") or [] if t.get("type") == "function"]
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if tools:
            done = any(m.get("role") == "tool" for m in messages)
            tool = _pick(tools, ("finish",)) if done else _pick(tools, _SHELL_NAMES)
            if tool is None:
                message["content"] = "The summary is written to /root/summary.json."
            else:
                args = {"message": "Wrote /root/summary.json."} if done else _shell_args(tool)
                message["tool_calls"] = [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {
                            "name": tool["name"],
                            "arguments": json.dumps(_complete(tool.get("parameters"), args)),
                        },
                    }
                ]
                finish = "tool_calls"
        else:  # terminus: keystrokes in a JSON answer, then task_complete (asked twice)
            done = any(m.get("role") == "assistant" for m in messages)
            answer = {
                "analysis": "sales.csv is in /root." if not done else "The summary is written.",
                "plan": "Compute the totals with Python." if not done else "Nothing left.",
                "commands": [] if done else [{"keystrokes": SOLVE + "\n", "duration": 2.0}],
                "task_complete": done,
            }
            message["content"] = json.dumps(answer)
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": IN_TOKENS,
                "completion_tokens": OUT_TOKENS,
                "total_tokens": IN_TOKENS + OUT_TOKENS,
            },
        }

    # -- Responses (codex) -----------------------------------------------------------------
    def _responses(self, body: dict[str, Any]) -> dict[str, Any]:
        n = self.calls
        items = body.get("input") if isinstance(body.get("input"), list) else []
        done = any(str(i.get("type", "")).endswith("_output") for i in items)
        tools = [t for t in body.get("tools") or [] if t.get("type") == "function"]
        tool = None if done else _pick(tools, _SHELL_NAMES)
        if tool is not None:
            output: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": tool["name"],
                "arguments": json.dumps(_shell_args(tool)),
                "status": "completed",
            }
        else:
            output = {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": "Wrote /root/summary.json.", "annotations": []}
                ],
            }
        return {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model", "fake"),
            "output": [output],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": IN_TOKENS,
                "output_tokens": OUT_TOKENS,
                "total_tokens": IN_TOKENS + OUT_TOKENS,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    # -- Anthropic Messages (claude) ---------------------------------------------------------
    def _anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        n = self.calls
        messages = body.get("messages") or []
        done = any(
            isinstance(m.get("content"), list)
            and any(b.get("type") == "tool_result" for b in m["content"])
            for m in messages
        )
        tools = [t for t in body.get("tools") or [] if "input_schema" in t]
        tool = None if done else _pick(tools, ("Bash", *_SHELL_NAMES))
        if tool is not None:
            args = _complete(tool["input_schema"], {"command": SOLVE})
            content: list[dict[str, Any]] = [
                {"type": "tool_use", "id": f"toolu_{n}", "name": tool["name"], "input": args}
            ]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": "Wrote /root/summary.json."}]
            stop = "end_turn"
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": IN_TOKENS, "output_tokens": OUT_TOKENS},
        }


def _pick(tools: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, Any] | None:
    by_name = {t.get("name"): t for t in tools}
    for name in names:
        if name in by_name:
            return by_name[name]
    return None


def _shell_args(tool: dict[str, Any]) -> dict[str, Any]:
    props = (tool.get("parameters") or {}).get("properties") or {}
    if "cmd" in props:
        args: dict[str, Any] = {"cmd": SOLVE}
    elif (props.get("command") or {}).get("type") == "array":
        args = {"command": ["bash", "-lc", SOLVE]}
    else:
        args = {"command": SOLVE}
    return _complete(tool.get("parameters"), args)


def _complete(schema: dict[str, Any] | None, args: dict[str, Any]) -> dict[str, Any]:
    """Fill the schema's other required fields the way a model would (first enum value, …)."""
    schema = schema or {}
    props = schema.get("properties") or {}
    out = dict(args)
    for name in schema.get("required") or []:
        if name in out:
            continue
        prop = props.get(name) or {}
        if prop.get("enum"):
            out[name] = "LOW" if "LOW" in prop["enum"] else prop["enum"][0]
        elif prop.get("type") == "boolean":
            out[name] = False
        elif prop.get("type") in ("integer", "number"):
            out[name] = 30
        else:
            out[name] = "Compute the sales summary"
    return out
