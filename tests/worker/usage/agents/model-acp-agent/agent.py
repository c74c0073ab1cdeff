"""A model-calling ACP agent for tests: sends the task to the model at MODEL_AGENT_BASE_URL
(OpenAI chat completions, OpenAI responses or Anthropic messages, streamed or not), runs each
``$ `` command the model answers with as a tool call, and ends its turn on any other answer or on
an HTTP error (whose message it reports).

Env: MODEL_AGENT_PROTOCOL (openai-completions | openai-responses | anthropic-messages),
MODEL_AGENT_STREAM=1, MODEL_AGENT_MAX_CALLS (default 5), MODEL_AGENT_NATIVE_USAGE=1 (report the
summed usage in PromptResponse.usage, as an agent with its own model login would).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from typing import Any

import httpx
from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
)
from acp.schema import AgentCapabilities, Implementation, Usage

BASE = os.environ.get("MODEL_AGENT_BASE_URL", "").rstrip("/")
KEY = os.environ.get("MODEL_AGENT_API_KEY", "")
MODEL = os.environ.get("MODEL_AGENT_MODEL", "")
PROTOCOL = os.environ.get("MODEL_AGENT_PROTOCOL", "openai-completions")
STREAM = os.environ.get("MODEL_AGENT_STREAM") == "1"
MAX_CALLS = int(os.environ.get("MODEL_AGENT_MAX_CALLS", "5"))
NATIVE = os.environ.get("MODEL_AGENT_NATIVE_USAGE") == "1"


def _sse_data(lines: list[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            out.append(json.loads(line[5:].strip()))
    return out


async def ask(
    client: httpx.AsyncClient, history: list[dict[str, str]]
) -> tuple[str, dict[str, int]]:
    """One model call: the answer's text and its (input, output) usage."""
    if PROTOCOL == "anthropic-messages":
        # Anthropic's base URL has no /v1; this agent's manifest says openai-completions.
        url = f"{BASE.removesuffix('/v1')}/v1/messages"
        headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        body: dict[str, Any] = {
            "model": MODEL,
            "max_tokens": 256,
            "messages": history,
            "temperature": 0.5,
        }
    elif PROTOCOL == "openai-responses":
        url = f"{BASE}/responses"
        headers = {"authorization": f"Bearer {KEY}"}
        body = {"model": MODEL, "input": history, "reasoning": {"effort": "low"}}
    else:
        url = f"{BASE}/chat/completions"
        headers = {"authorization": f"Bearer {KEY}", "x-skillsbench-call-purpose": "agent"}
        body = {
            "model": MODEL,
            "messages": history,
            "temperature": 0.2,
            "top_p": 0.9,
            "max_tokens": 256,
            "reasoning_effort": "low",
        }
    if STREAM:
        body["stream"] = True
        if PROTOCOL == "openai-completions":
            body["stream_options"] = {"include_usage": True}
    response = await client.post(url, json=body, headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text}")
    usage = {"input": 0, "output": 0}
    if PROTOCOL == "anthropic-messages":
        if STREAM:
            text = ""
            for event in _sse_data(response.text.splitlines()):
                if event["type"] == "content_block_delta":
                    text += event["delta"].get("text", "")
                if event["type"] == "message_start":
                    u = event["message"]["usage"]
                    usage["input"] = u["input_tokens"] + u.get("cache_read_input_tokens", 0)
                if event["type"] == "message_delta":
                    usage["output"] = event["usage"]["output_tokens"]
            return text, usage
        data = response.json()
        u = data["usage"]
        usage = {
            "input": u["input_tokens"] + u.get("cache_read_input_tokens", 0),
            "output": u["output_tokens"],
        }
        return "".join(b.get("text", "") for b in data["content"]), usage
    if PROTOCOL == "openai-responses":
        events = _sse_data(response.text.splitlines()) if STREAM else []
        data = next((e["response"] for e in events if e["type"] == "response.completed"), None)
        data = data or response.json()
        u = data["usage"]
        text = "".join(
            part.get("text", "") for item in data["output"] for part in item.get("content", [])
        )
        return text, {"input": u["input_tokens"], "output": u["output_tokens"]}
    if STREAM:
        text = ""
        for chunk in _sse_data(response.text.splitlines()):
            for choice in chunk.get("choices") or []:
                text += (choice.get("delta") or {}).get("content") or ""
            if chunk.get("usage"):
                usage = {
                    "input": chunk["usage"]["prompt_tokens"],
                    "output": chunk["usage"]["completion_tokens"],
                }
        return text, usage
    data = response.json()
    u = data["usage"]
    return data["choices"][0]["message"]["content"], {
        "input": u["prompt_tokens"],
        "output": u["completion_tokens"],
    }


class ModelAgent:
    def on_connect(self, conn: Any) -> None:
        self.conn = conn
        self.sessions: dict[str, str] = {}

    async def initialize(self, protocol_version: int, **kw: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="model-acp-agent", version="0.1"),
        )

    async def new_session(self, cwd: str, **kw: Any) -> NewSessionResponse:
        sid = uuid.uuid4().hex
        self.sessions[sid] = cwd
        return NewSessionResponse(session_id=sid)

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> PromptResponse:
        cwd = self.sessions[session_id]
        history = [{"role": "user", "content": "\n".join(getattr(b, "text", "") for b in prompt)}]
        used = {"input": 0, "output": 0}
        async with httpx.AsyncClient(timeout=60) as client:
            for n in range(1, MAX_CALLS + 1):
                try:
                    answer, usage = await ask(client, history)
                except Exception as exc:
                    await self.conn.session_update(
                        session_id, update_agent_message_text(f"model error: {exc}")
                    )
                    break
                used = {k: used[k] + usage[k] for k in used}
                history.append({"role": "assistant", "content": answer})
                if not answer.startswith("$ "):
                    await self.conn.session_update(session_id, update_agent_message_text(answer))
                    break
                command = answer[2:]
                call_id = f"call-{n}"
                await self.conn.session_update(
                    session_id,
                    start_tool_call(call_id, command, kind="execute", status="in_progress"),
                )
                done = await asyncio.to_thread(
                    subprocess.run, ["sh", "-c", command], cwd=cwd, capture_output=True, text=True
                )
                await self.conn.session_update(
                    session_id,
                    update_tool_call(
                        call_id,
                        status="completed" if done.returncode == 0 else "failed",
                        content=[tool_content(text_block(done.stdout + done.stderr))],
                    ),
                )
                history.append({"role": "user", "content": f"exit code {done.returncode}"})
        usage_out = None
        if NATIVE:
            usage_out = Usage(
                input_tokens=used["input"],
                output_tokens=used["output"],
                total_tokens=used["input"] + used["output"],
            )
        return PromptResponse(stop_reason="end_turn", usage=usage_out)


if __name__ == "__main__":
    asyncio.run(run_agent(ModelAgent()))  # type: ignore[arg-type]
