"""Agent-under-test start-up: configuration errors are one line; secrets never leave the process."""

from __future__ import annotations

import asyncio
import io
import logging
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from purple_agent.config import load_config
from purple_agent.redact import MASK, RedactingFilter, Redactor
from tests.purple_agent.support import BridgeClient, FakeModel, serving, spawned
from tests.support import REPO_ROOT
from worker.bridge.protocol import ActionResult, ActionResultMessage, ExecAction, ShellContext

KEY = "sk-test-aut-key-0123456789abcdef"
OTHER_KEY = "ant-other-provider-secret-value-42"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "SKILLSBENCH_AGENT_HARNESS is not set; choose one of openhands, opencode"),
        (
            {"SKILLSBENCH_AGENT_HARNESS": "cursor"},
            "SKILLSBENCH_AGENT_HARNESS='cursor' is not supported",
        ),
        (
            {
                "SKILLSBENCH_AGENT_HARNESS": "minimal",
                "SKILLSBENCH_AGENT_BASE_URL": "localhost:4000",
            },
            "SKILLSBENCH_AGENT_BASE_URL must be an http(s) URL",
        ),
        (
            {"SKILLSBENCH_AGENT_HARNESS": "codex", "SKILLSBENCH_AGENT_TIMEOUT_SEC": "soon"},
            "SKILLSBENCH_AGENT_TIMEOUT_SEC='soon' is not a number",
        ),
        (
            {"SKILLSBENCH_AGENT_HARNESS": "pi", "SKILLSBENCH_AGENT_TIMEOUT_SEC": "-5"},
            "SKILLSBENCH_AGENT_TIMEOUT_SEC must be positive",
        ),
        (
            {"SKILLSBENCH_AGENT_HARNESS": "minimal", "SKILLSBENCH_AGENT_MAX_TURNS": "2.5"},
            "SKILLSBENCH_AGENT_MAX_TURNS='2.5' is not a whole number",
        ),
    ],
)
def test_bad_configuration_is_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        load_config(env)


def test_manifest_style_configuration() -> None:
    cfg = load_config(
        {
            "SKILLSBENCH_AGENT_HARNESS": "opencode",
            "SKILLSBENCH_AGENT_MODEL": "deepseek-chat",
            "SKILLSBENCH_AGENT_PROVIDER": "deepseek",
            "SKILLSBENCH_AGENT_TIMEOUT_SEC": "1800",
            "SKILLSBENCH_AGENT_API_KEY": KEY,
        }
    )
    assert cfg.litellm_model == "deepseek/deepseek-chat"
    assert cfg.timeout_sec == 1800.0
    assert cfg.provider_env({}) == {"DEEPSEEK_API_KEY": KEY}
    assert cfg.provider_env({"DEEPSEEK_API_KEY": "own"}) == {}  # an explicit key wins
    assert KEY not in repr(cfg) and KEY not in cfg.model_dump_json()


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "purple_agent.agent_under_test"],
        ["-m", "skillsbench_agentbeats", "purple", "agent-under-test"],
    ],
)
def test_cli_fails_at_start_with_one_line(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, *argv, "--host", "127.0.0.1", "--port", "9"],
        cwd=REPO_ROOT,
        env={"PATH": "/usr/bin:/bin", "SKILLSBENCH_AGENT_HARNESS": "cursor"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: SKILLSBENCH_AGENT_HARNESS='cursor' is not supported")


def test_log_filter_masks_values_patterns_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter(Redactor([KEY])))
    logger = logging.getLogger("test.redact")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("key %s", KEY)
        logger.warning("Authorization: Bearer abcdefghijklmnopqrstuvwxyz")
        logger.warning('{"api_key": "a-plain-secret-value"} and AIzaSyA1234567890abcdefghijklmnop')
        try:
            raise RuntimeError(f"failed with {KEY}")
        except RuntimeError:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    for secret in (KEY, "abcdefghijklmnopqrstuvwxyz", "a-plain-secret-value", "AIzaSyA123"):
        assert secret not in text
    assert text.count(MASK) >= 5
    assert "RuntimeError" in text  # the traceback is kept, only masked


async def test_secrets_stay_out_of_logs_card_and_replies(tmp_path: Path) -> None:
    """A leaky model: a command that carries a key, then an error that quotes the other one."""
    model = FakeModel(
        [
            {"shell": f"curl -H 'x-api-key: {OTHER_KEY}' http://example.invalid"},
            {"status": 401, "error": f"Incorrect API key provided: {KEY}"},
        ]
    )
    async with serving(lambda _url: model.app()) as model_url:
        env = {
            "SKILLSBENCH_AGENT_HARNESS": "minimal",
            "SKILLSBENCH_AGENT_MODEL": "openai/fake-model",
            "SKILLSBENCH_AGENT_BASE_URL": f"{model_url}/v1",
            "SKILLSBENCH_AGENT_API_KEY": KEY,
            "ANTHROPIC_API_KEY": OTHER_KEY,
        }
        with spawned("purple_agent.agent_under_test", env, tmp_path / "aut.log") as agent:
            async with httpx.AsyncClient() as http:
                card = (await http.get(f"{agent.url}/.well-known/agent-card.json")).text
            async with BridgeClient(agent.url) as bridge:
                first = await bridge.send("Fetch it.", ShellContext(task_id="t").to_data())
                result = ActionResult(exit_code=0, stdout=f"echo {KEY}")
                second = await bridge.send(data=ActionResultMessage(action_result=result).to_data())
        log = agent.log()
    assert isinstance(first.action, ExecAction)
    assert first.action.command == f"curl -H 'x-api-key: {MASK}' http://example.invalid"
    assert second.state == "TASK_STATE_FAILED" and "AuthenticationError" in second.text
    assert model.auth_headers == [f"Bearer {KEY}"] * 2  # the provider did get the key
    assert "exec (turn 1)" in log and "model call failed" in log
    assert log.count(MASK) >= 2
    for text in (card, first.text, str(first.data), second.text, log):
        assert KEY not in text and OTHER_KEY not in text


async def test_start_up_loads_the_model_library_and_warns_without_a_key(tmp_path: Path) -> None:
    """No key: a warning at start naming the variables, not a silent start whose every task
    fails later; and litellm is imported before the card is served, not in the first turn."""
    keyless = {
        name: "" for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "SKILLSBENCH_AGENT_API_KEY")
    }
    env = {**keyless, "SKILLSBENCH_AGENT_HARNESS": "minimal", "SKILLSBENCH_AGENT_MODEL": "gemini/x"}
    with spawned("purple_agent.agent_under_test", env, tmp_path / "aut.log") as agent:
        log = agent.log()  # the card is served: the warning is already out
        assert "no model key for gemini/x: set SKILLSBENCH_AGENT_API_KEY or GEMINI_API_KEY" in log
        assert "every model call will fail" in log
        # The import runs beside the server, before any turn asks for it.
        deadline = time.monotonic() + 600
        while "model library loaded in" not in agent.log():
            assert time.monotonic() < deadline, agent.log()
            assert agent.proc.poll() is None, agent.log()
            await asyncio.sleep(0.2)


def test_a_key_or_a_gateway_url_is_enough() -> None:
    from pydantic import SecretStr

    from purple_agent.config import AgentConfig

    config = AgentConfig(harness="minimal", model="anthropic/claude-x")
    assert config.key_problem({}) is not None
    assert config.key_problem({"ANTHROPIC_API_KEY": "k"}) is None
    assert config.model_copy(update={"api_key": SecretStr("k")}).key_problem({}) is None
    gateway = config.model_copy(update={"base_url": "http://127.0.0.1:4000/v1"})
    assert gateway.key_problem({}) is None
