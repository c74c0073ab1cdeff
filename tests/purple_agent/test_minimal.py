"""The `minimal` harness, driven turn by turn as the bridge would, against a scripted fake model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from purple_agent.agent_under_test import create_app, make_agent
from purple_agent.config import AgentConfig
from tests.purple_agent.support import BridgeClient, FakeModel, serving
from worker.bridge.protocol import (
    PROTOCOL,
    ActionResult,
    ActionResultMessage,
    ExecAction,
    FinishAction,
    ShellContext,
)

KEY = "sk-test-minimal-0123456789abcdef"
UNPRICED = {"model": "fake-model", "cost_usd": None}  # litellm has no price for the fake model
INSTRUCTION = "Count the files in the workspace and write the number to answer.txt."


def context(**limits: Any) -> dict[str, Any]:
    return ShellContext(
        task_id="count-files", workspace="/root", skills_dir="/root/skills", limits=limits
    ).to_data()


def result(exit_code: int = 0, stdout: str = "", stderr: str = "") -> dict[str, Any]:
    """An action_result message as the bridge tags it (protocol and turn beside the result)."""
    message = ActionResultMessage(
        action_result=ActionResult(exit_code=exit_code, stdout=stdout, stderr=stderr)
    ).to_data()
    return {"protocol": PROTOCOL, "turn": 1, **message}


@pytest.fixture
async def agent_with(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """Factory: serve a fake model with a script and the minimal agent pointed at it."""
    stack: list[Any] = []

    async def start(
        script: list[dict[str, Any]], streaming: bool = False, **config: Any
    ) -> tuple[FakeModel, BridgeClient]:
        model = FakeModel(script)
        model_cm = serving(lambda _url: model.app())
        model_url = await model_cm.__aenter__()
        stack.append(model_cm)
        settings: dict[str, Any] = {
            "base_url": f"{model_url}/v1",
            "model": "openai/fake-model",
            **config,
        }
        cfg = AgentConfig(harness="minimal", api_key=SecretStr(KEY), **settings)
        agent = make_agent(cfg)
        agent_cm = serving(lambda url: create_app(cfg, url, agent))
        agent_url = await agent_cm.__aenter__()
        stack.append(agent_cm)
        bridge = BridgeClient(agent_url, streaming=streaming)
        await bridge.__aenter__()
        stack.append(bridge)
        return model, bridge

    yield start
    for cm in reversed(stack):
        await cm.__aexit__(None, None, None)


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_solves_by_exec_turns_then_finishes(agent_with: Any, streaming: bool) -> None:
    model, bridge = await agent_with(
        [{"shell": "ls -1 | wc -l"}, {"shell": "echo 3 > answer.txt"}, {"text": "Wrote 3."}],
        streaming=streaming,
    )
    first = await bridge.send(INSTRUCTION, context(max_turns=30, deadline_sec=600))
    assert first.state == "TASK_STATE_COMPLETED"
    assert first.action == ExecAction(command="ls -1 | wc -l", timeout_sec=60)
    second = await bridge.send(data=result(stdout="3\n"))
    assert second.action == ExecAction(command="echo 3 > answer.txt", timeout_sec=60)
    third = await bridge.send(data=result())
    assert third.action == FinishAction(message="Wrote 3.")
    assert third.text == "Wrote 3."

    # what the model saw: the instruction, the shell tool, then each command's output
    first_req, second_req, third_req = model.requests
    assert first_req["model"] == "fake-model"
    assert [t["function"]["name"] for t in first_req["tools"]] == ["shell"]
    assert first_req["messages"][1] == {"role": "user", "content": INSTRUCTION}
    assert "/root/skills" in first_req["messages"][0]["content"]
    tool_msg = second_req["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_1"
    assert "exit code: 0" in tool_msg["content"] and "3\n" in tool_msg["content"]
    assert third_req["messages"][-1]["tool_call_id"] == "call_2"
    assert model.auth_headers == [f"Bearer {KEY}"] * 3  # the key goes to the provider only


async def test_turn_budget_from_the_bridge_limits(agent_with: Any) -> None:
    model, bridge = await agent_with([{"shell": "true"}])
    reply = await bridge.send(INSTRUCTION, context(max_turns=3))
    assert isinstance(reply.action, ExecAction)
    reply = await bridge.send(data=result())
    assert isinstance(reply.action, ExecAction)
    reply = await bridge.send(data=result())
    assert isinstance(reply.action, FinishAction)
    assert "turn budget of 2" in reply.action.message  # one turn kept for the finish
    assert len(model.requests) == 2


async def test_token_budget(agent_with: Any) -> None:
    model, bridge = await agent_with([{"shell": "true"}], max_tokens=200)
    reply = await bridge.send(INSTRUCTION, context())
    assert isinstance(reply.action, ExecAction)  # 120 tokens spent
    reply = await bridge.send(data=result())  # 240 tokens spent: over budget
    assert isinstance(reply.action, FinishAction)
    assert "token budget of 200" in reply.action.message
    assert len(model.requests) == 2


async def test_time_budget_spent_finishes_without_calling_the_model(agent_with: Any) -> None:
    model, bridge = await agent_with([{"shell": "true"}])
    reply = await bridge.send(INSTRUCTION, context(deadline_sec=3))
    assert isinstance(reply.action, FinishAction)
    assert "time budget" in reply.action.message
    assert model.requests == []


async def test_model_error_fails_the_task_without_leaking_the_key(agent_with: Any) -> None:
    _, bridge = await agent_with([{"status": 401, "error": f"Incorrect API key provided: {KEY}"}])
    reply = await bridge.send(INSTRUCTION, context())
    assert reply.state == "TASK_STATE_FAILED"
    assert "model call failed" in reply.text and "AuthenticationError" in reply.text
    assert KEY not in reply.text


async def test_an_unreachable_provider_is_named_in_the_reason(agent_with: Any) -> None:
    """The trial's reason carries the provider's own words, not only an exception class."""
    _, bridge = await agent_with([], base_url="http://127.0.0.1:9/v1")
    reply = await bridge.send(INSTRUCTION, context())
    assert reply.state == "TASK_STATE_FAILED"
    # litellm's words for a refused connection: "InternalServerError: OpenAIException -
    # Connection error." (the class alone said nothing about the cause)
    assert reply.text.startswith("model call failed: InternalServerError: "), reply.text
    assert reply.text.endswith("Connection error."), reply.text
    assert reply.text.count("InternalServerError") == 1


async def test_message_without_context_is_refused(agent_with: Any) -> None:
    _, bridge = await agent_with([{"text": "hi"}])
    reply = await bridge.send("hello?")
    assert reply.state == "TASK_STATE_FAILED"
    assert "skillsbench-shell/v1" in reply.text


async def test_a2a_0_3_bridge_drives_a_trial(agent_with: Any, a2a03_python: Path) -> None:
    """A genuine a2a-sdk 0.3 client (ints stay ints on its side) plays the bridge."""
    model, bridge = await agent_with([{"shell": "cat task.md"}, {"text": "All done."}])
    turns = [
        {"text": INSTRUCTION, "data": context(max_turns=10, deadline_sec=300)},
        {"text": None, "data": result(exit_code=0, stdout="# task\n")},
    ]
    proc = await asyncio.create_subprocess_exec(
        str(a2a03_python),
        str(Path(__file__).parent / "a2a03_client.py"),
        bridge.url,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(json.dumps(turns).encode()), 120)
    assert proc.returncode == 0, err.decode()
    first, second = json.loads(out)["replies"]
    assert first["state"] == "completed"
    one_call = {"usage": {**UNPRICED, "calls": 1, "input_tokens": 100, "output_tokens": 20}}
    assert first["data"] == [
        {"action": "exec", "command": "cat task.md", "timeout_sec": 60},
        one_call,
    ]
    assert second["data"] == [{"action": "finish", "message": "All done.", "files": []}, one_call]
    assert "# task" in model.requests[1]["messages"][-1]["content"]


def usage_of(reply: Any) -> dict[str, Any]:
    [usage] = [d["usage"] for d in reply.data if "usage" in d]
    return dict(usage)


async def test_every_reply_reports_the_model_calls_since_the_last(agent_with: Any) -> None:
    """Tokens equal to what the provider returned; a reply without a model call reports 0
    calls; a response without usage leaves the tokens unknown (None), never 0."""
    model, bridge = await agent_with(
        [
            {
                "shell": "ls",
                "usage": {"prompt_tokens": 321, "completion_tokens": 7, "total_tokens": 328},
            },
            {"text": "Done.", "usage": None},
        ]
    )
    first = await bridge.send(INSTRUCTION, context())
    assert isinstance(first.action, ExecAction)
    assert usage_of(first) == {**UNPRICED, "calls": 1, "input_tokens": 321, "output_tokens": 7}
    second = await bridge.send(data=result())
    assert isinstance(second.action, FinishAction)
    reported = usage_of(second)
    assert reported["calls"] == 1 and reported["cost_usd"] is None
    assert (reported["input_tokens"], reported["output_tokens"]) == (None, None), reported
    assert len(model.requests) == 2


async def test_a_priced_model_reports_litellm_s_cost(agent_with: Any) -> None:
    import litellm

    model, bridge = await agent_with([{"text": "Done."}], model="openai/gpt-4o-mini")
    reply = await bridge.send(INSTRUCTION, context())
    usage = usage_of(reply)
    price = litellm.model_cost["gpt-4o-mini"]
    expected = 100 * price["input_cost_per_token"] + 20 * price["output_cost_per_token"]
    assert usage["model"] == "gpt-4o-mini"
    assert (usage["calls"], usage["input_tokens"], usage["output_tokens"]) == (1, 100, 20)
    assert usage["cost_usd"] == pytest.approx(expected)
    assert model.requests[0]["model"] == "gpt-4o-mini"
