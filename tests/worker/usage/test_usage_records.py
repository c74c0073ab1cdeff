"""Usage records without a trial: token normalization, redaction, prices, OTLP/JSON shape, the
summary lines and the trials commands on hand-written records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import assume, given
from hypothesis import strategies as st

from worker.usage import otel
from worker.usage.pricing import price_usd
from worker.usage.records import (
    REDACTED,
    TokenUsage,
    UsageTotals,
    agent_result_fields,
    cost_summary,
    looks_like_credential,
    public_agent_env,
    redact,
)
from worker.usage.summary import cost_line
from worker.viewer.cli import trials


def test_anthropic_and_openai_usage_count_the_prompt_the_same_way() -> None:
    openai = TokenUsage.from_openai(
        {
            "prompt_tokens": 1500,
            "completion_tokens": 40,
            "prompt_tokens_details": {"cached_tokens": 1000},
        }
    )
    anthropic = TokenUsage.from_anthropic(
        {
            "input_tokens": 400,
            "output_tokens": 40,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 100,
        }
    )
    assert openai == TokenUsage(input=1500, output=40, cache_read=1000)
    assert anthropic == TokenUsage(input=1500, output=40, cache_read=1000, cache_creation=100)
    assert anthropic is not None and anthropic.total == 1540
    responses = TokenUsage.from_openai({"input_tokens": 7, "output_tokens": 3})
    assert responses == TokenUsage(input=7, output=3)
    acp = TokenUsage.from_acp(
        {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7, "cachedReadTokens": 1}
    )
    assert acp == TokenUsage(input=5, output=2, cache_read=1)
    assert TokenUsage.from_openai(None) is None


def test_config_keeps_agent_env_but_not_secrets() -> None:
    env = {
        "MODEL_AGENT_PROTOCOL": "openai-completions",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OPENAI_API_KEY": "whatever",
        "GITHUB_TOKEN": "x",
        "DB_PASSWORD": "x",
        "MY_AUTH": "x",
        "SESSION_ID": "x",
        "CLIENT_SECRET": "x",
        "INNOCENT": "sk-ant-api03-abcdefghijklmnop",
        "ALSO_INNOCENT": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "RANDOM": "a8Fj29dkQ0pLm3nB7vCx1zR5tY6uI4oPq",
    }
    assert public_agent_env(env) == {
        "MODEL_AGENT_PROTOCOL": "openai-completions",
        "OTEL_LOGS_EXPORTER": "otlp",
    }


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz _-./", max_size=40))
def test_plain_words_and_paths_are_not_credentials(value: str) -> None:
    # Key prefixes (sk-, hf_, ...) are credential-shaped by design, even in short words.
    assume(not value.lstrip().startswith(("sk-", "sk_", "pk_", "rk_", "hf_")))
    assert not looks_like_credential(value)


def test_redact_masks_known_secrets_and_credential_shapes() -> None:
    body = {
        "messages": [{"role": "user", "content": "use key sk-skillsbench-abc123 please"}],
        "api_key": "anything",
        "model": "m",
        "nested": ["Bearer abcdef"],
    }
    out = redact(body, ("sk-skillsbench-abc123",))
    assert out["messages"][0]["content"] == f"use key {REDACTED} please"
    assert out["api_key"] == REDACTED
    assert out["nested"] == [REDACTED]
    assert out["model"] == "m"


def test_unknown_and_zero_priced_models_have_no_price() -> None:
    assert price_usd("openai/no-such-model-xyz", prompt_tokens=10, completion_tokens=1) is None
    assert price_usd("no-such-model-xyz", prompt_tokens=10, completion_tokens=1) is None
    priced = price_usd("openai/gpt-4o-mini", prompt_tokens=1_000_000, completion_tokens=0)
    assert priced == pytest.approx(0.15)


def test_totals_stay_unpriced_once_a_call_lacks_a_price() -> None:
    totals = UsageTotals()
    totals.add(TokenUsage(10, 1), 0.5)
    totals.add(TokenUsage(10, 1), None)
    totals.add(None, None)
    assert (totals.n_calls, totals.n_counted, totals.n_unpriced) == (3, 2, 1)
    assert not totals.priced
    fields = agent_result_fields(totals.usage, None, "provider_response", "litellm")
    assert fields["cost_usd"] is None and fields["price_source"] is None
    assert fields["total_tokens"] == 22
    assert "not reported in USD" in cost_summary(fields, calls_model=True)
    assert cost_summary(fields, calls_model=False) == "none: no model tokens were used"
    missing = agent_result_fields(None, None, "unavailable", None)
    assert missing["total_tokens"] is None and missing["cost_usd"] is None


def test_job_cost_line() -> None:
    def result(
        access: str, source: str, tokens: int | None, cost: float | None
    ) -> dict[str, object]:
        return {
            "usage_tracking": {"model_access": access},
            "agent_result": {"usage_source": source, "total_tokens": tokens, "cost_usd": cost},
        }

    assert (
        cost_line([result("none", "unavailable", 0, None)])
        == "Cost: none: no model tokens were used"
    )
    priced = [
        result("proxy", "provider_response", 1000, 0.25),
        result("proxy", "provider_response", 500, 0.5),
    ]
    assert cost_line(priced) == "Cost: $0.7500, 1,500 tokens"
    mixed = [*priced, result("proxy", "provider_response", 100, None)]
    assert cost_line(mixed).startswith("Cost: not reported in USD")
    assert "1,600 tokens" in cost_line(mixed)
    gap = [*priced, result("external", "unavailable", None, None)]
    assert "1 trial(s) without usage" in cost_line(gap)
    assert cost_line(gap).startswith("Cost: $0.7500, 1,500 tokens")
    unrecorded = [result("external", "unavailable", None, None)] * 2
    assert cost_line(unrecorded) == "Cost: " + cost_summary(None, calls_model=True)


def test_otlp_json_shape() -> None:
    parent = otel.Span("trial t", 1_000, 5_000, attributes={"n": 3, "ok": True, "x": 0.5, "s": "v"})
    child = otel.Span("phase p", 2_000, 3_000, parent_span_id=parent.span_id, error="boom")
    doc = otel.trace_document([parent, child], otel.trace_id_for("trial-1"), {"service.name": "w"})
    rs = doc["resourceSpans"][0]
    assert rs["resource"]["attributes"] == [{"key": "service.name", "value": {"stringValue": "w"}}]
    spans = rs["scopeSpans"][0]["spans"]
    assert spans[0]["startTimeUnixNano"] == "1000" and spans[0]["endTimeUnixNano"] == "5000"
    assert {a["key"]: a["value"] for a in spans[0]["attributes"]} == {
        "n": {"intValue": "3"},
        "ok": {"boolValue": True},
        "x": {"doubleValue": 0.5},
        "s": {"stringValue": "v"},
    }
    assert "parentSpanId" not in spans[0]
    assert spans[1]["parentSpanId"] == parent.span_id
    assert spans[1]["status"] == {"code": otel.STATUS_ERROR, "message": "boom"}
    assert spans[0]["traceId"] == spans[1]["traceId"] == otel.trace_id_for("trial-1")
    int(spans[0]["traceId"], 16), int(spans[0]["spanId"], 16)
    assert otel.trace_id_for("trial-1") != otel.trace_id_for("trial-2")


def test_traces_url_and_headers() -> None:
    assert otel.traces_url({}) is None
    assert (
        otel.traces_url({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318/"})
        == "http://h:4318/v1/traces"
    )
    assert (
        otel.traces_url(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x",
            }
        )
        == "http://t/x"
    )
    headers = otel.export_headers({"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer t, x-a=b"})
    assert headers == {"content-type": "application/json", "authorization": "Bearer t", "x-a": "b"}


async def test_export_to_a_dead_collector_is_reported_not_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.support import free_port

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    problem = await otel.export(otel.trace_document([], "0" * 32, {}), timeout_sec=2)
    assert problem is not None and "/v1/traces" in problem


def _line(
    path: str, body: dict[str, object], status: int, answer: dict[str, object], **meta: object
) -> str:
    return json.dumps(
        {
            "request": {"path": path, "body": body},
            "response": {"status_code": status, "body": answer},
            "metadata": {"call_purpose": "agent", **meta},
        }
    )


def test_trials_requests_reads_every_wire_format(tmp_path: Path) -> None:
    trial = tmp_path / "runs" / "r1" / "trials" / "task__abc"
    (trial / "trajectory").mkdir(parents=True)
    lines = [
        _line(
            "/v1/messages",
            {
                "model": "claude-x",
                "max_tokens": 512,
                "thinking": {"type": "enabled", "budget_tokens": 1024},
            },
            200,
            {"model": "claude-x-2025", "stop_reason": "tool_use"},
        ),
        _line(
            "/v1/responses",
            {
                "model": "gpt-x",
                "reasoning": {"effort": "high"},
                "max_output_tokens": 99,
                "top_p": 0.5,
            },
            200,
            {"object": "response", "model": "gpt-x-1", "status": "completed"},
        ),
        _line(
            "/v1/chat/completions",
            {"model": "m", "temperature": 0},
            400,
            {"error": {"message": "no"}},
            refused=True,
        ),
    ]
    (trial / "trajectory" / "llm_trajectory.jsonl").write_text("\n".join(lines) + "\n")
    out = CliRunner().invoke(trials, ["requests", str(tmp_path)])
    assert out.exit_code == 0, out.output
    rows = [line.split() for line in out.output.splitlines()[1:]]
    assert rows == [
        [
            "task__abc",
            "1",
            "agent",
            "claude-x",
            "claude-x-2025",
            "budget:1024",
            "-",
            "-",
            "512",
            "200",
            "tool_use",
        ],
        [
            "task__abc",
            "2",
            "agent",
            "gpt-x",
            "gpt-x-1",
            "high",
            "-",
            "0.5",
            "99",
            "200",
            "completed",
        ],
        ["task__abc", "3", "agent", "m", "-", "-", "0", "-", "-", "400", "refused", "error"],
    ]


def test_trials_commands_name_what_is_missing(tmp_path: Path) -> None:
    runner = CliRunner()
    empty = runner.invoke(trials, ["requests", str(tmp_path)])
    assert empty.exit_code == 0 and "no model calls recorded" in empty.output
    missing = runner.invoke(trials, ["show", str(tmp_path)])
    assert isinstance(missing.exception, ValueError)
    assert "no result.json" in str(missing.exception)
    gone = runner.invoke(trials, ["show", str(tmp_path / "nope")])
    assert isinstance(gone.exception, ValueError)


def test_cost_cap_on_an_unpriced_model_refuses_with_a_reason(tmp_path: Path) -> None:
    from worker.usage.session import ModelRoute, ProxySession, UsageCaps

    session = ProxySession(
        "t", ModelRoute("openai/no-such-model-xyz"), UsageCaps(max_cost_usd=1.0), tmp_path
    )
    assert "cannot be enforced" in (session.check_limits() or "")
    tokens = ProxySession(
        "t", ModelRoute("openai/gpt-4o-mini"), UsageCaps(max_tokens=100), tmp_path
    )
    assert tokens.check_limits() is None
    tokens.totals.add(TokenUsage(90, 10), None)
    assert "--max-tokens 100: 100 tokens used" in (tokens.check_limits() or "")
