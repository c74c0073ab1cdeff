"""The record of one model call: a line in the trial's ``llm_trajectory.jsonl``, a span, totals."""

from __future__ import annotations

import json
import time
from typing import Any, Final

from starlette.requests import Request

from worker.usage.pricing import price_usd
from worker.usage.records import TokenUsage, redact, redact_headers
from worker.usage.session import CallSpan, ProxySession

PURPOSE_HEADER: Final = "x-skillsbench-call-purpose"


class CallRecord:
    """One request through the proxy: its timing, the line it leaves in llm_trajectory.jsonl, its
    span, and the session's totals."""

    def __init__(
        self, session: ProxySession, request: Request, body: dict[str, Any], call_type: str
    ) -> None:
        self.session = session
        self.body = body
        self.call_type = call_type
        self.path = request.url.path
        self.method = request.method
        self.headers = dict(request.headers)
        self.purpose = (
            self.headers.get(PURPOSE_HEADER)
            or str((body.get("metadata") or {}).get("call_purpose") or "")
            or "agent"
        )
        self.started_at = time.time()
        self.start_ns = time.time_ns()
        self.t0 = time.monotonic()
        self.done = False

    def litellm_kwargs(self) -> dict[str, Any]:
        route = self.session.route
        kwargs = {k: v for k, v in self.body.items() if k not in ("model", "metadata", "user")}
        kwargs["model"] = route.model
        if route.api_base:
            kwargs["api_base"] = route.api_base
        if route.api_key:
            kwargs["api_key"] = route.api_key
        return kwargs

    def finish(
        self,
        status: int,
        answer: dict[str, Any],
        usage: TokenUsage | None,
        *,
        refused: bool = False,
        error: str | None = None,
    ) -> None:
        if self.done:
            return
        self.done = True
        session = self.session
        duration = time.monotonic() - self.t0
        if not refused:
            session.provider_wait_sec += duration
        cost = None
        if usage is not None:
            cost = price_usd(
                session.route.model,
                prompt_tokens=usage.input,
                completion_tokens=usage.output,
                cache_read_tokens=usage.cache_read,
                cache_creation_tokens=usage.cache_creation,
            )
        if not refused:
            session.totals.add(usage, cost)
        secrets_ = session.secrets()
        provider_model = answer.get("model")
        metadata = {
            "request_model": self.body.get("model"),
            "provider_model": provider_model,
            "route_model": session.route.model,
            "call_type": self.call_type,
            "call_purpose": self.purpose,
            "usage_source": "provider_response" if usage is not None else None,
            "cost_usd": cost,
            "price_source": "litellm" if cost is not None else None,
            "refused": refused,
            "error": error,
        }
        line = {
            "request": {
                "timestamp": self.started_at,
                "method": self.method,
                "path": self.path,
                "headers": redact_headers(self.headers),
                "body": redact(self.body, secrets_),
            },
            "response": {
                "timestamp": time.time(),
                "status_code": status,
                "body": redact(answer, secrets_),
            },
            "duration_ms": round(duration * 1000, 1),
            "usage": usage.as_openai() if usage else None,
            "metadata": redact(metadata, secrets_),
        }
        if session.keep_calls:
            with session.log_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        session.spans.append(
            CallSpan(
                name=f"model call {self.call_type}",
                start_ns=self.start_ns,
                end_ns=time.time_ns(),
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": str(self.body.get("model")),
                    "gen_ai.response.model": str(provider_model or ""),
                    "gen_ai.usage.input_tokens": usage.input if usage else 0,
                    "gen_ai.usage.output_tokens": usage.output if usage else 0,
                    "skillsbench.call_purpose": self.purpose,
                    "http.response.status_code": status,
                    "skillsbench.refused": refused,
                },
                error=error or (session.limit_message if refused else None),
            )
        )
