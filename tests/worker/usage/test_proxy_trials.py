"""Manifest agents in the sandbox call a fake provider through the worker's model proxy: the
recorded tokens are the provider's, costs come from litellm's table or stay null, caps refuse the
over-budget call, and the real key never reaches the sandbox."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support import serve
from tests.worker.usage.support import (
    AGENTS_DIR,
    REAL_KEY,
    FakeProvider,
    Script,
    agent_env,
    run_one,
)
from worker.api import UsageSettings
from worker.usage.pricing import load_litellm
from worker.viewer.cli import REQUEST_COLUMNS, trials

PRICED = "gpt-4o-mini"  # in litellm's bundled cost map
WRITE = "$ echo 42 > /root/answer.txt"


@pytest.fixture
async def provider(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeProvider]:
    fake = FakeProvider()
    async with serve(fake.app) as url:
        monkeypatch.setenv("SKILLSBENCH_AGENTS_DIR", str(AGENTS_DIR))
        monkeypatch.delenv("BENCHFLOW_AGENTS_DIR", raising=False)
        monkeypatch.setenv("SKILLSBENCH_MODEL_API_BASE", f"{url}/v1")
        monkeypatch.setenv("SKILLSBENCH_MODEL_API_KEY", REAL_KEY)
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        fake.base_url = url  # type: ignore[attr-defined]
        yield fake


class Receiver:
    """A loopback OTLP/HTTP receiver that keeps every JSON export."""

    def __init__(self) -> None:
        self.exports: list[tuple[str, str, dict[str, Any]]] = []
        self.app = Starlette(routes=[Route("/v1/traces", self.traces, methods=["POST"])])

    async def traces(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.exports.append((request.url.path, request.headers["content-type"], body))
        return JSONResponse({"partialSuccess": {}})


def _everything_under(folder: Path) -> str:
    return "".join(
        p.read_text(errors="replace")
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink()
    )


async def test_chat_calls_are_recorded_priced_and_traced(
    provider: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider.script = Script(
        replies=[WRITE, "done"], prompt_tokens=1200, completion_tokens=35, cached_tokens=1000
    )
    receiver = Receiver()
    async with serve(receiver.app) as otlp:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp)
        trial = await run_one(
            tmp_path,
            usage=UsageSettings(
                model=f"openai/{PRICED}",
                agent_env=agent_env(
                    MY_SECRET_TOKEN="hunter2-value", MODEL_AGENT_PROTOCOL="openai-completions"
                ),
            ),
        )
    assert trial.result["reward"] == 1.0, trial.result
    usage = trial.usage
    assert usage["n_input_tokens"] == 2400
    assert usage["n_output_tokens"] == 70
    assert usage["n_cache_read_tokens"] == 2000
    assert usage["total_tokens"] == 2470
    assert usage["usage_source"] == "provider_response"
    assert usage["price_source"] == "litellm"
    litellm = load_litellm()
    one = sum(
        litellm.cost_per_token(
            model=PRICED, prompt_tokens=1200, completion_tokens=35, cache_read_input_tokens=1000
        )
    )
    assert usage["cost_usd"] == pytest.approx(2 * one)
    assert usage["cost_usd"] > 0

    calls = trial.calls()
    assert len(calls) == 2 == len(provider.requests)
    first = calls[0]
    body = first["request"]["body"]
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["reasoning_effort"]) == (
        0.2,
        0.9,
        256,
        "low",
    )
    assert first["response"]["status_code"] == 200
    assert first["response"]["body"]["choices"][0]["finish_reason"] == "stop"
    assert first["usage"]["prompt_tokens"] == 1200
    assert first["metadata"]["call_purpose"] == "agent"
    assert first["metadata"]["provider_model"] == PRICED
    assert first["request"]["headers"]["authorization"] == "[redacted]"
    # The task has no internet: the agent reached the proxy through the in-sandbox forwarder.
    assert first["request"]["headers"]["host"] == "127.0.0.1:18080"
    # The provider got the real key; the sandbox only ever had the trial's key.
    assert provider.requests[0]["headers"]["authorization"] == f"Bearer {REAL_KEY}"
    assert provider.requests[0]["body"]["temperature"] == 0.2
    assert REAL_KEY not in _everything_under(trial.dir)

    assert trial.timing["provider_wait"] > 0
    assert trial.timing["agent_without_provider_wait"] == pytest.approx(
        trial.timing["agent_execution"] - trial.timing["provider_wait"], abs=0.01
    )
    assert trial.config["agent_env"]["MODEL_AGENT_PROTOCOL"] == "openai-completions"
    assert "MY_SECRET_TOKEN" not in trial.config["agent_env"]
    assert "hunter2-value" not in (trial.dir / "config.json").read_text()
    assert trial.config["model"] == f"openai/{PRICED}"

    # The trace: on disk and at the receiver, the same OTLP/JSON document.
    on_disk = json.loads((trial.dir / "trajectory" / "otel-spans.json").read_text())
    assert len(receiver.exports) == 1
    path, content_type, sent = receiver.exports[0]
    assert (path, content_type) == ("/v1/traces", "application/json")
    assert sent == on_disk
    spans = sent["resourceSpans"][0]["scopeSpans"][0]["spans"]
    names = [s["name"] for s in spans]
    assert names[0] == "trial answer-42"
    assert {"phase environment_setup", "phase agent_execution", "phase verifier"} <= set(names)
    assert names.count("model call openai_chat_completions") == 2
    assert names.count("tool execute") == 1
    trace_ids = {s["traceId"] for s in spans}
    assert len(trace_ids) == 1 and len(trace_ids.pop()) == 32
    by_id = {s["spanId"]: s for s in spans}
    agent_span = next(s for s in spans if s["name"] == "phase agent_execution")
    for span in spans:
        assert len(span["spanId"]) == 16
        assert int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"])
        if span["name"].startswith(("model call", "tool")):
            assert span["parentSpanId"] == agent_span["spanId"]
            assert by_id[span["parentSpanId"]]
    model_span = next(s for s in spans if s["name"].startswith("model call"))
    attrs = {a["key"]: a["value"] for a in model_span["attributes"]}
    assert attrs["gen_ai.usage.input_tokens"] == {"intValue": "1200"}
    assert attrs["gen_ai.response.model"] == {"stringValue": PRICED}

    # What the trials commands print from these records.
    runner = CliRunner()
    listed = runner.invoke(trials, ["requests", str(tmp_path / "jobs")])
    assert listed.exit_code == 0, listed.output
    header, *rows = listed.output.splitlines()
    assert header.split() == list(REQUEST_COLUMNS)
    assert [r.split() for r in rows] == [
        [
            trial.dir.name,
            str(n),
            "agent",
            f"openai/{PRICED}",
            PRICED,
            "low",
            "0.2",
            "0.9",
            "256",
            "200",
            "stop",
        ]
        for n in (1, 2)
    ]
    shown = runner.invoke(trials, ["show", str(trial.dir)])
    assert shown.exit_code == 0, shown.output
    assert "Reward:    1 (passed)" in shown.output
    assert "Tools:     1 tool call(s)" in shown.output
    assert "[completed] echo 42 > /root/answer.txt" in shown.output
    assert "2,470 total [provider_response]" in shown.output
    assert f"Cost:      ${usage['cost_usd']:.4f}, 2,470 tokens" in shown.output
    assert "Phases:    environment_setup" in shown.output


async def test_streamed_chat_of_an_unpriced_model_has_null_cost(
    provider: FakeProvider, tmp_path: Path
) -> None:
    provider.script = Script(replies=[WRITE, "done"], prompt_tokens=500, completion_tokens=40)
    trial = await run_one(
        tmp_path,
        usage=UsageSettings(
            model="openai/skillsbench-unpriced-model", agent_env=agent_env(MODEL_AGENT_STREAM="1")
        ),
    )
    assert trial.result["reward"] == 1.0
    usage = trial.usage
    assert (usage["n_input_tokens"], usage["n_output_tokens"], usage["total_tokens"]) == (
        1000,
        80,
        1080,
    )
    assert usage["cost_usd"] is None
    assert usage["price_source"] is None
    assert usage["usage_source"] == "provider_response"
    assert "not reported in USD" in usage["cost_summary"]
    calls = trial.calls()
    assert [c["request"]["body"]["stream"] for c in calls] == [True, True]
    assert [c["response"]["body"]["choices"][0]["finish_reason"] for c in calls] == ["stop"] * 2
    assert provider.requests[0]["body"]["stream"] is True


async def test_anthropic_messages_streamed_count_cache_reads(
    provider: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSBENCH_MODEL_API_BASE", provider.base_url)  # type: ignore[attr-defined]
    provider.script = Script(
        replies=[WRITE, "done"], prompt_tokens=300, completion_tokens=12, cached_tokens=200
    )
    trial = await run_one(
        tmp_path,
        usage=UsageSettings(
            model="anthropic/claude-sonnet-4-5-20250929",
            agent_env=agent_env(MODEL_AGENT_PROTOCOL="anthropic-messages", MODEL_AGENT_STREAM="1"),
        ),
    )
    assert trial.result["reward"] == 1.0, trial.result
    usage = trial.usage
    assert (usage["n_input_tokens"], usage["n_output_tokens"], usage["n_cache_read_tokens"]) == (
        600,
        24,
        400,
    )
    assert usage["price_source"] == "litellm" and usage["cost_usd"] > 0
    calls = trial.calls()
    assert [c["request"]["path"] for c in calls] == ["/v1/messages"] * 2
    assert calls[0]["request"]["headers"]["x-api-key"] == "[redacted]"
    assert calls[0]["response"]["body"]["stop_reason"] == "end_turn"
    assert provider.requests[0]["headers"]["x-api-key"] == REAL_KEY


async def test_responses_api_streamed_with_tracking_off(
    provider: FakeProvider, tmp_path: Path
) -> None:
    provider.script = Script(replies=[WRITE, "done"], prompt_tokens=80, completion_tokens=8)
    trial = await run_one(
        tmp_path,
        usage=UsageSettings(
            model="openai/skillsbench-unpriced-model",
            usage_tracking="off",
            agent_env=agent_env(MODEL_AGENT_PROTOCOL="openai-responses", MODEL_AGENT_STREAM="1"),
        ),
    )
    assert trial.result["reward"] == 1.0, trial.result
    assert trial.usage["total_tokens"] == 176  # counted, though --usage-tracking off
    assert [r["path"] for r in provider.requests] == ["/v1/responses"] * 2
    assert provider.requests[0]["body"]["reasoning"] == {"effort": "low"}
    assert not (trial.dir / "trajectory" / "llm_trajectory.jsonl").exists()


async def test_token_cap_refuses_the_over_budget_call_and_ends_the_turn(
    provider: FakeProvider, tmp_path: Path
) -> None:
    provider.script = Script(
        replies=["$ echo 1", WRITE, "done"], prompt_tokens=100, completion_tokens=20
    )
    trial = await run_one(
        tmp_path,
        usage=UsageSettings(
            model="openai/skillsbench-unpriced-model", max_tokens=130, agent_env=agent_env()
        ),
    )
    # Call 1 (120 tokens) is under the cap, call 2 crosses it, call 3 is refused.
    assert len(provider.requests) == 2
    calls = trial.calls()
    assert [c["response"]["status_code"] for c in calls] == [200, 200, 400]
    assert calls[2]["metadata"]["refused"] is True
    assert "--max-tokens 130" in calls[2]["response"]["body"]["error"]["message"]
    assert trial.result["failure"] == "usage_limit"
    assert trial.result["score_eligible"] is True
    assert trial.result["reward"] == 1.0  # the work done before the cap is still graded
    assert "--max-tokens 130" in trial.result["usage_tracking"]["limit_reached"]
    assert trial.usage["total_tokens"] == 240
    messages = [
        json.loads(line)
        for line in (trial.dir / "trajectory" / "acp_trajectory.jsonl").read_text().splitlines()
    ]
    said = [m["text"] for m in messages if m["type"] == "agent_message"]
    assert any("budget" in text for text in said), said


async def test_cost_cap_on_a_priced_model(provider: FakeProvider, tmp_path: Path) -> None:
    provider.script = Script(replies=[WRITE, "done"], prompt_tokens=100_000, completion_tokens=10)
    trial = await run_one(
        tmp_path,
        usage=UsageSettings(model=f"openai/{PRICED}", max_cost_usd=0.001, agent_env=agent_env()),
    )
    assert len(provider.requests) == 1  # 100k gpt-4o-mini input tokens cost more than $0.001
    assert [c["response"]["status_code"] for c in trial.calls()] == [200, 400]
    assert trial.result["failure"] == "usage_limit"
    assert "--max-cost-usd 0.001" in trial.result["usage_tracking"]["limit_reached"]


async def test_required_tracking_fails_a_trial_without_usage(
    provider: FakeProvider, tmp_path: Path
) -> None:
    trial = await run_one(
        tmp_path,
        usage=UsageSettings(
            model="openai/x",
            usage_tracking="required",
            agent_env=agent_env(MODEL_AGENT_MAX_CALLS="0"),
        ),
    )
    assert provider.requests == []
    assert trial.result["failure"] == "usage_untracked"
    assert trial.result["score_eligible"] is False
    assert trial.usage["usage_source"] == "unavailable"
    assert trial.usage["total_tokens"] is None


async def test_agent_native_usage_when_the_agent_routes_its_own_model(
    provider: FakeProvider, tmp_path: Path
) -> None:
    provider.script = Script(replies=[WRITE, "done"], prompt_tokens=50, completion_tokens=5)
    trial = await run_one(
        tmp_path,
        agent="model-acp-agent-own-route",
        internet=True,  # the agent reaches its own endpoint (here the fake) by itself
        usage=UsageSettings(
            usage_tracking="required",
            agent_env=agent_env(
                MODEL_AGENT_BASE_URL=f"{provider.base_url}/v1",  # type: ignore[attr-defined]
                MODEL_AGENT_API_KEY="sk-agents-own",
                MODEL_AGENT_MODEL="own-model",
                MODEL_AGENT_NATIVE_USAGE="1",
                MODEL_AGENT_CODE=(AGENTS_DIR / "model-acp-agent" / "agent.py").read_text(),
            ),
        ),
    )
    assert trial.result["reward"] == 1.0, trial.result
    assert trial.result["failure"] is None
    assert trial.usage["usage_source"] == "agent_native_acp"
    assert (trial.usage["n_input_tokens"], trial.usage["n_output_tokens"]) == (100, 10)
    assert trial.usage["cost_usd"] is None
    assert trial.calls() == []  # no proxy: nothing recorded at the model boundary
    assert trial.result["usage_tracking"]["model_access"] == "none"


async def test_agents_without_a_model_get_no_proxy_and_say_so(
    provider: FakeProvider, tmp_path: Path
) -> None:
    trial = await run_one(tmp_path, agent="nop", usage=UsageSettings(usage_tracking="required"))
    assert trial.result["failure"] is None
    assert trial.usage["cost_summary"] == "none: no model tokens were used"
    assert trial.usage["total_tokens"] is None  # nothing was measured: unknown, not 0
    assert trial.usage["usage_source"] == "unavailable"
    assert trial.calls() == []
    assert trial.timing["provider_wait"] is None
