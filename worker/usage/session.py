"""One trial's use of the model proxy: its key, model route, usage caps, totals and spans."""

from __future__ import annotations

import asyncio
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from worker.usage.pricing import price_usd
from worker.usage.records import UsageTotals

KEY_PREFIX: Final = "sk-skillsbench-"
# Keys litellm reads from the worker's environment; their values are masked in every record.
_PROVIDER_KEY_SUFFIXES: Final = ("_API_KEY", "_AUTH_TOKEN")


@dataclass(frozen=True)
class ModelRoute:
    """Where a trial's calls go: a litellm model name, and optionally its endpoint and key
    (otherwise litellm's own environment variables, e.g. OPENAI_API_KEY, apply)."""

    model: str
    api_base: str | None = None
    api_key: str | None = None

    @classmethod
    def from_env(cls, model: str) -> ModelRoute:
        return cls(
            model,
            api_base=os.environ.get("SKILLSBENCH_MODEL_API_BASE") or None,
            api_key=os.environ.get("SKILLSBENCH_MODEL_API_KEY") or None,
        )


@dataclass(frozen=True)
class UsageCaps:
    """A trial's token and cost caps (``--max-tokens``, ``--max-cost-usd``), enforced by the proxy.

    Not the participant protocol's ``Limits`` (turn and output limits the bridge announces)."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None


@dataclass
class CallSpan:
    """One model call, for the trial's OTLP spans."""

    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: str | None = None


@dataclass
class ProxySession:
    """One trial's use of the proxy."""

    trial_id: str
    route: ModelRoute
    caps: UsageCaps
    log_path: Path
    key: str = field(default_factory=lambda: KEY_PREFIX + secrets.token_urlsafe(24))
    totals: UsageTotals = field(default_factory=UsageTotals)
    provider_wait_sec: float = 0.0
    spans: list[CallSpan] = field(default_factory=list)
    limit_message: str | None = None
    limit_reached: asyncio.Event = field(default_factory=asyncio.Event)
    n_refused: int = 0
    keep_calls: bool = True

    def check_limits(self) -> str | None:
        """Why the next call must be refused, or None."""
        used = self.totals.usage.total
        cap = self.caps.max_tokens
        if cap is not None and used >= cap:
            return f"the trial's token budget is used up (--max-tokens {cap}: {used} tokens used)"
        spend = self.caps.max_cost_usd
        if spend is not None:
            unpriced = price_usd(self.route.model, prompt_tokens=1, completion_tokens=1) is None
            if unpriced or self.totals.n_unpriced:
                return (
                    f"--max-cost-usd {spend} cannot be enforced: model {self.route.model!r} has "
                    "no known price (cap it with --max-tokens instead)"
                )
            cost = self.totals.cost_usd or 0.0
            if cost >= spend:
                return f"the trial's cost budget is used up (--max-cost-usd {spend}: ${cost:.6f} spent)"
        return None

    def secrets(self) -> tuple[str, ...]:
        found = [self.key, self.route.api_key or ""]
        found += [
            v for k, v in os.environ.items() if k.endswith(_PROVIDER_KEY_SUFFIXES) and len(v) >= 8
        ]
        return tuple(s for s in found if s)
