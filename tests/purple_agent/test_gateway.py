"""The model gateway: each CLI protocol in, litellm to a local provider out, every call counted."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from purple_agent.config import AgentConfig
from purple_agent.gateway import Gateway, load_litellm
from tests.purple_agent.support import FakeModel, serving

KEY = "sk-test-gateway-0123456789abcdef"


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[Gateway, FakeModel, httpx.AsyncClient]]:
    load_litellm()  # the agent imports litellm beside its server at start-up
    model = FakeModel([{"text": "hello from the provider"}])
    async with serving(lambda _url: model.app()) as url:
        config = AgentConfig(
            harness="gemini-cli",
            model="openai/fake-model",
            base_url=f"{url}/v1",
            api_key=SecretStr(KEY),
        )
        gw = Gateway(config)
        base = await gw.start()
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            yield gw, model, client
        await gw.stop()


GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


async def test_gemini_protocol_is_translated_and_counted(gateway: Any) -> None:
    gw, model, client = gateway
    token = gw.open_session()
    answer = await client.post(
        "/v1beta/models/any:generateContent", headers={"x-goog-api-key": token}, json=GEMINI_BODY
    )
    assert answer.status_code == 200, answer.text
    [candidate] = answer.json()["candidates"]
    assert candidate["content"]["parts"] == [{"text": "hello from the provider"}]
    stream = await client.post(
        f"/v1beta/models/any:streamGenerateContent?alt=sse&key={token}", json=GEMINI_BODY
    )
    [event] = [json.loads(x[6:]) for x in stream.text.splitlines() if x.startswith("data: ")]
    assert event["candidates"][0]["content"]["parts"][0]["text"] == "hello from the provider"
    assert model.auth_headers == [f"Bearer {KEY}"] * 2  # the real key, only upstream
    assert model.requests[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert gw.close_session(token).report() == {
        "model": "openai/fake-model",
        "calls": 2,
        "input_tokens": 200,
        "output_tokens": 40,
        "cost_usd": None,
    }


async def test_chat_stream_anthropic_messages_and_unknown_keys(gateway: Any) -> None:
    gw, model, client = gateway
    token = gw.open_session()
    chat = await client.post(
        "/v1/chat/completions",
        headers={"Authorization": f"Bearer {token}"},
        json={"model": "x", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    )
    lines = [x[6:] for x in chat.text.splitlines() if x.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(x) for x in lines[:-1]]
    assert chunks[0]["choices"][0]["delta"]["content"] == "hello from the provider"
    assert chunks[-1]["usage"]["completion_tokens"] == 20
    messages = await client.post(
        "/v1/messages",
        headers={"x-api-key": token},
        json={
            "model": "claude-x",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "hi"}],
        },
    )
    assert messages.status_code == 200, messages.text
    body = messages.json()
    assert body["content"][0]["text"] == "hello from the provider"
    assert body["usage"]["input_tokens"] == 100
    refused = await client.post("/v1/messages", headers={"x-api-key": "sk-other"}, json={})
    assert refused.status_code == 401
    assert gw.usage(token).calls == 2 and len(model.requests) == 2


async def test_the_gateway_leaves_the_process_signals_to_the_agent_server() -> None:
    """The agent's own server owns SIGINT/SIGTERM: a gateway that captured them would take a
    Ctrl-C for itself while it runs, and put back a stale handler when the two stop out of
    order (which ends every later event stream of the process: sse-starlette reads it)."""
    import signal

    load_litellm()
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    model = FakeModel([{"text": "unused"}])
    async with serving(lambda _url: model.app()) as url:
        config = AgentConfig(
            harness="gemini-cli", model="openai/fake-model", base_url=f"{url}/v1", api_key=None
        )
        gw = Gateway(config)
        await gw.start()
        during = {sig: signal.getsignal(sig) for sig in before}
        await gw.stop()
    assert during == before
    assert {sig: signal.getsignal(sig) for sig in before} == before
