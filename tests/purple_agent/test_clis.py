"""Each CLI's invocation as built: argv, variables and config files (no CLI is run here)."""

from __future__ import annotations

import json
import tomllib

import pytest

from purple_agent.clis import CLIS, GATEWAY_KEY_ENV, LaunchInput

TOKEN = "sk-skillsbench-session-0123456789abcdef"
GATEWAY = "http://127.0.0.1:43210"


def launch(name: str, skills: str | None = "/skills"):  # type: ignore[no-untyped-def]
    return CLIS[name].build(
        LaunchInput(
            prompt="Write /root/summary.json.",
            model="some-model",
            gateway=GATEWAY,
            token=TOKEN,
            workdir="/root",
            skills=skills,
            home="/sessions/s1/home",
        )
    )


@pytest.mark.parametrize("name", sorted(CLIS))
def test_every_cli_gets_the_prompt_model_and_a_private_home(name: str) -> None:
    got = launch(name)
    assert got.argv[0] == CLIS[name].program
    assert got.argv[-1] == "Write /root/summary.json." or "Write /root/summary.json." in got.argv
    assert any("some-model" in a for a in got.argv) or "some-model" in got.env.get("LLM_MODEL", "")
    assert got.env["HOME"] == "/sessions/s1/home"
    assert got.env["XDG_CONFIG_HOME"].startswith("/sessions/s1/home/")
    assert got.env[GATEWAY_KEY_ENV] == TOKEN
    assert TOKEN not in " ".join(got.argv)  # keys only in the environment or config files
    assert all(not path.startswith(("/", "..")) for path in got.files)


def test_openhands_reads_its_variables_only_with_override() -> None:
    got = launch("openhands")
    assert got.argv[:3] == ["openhands", "--headless", "--override-with-envs"]
    assert got.env["LLM_MODEL"] == "openai/some-model"
    assert got.env["LLM_BASE_URL"] == f"{GATEWAY}/v1"
    assert got.env["LLM_API_KEY"] == TOKEN
    assert got.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


def test_claude_speaks_anthropic_messages_and_runs_as_root() -> None:
    got = launch("claude-code")
    assert "--dangerously-skip-permissions" in got.argv and "--no-session-persistence" in got.argv
    assert got.argv[got.argv.index("--add-dir") + 1] == "/skills"
    assert got.env["ANTHROPIC_BASE_URL"] == GATEWAY  # claude adds /v1/messages itself
    assert got.env["ANTHROPIC_API_KEY"] == TOKEN
    assert got.env["IS_SANDBOX"] == "1"
    assert got.env["CLAUDE_CONFIG_DIR"] == "/sessions/s1/home/.claude"


def test_codex_uses_a_custom_responses_provider_and_keeps_no_session() -> None:
    got = launch("codex")
    assert {"--ephemeral", "--skip-git-repo-check"} <= set(got.argv)
    assert got.argv[got.argv.index("--cd") + 1] == "/root"
    assert got.env["CODEX_HOME"] == "/sessions/s1/home/.codex"
    assert got.env["CODEX_API_KEY"] == TOKEN
    config = tomllib.loads(got.files[".codex/config.toml"])
    assert config["model_provider"] == "skillsbench"
    provider = config["model_providers"]["skillsbench"]
    assert provider["base_url"] == f"{GATEWAY}/v1"
    assert provider["wire_api"] == "responses"
    assert provider["env_key"] == GATEWAY_KEY_ENV
    assert "OPENAI_BASE_URL" not in got.env


def test_terminus_gets_the_base_url_and_logs_outside_the_workspace() -> None:
    argv = launch("terminus").argv
    assert argv[argv.index("--api-base") + 1] == f"{GATEWAY}/v1"
    assert argv[argv.index("--model") + 1] == "openai/some-model"
    assert argv[argv.index("--logs-dir") + 1] == "/sessions/s1/home/terminus_logs"
    assert argv[argv.index("--working-dir") + 1] == "/root"


def test_opencode_config_names_a_gateway_provider_and_allows_every_permission() -> None:
    got = launch("opencode")
    assert got.argv[:4] == ["opencode", "run", "--model", "skillsbench/some-model"]
    config = json.loads(got.env["OPENCODE_CONFIG_CONTENT"])
    provider = config["provider"]["skillsbench"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"]["baseURL"] == f"{GATEWAY}/v1"
    assert provider["options"]["apiKey"] == f"{{env:{GATEWAY_KEY_ENV}}}"
    assert set(config["permission"].values()) == {"allow"}
    assert got.env["OPENCODE_DISABLE_AUTOUPDATE"] == got.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"


def test_gemini_cli_trusts_the_workspace_and_includes_the_skills() -> None:
    got = launch("gemini-cli")
    assert got.env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    assert got.env["GOOGLE_GEMINI_BASE_URL"] == GATEWAY
    assert got.env["GEMINI_API_KEY"] == TOKEN
    assert got.argv[got.argv.index("--include-directories") + 1] == "/skills"
    assert "--include-directories" not in launch("gemini-cli", skills=None).argv
    assert CLIS["gemini-cli"].exit_codes[55] == "folder not trusted"
    settings = json.loads(got.files[".gemini/settings.json"])
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"


def test_pi_has_a_models_json_provider_and_no_session() -> None:
    got = launch("pi")
    assert {"--print", "--no-session", "--offline"} <= set(got.argv)
    assert got.argv[got.argv.index("--provider") + 1] == "skillsbench"
    assert got.env["PI_CODING_AGENT_DIR"] == "/sessions/s1/home/.pi/agent"
    models = json.loads(got.files[".pi/agent/models.json"])
    provider = models["providers"]["skillsbench"]
    assert provider["baseUrl"] == f"{GATEWAY}/v1"
    assert provider["api"] == "openai-completions"
    assert provider["apiKey"] == GATEWAY_KEY_ENV
    assert provider["models"] == [{"id": "some-model", "name": "some-model"}]
