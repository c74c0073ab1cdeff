"""Agent-under-test configuration, read from the environment the published Amber manifest sets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, get_args
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, SecretStr

Harness = Literal[
    "openhands", "opencode", "claude-code", "codex", "gemini-cli", "terminus", "pi", "minimal"
]
HARNESSES: tuple[str, ...] = get_args(Harness)
DEFAULT_MODEL = "gemini/gemini-3.5-flash"
DEFAULT_TIMEOUT_SEC = 1800.0
DEFAULT_MAX_TURNS = 50
DEFAULT_MAX_TOKENS = 2_000_000

# provider hint -> the variable its SDKs and CLIs read; SKILLSBENCH_AGENT_API_KEY fills it when unset
PROVIDER_KEY_VARS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "qwen": ("QWEN_API_KEY", "DASHSCOPE_API_KEY"),
    "dashscope": ("DASHSCOPE_API_KEY", "QWEN_API_KEY"),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "minimax": ("MINIMAX_API_KEY",),
    "glm": ("GLM_API_KEY", "ZAI_API_KEY"),
    "zai": ("ZAI_API_KEY", "GLM_API_KEY"),
    "kimi": ("KIMI_API_KEY", "MOONSHOT_API_KEY"),
    "moonshot": ("MOONSHOT_API_KEY", "KIMI_API_KEY"),
    "xiaomi": ("XIAOMI_API_KEY",),
    "doubao": ("DOUBAO_API_KEY", "ARK_API_KEY"),
    "hunyuan": ("HUNYUAN_API_KEY",),
}

ENV_PREFIX = "SKILLSBENCH_AGENT_"


class AgentConfig(BaseModel):
    """Validated configuration; ``api_key`` is a SecretStr so it never prints by accident."""

    model_config = ConfigDict(frozen=True)

    harness: Harness
    model: str = DEFAULT_MODEL
    provider: str | None = None
    base_url: str | None = None
    timeout_sec: float = Field(default=DEFAULT_TIMEOUT_SEC, gt=0)
    api_key: SecretStr | None = None
    command: str | None = None
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, gt=0)
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, gt=0)

    @property
    def provider_name(self) -> str | None:
        """The provider hint, else the prefix of ``provider/model``."""
        if self.provider:
            return self.provider.lower()
        return self.model.split("/", 1)[0].lower() if "/" in self.model else None

    @property
    def litellm_model(self) -> str:
        """``provider/model`` as litellm routes it."""
        if self.provider and "/" not in self.model:
            return f"{self.provider}/{self.model}"
        return self.model

    def key_problem(self, environ: Mapping[str, str]) -> str | None:
        """Why no model key will reach the provider, or None (a key is set, or a base URL names
        a gateway that may need none)."""
        if self.api_key is not None or self.base_url is not None:
            return None
        names = PROVIDER_KEY_VARS.get(self.provider_name or "", ("OPENAI_API_KEY",))
        if any(environ.get(name) for name in names):
            return None
        return f"no model key for {self.litellm_model}: set {ENV_PREFIX}API_KEY or " + " / ".join(
            names
        )

    def provider_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        """Provider key variables to add to a harness's environment (only those not already set)."""
        if self.api_key is None:
            return {}
        names = PROVIDER_KEY_VARS.get(self.provider_name or "", ("OPENAI_API_KEY",))
        return {n: self.api_key.get_secret_value() for n in names if not environ.get(n)}


def load_config(environ: Mapping[str, str] | None = None) -> AgentConfig:
    """Read ``SKILLSBENCH_AGENT_*``; raises ``ValueError`` with one line naming the bad variable."""
    env = os.environ if environ is None else environ

    def get(name: str) -> str | None:
        value = env.get(ENV_PREFIX + name, "").strip()
        return value or None

    harness = get("HARNESS")
    if harness is None:
        raise ValueError(f"{ENV_PREFIX}HARNESS is not set; choose one of {', '.join(HARNESSES)}")
    if harness not in HARNESSES:
        raise ValueError(
            f"{ENV_PREFIX}HARNESS={harness!r} is not supported; choose one of {', '.join(HARNESSES)}"
        )
    base_url = get("BASE_URL")
    if base_url is not None:
        parsed = urlparse(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"{ENV_PREFIX}BASE_URL must be an http(s) URL, got {base_url!r}")
    provider = get("PROVIDER")
    if provider is not None and not provider.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"{ENV_PREFIX}PROVIDER={provider!r} is not a provider name")
    model = get("MODEL") or DEFAULT_MODEL
    if any(c.isspace() for c in model):
        raise ValueError(f"{ENV_PREFIX}MODEL={model!r} must not contain spaces")
    api_key = get("API_KEY")
    return AgentConfig(
        harness=harness,
        model=model,
        provider=provider,
        base_url=base_url,
        timeout_sec=_positive(env, "TIMEOUT_SEC", DEFAULT_TIMEOUT_SEC, float),
        api_key=SecretStr(api_key) if api_key else None,
        command=get("COMMAND"),
        max_turns=int(_positive(env, "MAX_TURNS", DEFAULT_MAX_TURNS, int)),
        max_tokens=int(_positive(env, "MAX_TOKENS", DEFAULT_MAX_TOKENS, int)),
    )


def _positive(env: Mapping[str, str], name: str, default: float, kind: type) -> float:
    raw = env.get(ENV_PREFIX + name, "").strip()
    if not raw:
        return default
    try:
        value = float(kind(raw))
    except ValueError:
        raise ValueError(
            f"{ENV_PREFIX}{name}={raw!r} is not a {'number' if kind is float else 'whole number'}"
        ) from None
    if value <= 0:
        raise ValueError(f"{ENV_PREFIX}{name} must be positive, got {raw!r}")
    return value
