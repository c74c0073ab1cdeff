"""How each coding-agent CLI runs without a human: argv, variables and config files.

Every CLI talks to the agent's model gateway (:mod:`purple_agent.gateway`) in the protocol it
speaks, with a per-session token as its key, so the model the configuration names is reached
through litellm whatever the CLI's own provider list says: each CLI is told the provider id it
uses for that protocol (``openai`` for chat completions, a ``skillsbench`` custom provider where
the CLI needs one). The CLI's own state (config, sessions, logs) lives in a per-session ``home``
outside the workspace; nothing of it comes back as task output.

The facts per CLI (flags, variables, exit codes) are from running the versions in
:data:`VERIFIED` where PyPI carries them, and from their sources for the npm-only ones; see
docs/purple-agents.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Protocol = Literal["chat", "responses", "anthropic", "gemini"]
GATEWAY_KEY_ENV = "SKILLSBENCH_GATEWAY_KEY"  # the session token, for CLIs that name a variable


@dataclass(frozen=True)
class LaunchInput:
    """What a CLI is given for one task."""

    prompt: str
    model: str  # the configured model without its provider prefix
    gateway: str  # http://127.0.0.1:PORT
    token: str  # per-session key for the gateway (never a provider key)
    workdir: str  # the task's workspace as the CLI sees it (e.g. /root)
    skills: str | None  # the skills folder as the CLI sees it, if any
    home: str  # per-session home, outside the workspace


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    files: dict[str, str] = field(default_factory=dict)  # path relative to home -> content


@dataclass(frozen=True)
class CliSpec:
    program: str
    protocol: Protocol
    build: Callable[[LaunchInput], Launch]
    # exit codes the CLI documents as errors other than a plain non-zero, with their meaning
    exit_codes: Mapping[int, str] = field(default_factory=dict)
    verified: str | None = None  # the version run here, or None ("not run here")
    package: str = ""  # where the pinned version comes from


def _common(i: LaunchInput) -> dict[str, str]:
    return {
        "HOME": i.home,
        "XDG_CONFIG_HOME": f"{i.home}/.config",
        "XDG_CACHE_HOME": f"{i.home}/.cache",
        "XDG_DATA_HOME": f"{i.home}/.local/share",
        "XDG_STATE_HOME": f"{i.home}/.local/state",
        "TMPDIR": f"{i.home}/tmp",
        GATEWAY_KEY_ENV: i.token,
        "NO_COLOR": "1",
        "CI": "1",
    }


def openhands(i: LaunchInput) -> Launch:
    # Without --override-with-envs the LLM_* variables are ignored and, with no saved settings,
    # headless mode prints "Headless mode requires existing settings" and exits 0.
    return Launch(
        argv=["openhands", "--headless", "--override-with-envs", "-t", i.prompt],
        env={
            **_common(i),
            "LLM_MODEL": f"openai/{i.model}",
            "LLM_BASE_URL": f"{i.gateway}/v1",
            "LLM_API_KEY": i.token,
            "OPENHANDS_SUPPRESS_BANNER": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # else seconds fetching litellm's price map
        },
    )


def claude_code(i: LaunchInput) -> Launch:
    argv = ["claude", "-p", i.prompt, "--model", i.model, "--dangerously-skip-permissions"]
    argv.append("--no-session-persistence")
    if i.skills:
        argv += ["--add-dir", i.skills]
    return Launch(
        argv=argv,
        env={
            **_common(i),
            "ANTHROPIC_BASE_URL": i.gateway,  # Anthropic Messages: /v1/messages, x-api-key
            "ANTHROPIC_API_KEY": i.token,
            "ANTHROPIC_SMALL_FAST_MODEL": i.model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": i.model,
            "CLAUDE_CONFIG_DIR": f"{i.home}/.claude",
            "IS_SANDBOX": "1",  # as root, --dangerously-skip-permissions is refused without it
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
    )


def codex(i: LaunchInput) -> Launch:
    # The key variable is CODEX_API_KEY and the base URL a config value (the OPENAI_BASE_URL
    # variable was removed); a custom provider keeps it off the vendor's host. Responses only.
    config = "\n".join(
        [
            f"model = {json.dumps(i.model)}",
            'model_provider = "skillsbench"',
            'approval_policy = "never"',
            'sandbox_mode = "danger-full-access"',
            "",
            "[model_providers.skillsbench]",
            'name = "SkillsBench model gateway"',
            f"base_url = {json.dumps(i.gateway + '/v1')}",
            f'env_key = "{GATEWAY_KEY_ENV}"',
            'wire_api = "responses"',
            "request_max_retries = 1",
            "stream_max_retries = 1",
            "",
        ]
    )
    argv = [
        "codex",
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--ephemeral",
        "--cd",
        i.workdir,
        "--model",
        i.model,
    ]
    if i.skills:
        argv += ["--add-dir", i.skills]
    return Launch(
        argv=[*argv, i.prompt],
        env={**_common(i), "CODEX_HOME": f"{i.home}/.codex", "CODEX_API_KEY": i.token},
        files={".codex/config.toml": config},
    )


def terminus(i: LaunchInput) -> Launch:
    # --logs-dir defaults to terminus_logs/ in the working folder: keep it in the home.
    return Launch(
        argv=[
            "terminus",
            "--model",
            f"openai/{i.model}",
            "--api-base",
            f"{i.gateway}/v1",
            "--logs-dir",
            f"{i.home}/terminus_logs",
            "--working-dir",
            i.workdir,
            i.prompt,
        ],
        env={
            **_common(i),
            "OPENAI_API_KEY": i.token,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "TMUX_TMPDIR": f"{i.home}/tmp",
        },
    )


def opencode(i: LaunchInput) -> Launch:
    # No base-URL variable: a custom provider in OPENCODE_CONFIG_CONTENT. Every permission is
    # allowed in the config, since `run` rejects what would need asking.
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": f"skillsbench/{i.model}",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow",
                       "external_directory": "allow"},
        "provider": {
            "skillsbench": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "SkillsBench model gateway",
                "options": {"baseURL": f"{i.gateway}/v1", "apiKey": f"{{env:{GATEWAY_KEY_ENV}}}"},
                "models": {i.model: {"name": i.model}},
            }
        },
    }  # fmt: skip
    return Launch(
        argv=["opencode", "run", "--model", f"skillsbench/{i.model}", i.prompt],
        env={
            **_common(i),
            "OPENCODE_CONFIG_CONTENT": json.dumps(config),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        },
    )


def gemini_cli(i: LaunchInput) -> Launch:
    # Headless runs in an untrusted folder exit 55 (since 0.41.0); files outside the workspace
    # (the skills) need --include-directories.
    argv = ["gemini", "--yolo", "--model", i.model]
    if i.skills:
        argv += ["--include-directories", i.skills]
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
    }
    return Launch(
        argv=[*argv, "--prompt", i.prompt],
        env={
            **_common(i),
            "GEMINI_API_KEY": i.token,
            "GOOGLE_GEMINI_BASE_URL": i.gateway,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        },
        files={".gemini/settings.json": json.dumps(settings, indent=2)},
    )


def pi(i: LaunchInput) -> Launch:
    # A base URL needs a provider in models.json under PI_CODING_AGENT_DIR; the key may name a
    # variable.
    models = {
        "providers": {
            "skillsbench": {
                "baseUrl": f"{i.gateway}/v1",
                "api": "openai-completions",
                "apiKey": GATEWAY_KEY_ENV,
                "models": [{"id": i.model, "name": i.model}],
            }
        }
    }
    return Launch(
        argv=[
            "pi",
            "--print",
            "--no-session",
            "--offline",
            "--provider",
            "skillsbench",
            "--model",
            i.model,
            i.prompt,
        ],
        env={**_common(i), "PI_CODING_AGENT_DIR": f"{i.home}/.pi/agent"},
        files={".pi/agent/models.json": json.dumps(models, indent=2)},
    )


CLIS: dict[str, CliSpec] = {
    "openhands": CliSpec(
        "openhands", "chat", openhands, verified="1.16.0", package="PyPI openhands (Python 3.12)"
    ),
    "claude-code": CliSpec(
        "claude",
        "anthropic",
        claude_code,
        verified="2.1.332",
        package="PyPI claude-agent-sdk 0.2.189 (bundled claude)",
    ),
    "codex": CliSpec(
        "codex", "responses", codex, verified="0.163.0", package="PyPI openai-codex-cli-bin"
    ),
    "terminus": CliSpec(
        "terminus", "chat", terminus, verified="2.0.4", package="PyPI terminus-ai (Python 3.12)"
    ),
    "opencode": CliSpec("opencode", "chat", opencode, package="npm opencode-ai"),
    "gemini-cli": CliSpec(
        "gemini",
        "gemini",
        gemini_cli,
        exit_codes={
            41: "authentication error",
            42: "input error",
            44: "sandbox error",
            52: "configuration error",
            53: "turn limit reached",
            54: "tool execution error",
            55: "folder not trusted",
        },
        package="npm @google/gemini-cli",
    ),
    "pi": CliSpec("pi", "chat", pi, package="npm @mariozechner/pi-coding-agent"),
}
