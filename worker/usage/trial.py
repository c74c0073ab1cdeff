"""Usage accounting for one trial: whether the agent gets the model proxy, the provider variables
it gets, the caps that end its turn, and what result.json, timing.json, config.json and the trace
say about tokens, cost and time.

The trial lifecycle calls this in four places (config, agent run, enforcement, finish); everything
else about usage lives in this package.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from worker.agents.base import Agent, AgentContext, AgentOutcome
from worker.api import UsageSettings
from worker.core.failures import FailureKind
from worker.sandbox.base import SandboxError, sandbox_class
from worker.trial_record.jsonl import json_lines
from worker.trial_record.paths import ACP_TRAJECTORY_FILE
from worker.usage import forward, otel, participant
from worker.usage.proxy import ModelProxy, shared_proxy
from worker.usage.records import (
    TRUSTED_SOURCES,
    TokenUsage,
    UsageSource,
    agent_result_fields,
    cost_summary,
    public_agent_env,
)
from worker.usage.session import ModelRoute, ProxySession, UsageCaps

log = logging.getLogger(__name__)

ModelAccess = Literal["proxy", "none", "external"]
PROVIDER_VARS: Final = ("PROVIDER_BASE_URL", "PROVIDER_API_KEY", "PROVIDER_MODEL")
LIMIT_GRACE_SEC: Final = 5.0  # time the agent gets to end its turn itself after a refusal
PhaseSpan = tuple[str, int, int]  # (phase, start ns, end ns)


def model_access(agent: Agent, model: str | None = None) -> ModelAccess:
    """``proxy`` for manifest agents that take their model from us (a model was given, or the
    manifest declares model use: ``default_model``, ``api_protocol`` or provider variables in
    ``env_mapping``); ``none`` for agents that call no model (oracle, nop, script, a manifest
    with ``model_route = "agent"`` or declaring no model use); ``external`` for a remote
    participant, whose model calls we never see."""
    if agent.kind == "acp":
        entry = getattr(agent, "entry", None)
        manifest = entry().manifest if callable(entry) else None
        if manifest is None:
            return "proxy"
        if manifest.model_route == "agent":
            return "none"
        declares = (
            manifest.default_model
            or manifest.api_protocol
            or any("_PROVIDER_" in name for name in manifest.env_mapping)
        )
        return "proxy" if model or declares else "none"
    if agent.kind == "a2a":
        return "external"
    return "none"


def _default_model(agent: Agent) -> str | None:
    entry = getattr(agent, "entry", None)
    with contextlib.suppress(Exception):
        return entry().manifest.default_model if callable(entry) else None
    return None


def _api_protocol(agent: Agent) -> str | None:
    entry = getattr(agent, "entry", None)
    with contextlib.suppress(Exception):
        return entry().manifest.api_protocol if callable(entry) else None
    return None


def check_model(agent: Agent, model: str | None) -> None:
    """Refuse a run up front when an agent needs a model and none is given or defaulted."""
    if model is None and model_access(agent, model) == "proxy" and not _default_model(agent):
        raise ValueError(f"agent {agent.spec!r} has no default model; pass --model (-m)")


class TrialUsage:
    def __init__(
        self, agent: Agent, settings: UsageSettings | None, trial_id: str, environment: str
    ) -> None:
        self.agent = agent
        self.settings = settings or UsageSettings()
        self.trial_id = trial_id
        self.environment = environment
        self.backend = sandbox_class(environment)
        try:
            self.access: ModelAccess = model_access(agent, self.settings.model)
        except Exception:  # an unknown manifest: the agent itself reports that
            self.access = "proxy"
        self.model = self.settings.model or (
            _default_model(agent) if self.access == "proxy" else None
        )
        self.session: ProxySession | None = None
        self.native: TokenUsage | None = None
        self.participant: dict[str, Any] | None = None  # the bridge's sum of reported usage
        self.limit_message: str | None = None
        self.setup_error: str | None = None
        self._trace: dict[str, Any] | None = None

    @property
    def uses_proxy(self) -> bool:
        return self.access == "proxy"

    def needs_host_network(self) -> bool:
        """Whether the sandbox must get a network to reach the proxy: not when it reaches host
        sockets (the local sandbox) and has a python3 to run the forwarder; else it reaches the
        proxy at the backend's host address (docker: the bridge gateway; local: loopback)."""
        if not self.uses_proxy:
            return False
        return not (self.backend.reaches_host_sockets() and _host_python3() is not None)

    def config_fields(self) -> dict[str, Any]:
        s = self.settings
        return {
            "model": self.model,
            "model_access": self.access,
            "usage_tracking": s.usage_tracking,
            "max_tokens": s.max_tokens,
            "max_cost_usd": s.max_cost_usd,
            "agent_env": public_agent_env(s.agent_env),
        }

    # -- the agent's turn ------------------------------------------------------------------

    async def run_agent(
        self, run: Callable[[AgentContext], Awaitable[AgentOutcome]], ctx: AgentContext
    ) -> AgentOutcome:
        """The agent's turn with its model access set up, ended early when a cap is hit."""
        ctx.env = {**self.settings.agent_env, **ctx.env}
        ctx.model = self.model  # also sent over ACP (session/set_model) to manifest agents
        if not self.uses_proxy:
            outcome = await run(ctx)
            self.participant = participant.tally_from_details(outcome.details)
            return outcome
        if not self.model:
            self.setup_error = f"agent {self.agent.spec!r} has no default model; pass --model (-m)"
            return AgentOutcome("failed", FailureKind.AGENT_LAUNCH, self.setup_error)
        proxy = await shared_proxy()
        if self.backend.reaches_host_sockets() and not ctx.sandbox.spec.internet:
            try:
                base, ctx.launch_prefix = await _forwarder(proxy, ctx)
            except (OSError, SandboxError) as exc:
                self.setup_error = f"model proxy unreachable from the sandbox: {exc}"
                return AgentOutcome("failed", FailureKind.AGENT_LAUNCH, self.setup_error)
        else:
            try:
                host = await self.backend.host_address()
                if host != proxy.host:
                    await proxy.listen(host)
            except Exception as exc:  # docker SDK errors are no OSError
                self.setup_error = f"model proxy unreachable from the sandbox: {exc}"
                return AgentOutcome("failed", FailureKind.AGENT_LAUNCH, self.setup_error)
            base = proxy.base_url(host)
        s = self.settings
        session = proxy.open_session(
            self.trial_id,
            ModelRoute.from_env(self.model),
            UsageCaps(s.max_tokens, s.max_cost_usd),
            ctx.trial_dir,
            keep_calls=s.usage_tracking != "off",
        )
        self.session = session
        if _api_protocol(self.agent) != "anthropic-messages":
            base += "/v1"
        provider = dict(zip(PROVIDER_VARS, (base, session.key, self.model), strict=True))
        ctx.env = {
            **ctx.env,
            **{f"BENCHFLOW_{k}": v for k, v in provider.items()},
            **{f"RUNTIME_{k}": v for k, v in provider.items()},
        }
        task = asyncio.ensure_future(run(ctx))
        limit = asyncio.ensure_future(session.limit_reached.wait())
        try:
            await asyncio.wait({task, limit}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                # Refused once: the agent saw the error; give it a moment to end its turn.
                done, _ = await asyncio.wait({task}, timeout=LIMIT_GRACE_SEC)
                if not done:
                    task.cancel()
                    await asyncio.wait({task})  # never raises the agent's CancelledError
                    self.limit_message = session.limit_message
                    return AgentOutcome(
                        "completed",
                        FailureKind.USAGE_LIMIT,
                        f"turn ended by the model proxy: {session.limit_message}",
                    )
            outcome = task.result()
            if session.limit_message is not None:
                self.limit_message = session.limit_message
                if outcome.failure is None:
                    outcome.failure = FailureKind.USAGE_LIMIT
                    outcome.message = f"model proxy refused a call: {session.limit_message}"
            return outcome
        finally:
            limit.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            proxy.close_session(session)

    # -- after the agent -------------------------------------------------------------------

    def read_native(self, trial_dir: Path) -> None:
        """Usage the agent reported over ACP (``PromptResponse.usage``), summed over turns."""
        path = trial_dir / ACP_TRAJECTORY_FILE
        total: TokenUsage | None = None
        for event in json_lines(path, strict=False):
            if event.get("type") == "prompt_end" and isinstance(event.get("usage"), dict):
                found = TokenUsage.from_acp(event["usage"])
                if found is not None:
                    total = found if total is None else total + found
        self.native = total

    def source(self) -> UsageSource:
        if self.session is not None and self.session.totals.n_counted:
            return "provider_response"
        if self.native is not None:
            return "agent_native_acp"
        if self.participant is not None:
            return "participant_reported"
        return "unavailable"

    def enforce(
        self, failure: FailureKind | None, error: str | None
    ) -> tuple[FailureKind | None, str | None]:
        """``--usage-tracking required``: a trial without trusted usage is an error."""
        if failure is not None and failure is not FailureKind.USAGE_LIMIT:
            return failure, error
        if self.settings.usage_tracking != "required" or self.access == "none":
            return failure, error
        if self.source() in TRUSTED_SOURCES:
            return failure, error
        return (
            FailureKind.USAGE_UNTRACKED,
            "--usage-tracking required: the trial has no trusted usage "
            "(no model call through the proxy and no usage reported over ACP)",
        )

    def agent_result(self) -> dict[str, Any]:
        source = self.source()
        if source == "provider_response":
            assert self.session is not None
            totals = self.session.totals
            cost = totals.cost_usd if totals.priced else None
            fields = agent_result_fields(totals.usage, cost, source, "litellm")
            fields["n_model_calls"] = totals.n_calls
        elif source == "agent_native_acp":
            fields = agent_result_fields(self.native, None, source, None)
        elif source == "participant_reported":
            assert self.participant is not None
            fields = participant.agent_result_fields(self.participant)
        else:
            # Nothing read (no model call through the proxy, no usage reported over ACP; an
            # agent that calls no model included): unknown, so null, never 0 (docs/usage.md).
            fields = agent_result_fields(None, None, "unavailable", None)
        fields["cost_summary"] = cost_summary(fields, calls_model=self.access != "none")
        return fields

    def usage_tracking(self) -> dict[str, Any]:
        session = self.session
        return {
            "requested": self.settings.usage_tracking,
            "model_access": self.access,
            "model": self.model,
            "usage_source": self.source(),
            # Counted by the proxy when the agent had one (0 is a count); null when not measured.
            "n_model_calls": session.totals.n_calls if session else None,
            "n_refused_calls": session.n_refused if session else None,
            "limits": {
                "max_tokens": self.settings.max_tokens,
                "max_cost_usd": self.settings.max_cost_usd,
            },
            "limit_reached": self.limit_message,
        }

    def timing(self, timing: Mapping[str, float]) -> dict[str, float | None]:
        if self.session is None:  # no proxy measured the agent's model calls: unknown
            return {"provider_wait": None, "agent_without_provider_wait": None}
        wait = round(self.session.provider_wait_sec, 3)
        agent = timing.get("agent_execution")
        if agent is None:
            return {"provider_wait": wait}
        return {
            "provider_wait": wait,
            "agent_without_provider_wait": round(max(agent - wait, 0), 3),
        }

    # -- telemetry -------------------------------------------------------------------------

    def trace(
        self, trial_dir: Path, task_id: str, phases: Sequence[PhaseSpan], failure: str | None
    ) -> dict[str, Any]:
        """The trial's spans (trial > phases > model and tool calls), written to disk."""
        end = max((p[2] for p in phases), default=time.time_ns())
        start = min((p[1] for p in phases), default=end)
        root = otel.Span(
            f"trial {task_id}",
            start,
            end,
            attributes={
                "skillsbench.trial_id": self.trial_id,
                "skillsbench.task_id": task_id,
                "skillsbench.agent": self.agent.spec,
                "gen_ai.request.model": self.model,
            },
            error=failure,
        )
        spans = [root]
        agent_span: otel.Span | None = None
        for name, p_start, p_end in phases:
            span = otel.Span(f"phase {name}", p_start, p_end, parent_span_id=root.span_id)
            span.attributes["skillsbench.phase"] = name
            spans.append(span)
            if name == "agent_execution":
                agent_span = span
        parent = (agent_span or root).span_id
        if self.session is not None:
            for call in self.session.spans:
                spans.append(
                    otel.Span(
                        call.name,
                        call.start_ns,
                        call.end_ns,
                        parent_span_id=parent,
                        kind=otel.SPAN_KIND_CLIENT,
                        attributes=call.attributes,
                        error=call.error,
                    )
                )
        spans += _tool_spans(trial_dir / ACP_TRAJECTORY_FILE, parent, end)
        resource = {
            "service.name": "skillsbench-agentbeats-worker",
            "skillsbench.trial_id": self.trial_id,
            "skillsbench.task_id": task_id,
        }
        document = otel.trace_document(spans, otel.trace_id_for(self.trial_id), resource)
        path = trial_dir / otel.OTEL_SPANS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=1), encoding="utf-8")
        self._trace = document
        return document

    async def export_trace(self) -> None:
        """Send the trace to ``OTEL_EXPORTER_OTLP_ENDPOINT`` when set; a failure is only logged."""
        if self._trace is None:
            return
        problem = await otel.export(self._trace)
        if problem is not None:
            log.warning("trial %s: %s", self.trial_id, problem)


FORWARD_PORT: Final = 18080  # in the agent's own network namespace: always free
FORWARDER_DIR: Final = "/tmp/skillsbench-model-proxy"
LENT_PROXY_DIR: Final = "/run/skillsbench-model-proxy"  # the proxy's socket folder, read-only
_PYTHONS: Final = ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3")


def _host_python3() -> str | None:
    return next((p for p in _PYTHONS if os.access(p, os.X_OK)), None)


async def _forwarder(proxy: ModelProxy, ctx: AgentContext) -> tuple[str, list[str]]:
    """Base URL and launch prefix for an agent in a sandbox without the host's network: the
    forwarder (worker/usage/forward.py) relays 127.0.0.1:FORWARD_PORT to the proxy's socket."""
    sandbox = ctx.sandbox
    found = await sandbox.exec(
        [
            "sh",
            "-c",
            "for p in " + " ".join(_PYTHONS) + '; do [ -x "$p" ] && echo "$p" && break; done',
        ],
        timeout_sec=30,
    )
    python = found.stdout.strip().splitlines()[0] if found.stdout.strip() else ""
    if not python:
        raise OSError("no python3 in the sandbox to run the forwarder")
    socket_path = Path(await proxy.listen_unix())
    # The proxy's socket folder is lent at a fixed path: the host's own folders stay unseen.
    await sandbox.lend(socket_path.parent, LENT_PROXY_DIR)
    await sandbox.upload(Path(forward.__file__), f"{FORWARDER_DIR}/forward.py")
    lent_socket = f"{LENT_PROXY_DIR}/{socket_path.name}"
    prefix = [python, f"{FORWARDER_DIR}/forward.py", str(FORWARD_PORT), lent_socket, "--"]
    return f"http://127.0.0.1:{FORWARD_PORT}", prefix


def _ns(timestamp: Any) -> int | None:
    if isinstance(timestamp, int | float):
        return int(timestamp * 1e9)
    if isinstance(timestamp, str):
        with contextlib.suppress(ValueError):
            return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1e9)
    return None


def _tool_spans(path: Path, parent: str, end_ns: int) -> list[otel.Span]:
    spans: dict[str, otel.Span] = {}
    for event in json_lines(path, strict=False):
        call_id = event.get("tool_call_id")
        when = _ns(event.get("timestamp"))
        if not isinstance(call_id, str) or when is None:
            continue
        if event.get("type") == "tool_call" and call_id not in spans:
            spans[call_id] = otel.Span(
                f"tool {event.get('kind') or 'call'}",
                when,
                end_ns,
                parent_span_id=parent,
                attributes={
                    "skillsbench.tool_call_id": call_id,
                    "skillsbench.tool.kind": event.get("kind"),
                    "skillsbench.tool.title": str(event.get("title") or "")[:200],
                },
            )
            status = event.get("status")
        elif event.get("type") == "tool_call_update" and call_id in spans:
            status = event.get("status")
        else:
            continue
        if status in ("completed", "failed"):
            spans[call_id].end_ns = when
            spans[call_id].attributes["skillsbench.tool.status"] = status
            if status == "failed":
                spans[call_id].error = "tool call failed"
    return list(spans.values())
