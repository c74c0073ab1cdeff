"""What a trial records about its model calls: one ``llm_trajectory.jsonl`` line per call, the
normalized token counts, the trial's totals, and the redaction rules every record goes through.

Token convention (OpenAI's, as BenchFlow's ``agent_result``): ``input`` includes the tokens read
from or written to the cache, so ``total = input + output`` whatever the wire format said.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

# participant_reported: what a remote participant said about its own calls (worker/usage/
# participant.py); never trusted, never added to what the worker measured.
UsageSource = Literal[
    "provider_response", "agent_native_acp", "participant_reported", "unavailable"
]
UsageTracking = Literal["auto", "required", "off"]
TRUSTED_SOURCES: Final = ("provider_response", "agent_native_acp")

# Names that look secret (BenchFlow's list, and a few more) and values that look like credentials.
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSWD|AUTH|SESSION|COOKIE|CREDENTIAL|PRIVATE|SIGNATURE|BEARER|PWD",
    re.IGNORECASE,
)
_CREDENTIAL_VALUE = re.compile(
    r"^(?:sk-|sk_|pk_|rk_|xox[abpr]-|gh[pousr]_|github_pat_|glpat-|AKIA|ASIA|AIza|ya29\.|hf_|"
    r"eyJ[A-Za-z0-9_-]{8,}\.|Bearer\s)|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
_SECRET_HEADERS: Final = frozenset(
    {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie", "set-cookie"}
)
REDACTED: Final = "[redacted]"


def looks_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def looks_like_credential(value: str) -> bool:
    text = value.strip()
    if _CREDENTIAL_VALUE.search(text):
        return True
    # A long unbroken run of key-ish characters (a random token) with letters and digits.
    return (
        len(text) >= 32
        and re.fullmatch(r"[A-Za-z0-9_\-+/=.]+", text) is not None
        and re.search(r"\d", text) is not None
        and re.search(r"[A-Za-z]", text) is not None
        and "/" not in text.strip("/")
    )


def public_agent_env(env: Mapping[str, str]) -> dict[str, str]:
    """``--agent-env`` as config.json keeps it: without secret-looking names or values."""
    return {
        name: value
        for name, value in sorted(env.items())
        if not looks_secret_name(name) and not looks_like_credential(value)
    }


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {
        k: (REDACTED if k.lower() in _SECRET_HEADERS or looks_secret_name(k) else v)
        for k, v in headers.items()
    }


def redact(value: Any, secrets: tuple[str, ...] = ()) -> Any:
    """A copy of a JSON value with credential-looking strings and known secrets masked."""
    if isinstance(value, dict):
        return {
            k: (
                REDACTED
                if looks_secret_name(str(k)) and isinstance(v, str) and v
                else redact(v, secrets)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            if secret and len(secret) >= 4:
                value = value.replace(secret, REDACTED)
        return REDACTED if _CREDENTIAL_VALUE.match(value.strip()) else value
    return value


@dataclass(frozen=True)
class TokenUsage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_creation + other.cache_creation,
            self.reasoning + other.reasoning,
        )

    def as_openai(self) -> dict[str, int]:
        """The line's ``usage`` as BenchFlow records it (OpenAI names)."""
        return {
            "prompt_tokens": self.input,
            "completion_tokens": self.output,
            "total_tokens": self.total,
            "cached_tokens": self.cache_read,
            "cache_creation_tokens": self.cache_creation,
            "reasoning_tokens": self.reasoning,
        }

    @classmethod
    def from_openai(cls, usage: Mapping[str, Any] | None) -> TokenUsage | None:
        """Chat completions (``prompt_tokens``…) or responses (``input_tokens``…) usage."""
        if not usage:
            return None
        prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
        completion = _int(usage.get("completion_tokens", usage.get("output_tokens")))
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
        out_details = (
            usage.get("completion_tokens_details") or usage.get("output_tokens_details") or {}
        )
        return cls(
            input=prompt,
            output=completion,
            cache_read=_int(details.get("cached_tokens") if isinstance(details, dict) else 0),
            cache_creation=_int(usage.get("cache_creation_input_tokens")),
            reasoning=_int(
                out_details.get("reasoning_tokens") if isinstance(out_details, dict) else 0
            ),
        )

    @classmethod
    def from_anthropic(cls, usage: Mapping[str, Any] | None) -> TokenUsage | None:
        """Anthropic counts cache reads and writes apart from ``input_tokens``."""
        if not usage:
            return None
        read = _int(usage.get("cache_read_input_tokens"))
        created = _int(usage.get("cache_creation_input_tokens"))
        return cls(
            input=_int(usage.get("input_tokens")) + read + created,
            output=_int(usage.get("output_tokens")),
            cache_read=read,
            cache_creation=created,
        )

    @classmethod
    def from_acp(cls, usage: Mapping[str, Any] | None) -> TokenUsage | None:
        """ACP ``PromptResponse.usage`` (camelCase on the wire, snake_case from the SDK)."""
        if not usage:
            return None

        def get(snake: str, camel: str) -> int:
            return _int(usage.get(snake, usage.get(camel)))

        return cls(
            input=get("input_tokens", "inputTokens"),
            output=get("output_tokens", "outputTokens"),
            cache_read=get("cached_read_tokens", "cachedReadTokens"),
            cache_creation=get("cached_write_tokens", "cachedWriteTokens"),
            reasoning=get("thought_tokens", "thoughtTokens"),
        )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and value > 0 else 0


@dataclass
class UsageTotals:
    """A trial's sums; cost stays None as soon as one priced call lacked a price."""

    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float | None = None
    n_calls: int = 0
    n_counted: int = 0  # calls whose usage the provider reported
    n_unpriced: int = 0

    def add(self, usage: TokenUsage | None, cost: float | None) -> None:
        self.n_calls += 1
        if usage is None:
            return
        self.n_counted += 1
        self.usage = self.usage + usage
        if cost is None:
            self.n_unpriced += 1
        else:
            self.cost_usd = (self.cost_usd or 0.0) + cost

    @property
    def priced(self) -> bool:
        return self.n_counted > 0 and self.n_unpriced == 0 and self.cost_usd is not None


def agent_result_fields(
    usage: TokenUsage | None,
    cost_usd: float | None,
    usage_source: UsageSource,
    price_source: Literal["litellm"] | None,
) -> dict[str, Any]:
    """The usage half of result.json's ``agent_result`` (BenchFlow's field names)."""
    if usage is None or usage_source == "unavailable":
        return {
            "n_input_tokens": None,
            "n_output_tokens": None,
            "n_cache_read_tokens": None,
            "n_cache_creation_tokens": None,
            "total_tokens": None,
            "cost_usd": None,
            "usage_source": "unavailable",
            "price_source": None,
        }
    return {
        "n_input_tokens": usage.input,
        "n_output_tokens": usage.output,
        "n_cache_read_tokens": usage.cache_read,
        "n_cache_creation_tokens": usage.cache_creation,
        "total_tokens": usage.total,
        "cost_usd": round(cost_usd, 10) if cost_usd is not None else None,
        "usage_source": usage_source,
        "price_source": price_source if cost_usd is not None else None,
    }


def cost_summary(agent_result: Mapping[str, Any] | None, *, calls_model: bool) -> str:
    """The run summary's cost line for one trial (or a job's sums)."""
    if not calls_model:
        return "none: no model tokens were used"
    if not agent_result or agent_result.get("usage_source") in (None, "unavailable"):
        return "not recorded (usage unavailable: treat tokens and cost as missing, not zero)"
    if agent_result.get("usage_source") == "participant_reported":
        return _participant_cost(agent_result)
    tokens = agent_result.get("total_tokens") or 0
    cost = agent_result.get("cost_usd")
    if cost is None:
        return (
            "not reported in USD (subscription logins and unpriced models report tokens only), "
            f"{tokens:,} tokens"
        )
    return f"${cost:.4f}, {tokens:,} tokens"


def _participant_cost(agent_result: Mapping[str, Any]) -> str:
    """Reported by the participant, not measured: say so, and say what stays unknown."""
    tokens = agent_result.get("total_tokens")
    cost = agent_result.get("cost_usd")
    said = [
        "not reported in USD" if cost is None else f"${cost:.4f}",
        "tokens unknown" if tokens is None else f"{tokens:,} tokens",
    ]
    return ", ".join(said) + " (reported by the participant, not measured by the worker)"
