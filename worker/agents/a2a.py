"""``a2a:<url>``: a purple agent reached over A2A, working in the sandbox through the bridge.

The bridge runs on the worker host as an ACP agent subprocess (``python -m worker.bridge``); the
worker's ACP client serves its terminal/fs requests in the sandbox. The bridge owns the deadline
(so it can tell "the participant did not answer" from "time ran out"); the worker's own wall clock
is a backstop a little later.
"""

from __future__ import annotations

import os
import sys

from worker.acp.extensions import OUTCOME_KEY
from worker.acp.host_process import HostProcess
from worker.acp.session import SessionConfig, SessionResult
from worker.agents.acp_session import run_process_session
from worker.agents.base import (
    Agent,
    AgentContext,
    AgentOutcome,
    AgentStatus,
    agent_kind,
    agent_user_problem,
)
from worker.bridge.config import CAPS as BRIDGE_CAPS
from worker.core.failures import FailureKind

BACKSTOP_SEC = 3.0  # the trial's own backstop (10 s) must not fire first
# Host variables the bridge may need to reach the participant; nothing else is inherited.
_PASSED_ENV = (
    "PYTHONPATH",
    "PATH",
    "HOME",
    "LANG",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
)


@agent_kind("a2a")
class A2AAgent(Agent):
    max_turns: int = 100
    max_files: int = 100  # files[] a finish may return

    def __init__(self, spec: str) -> None:
        super().__init__(spec)
        _, _, url = spec.partition(":")
        if url and not url.startswith(("http://", "https://")):
            raise ValueError(
                f"{spec}: a2a agents need an http(s) URL, e.g. a2a:http://127.0.0.1:9009"
            )
        self.url = url

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        url = ctx.participant_url or self.url
        if not url:
            raise ValueError("a2a agent needs a URL: use --agent a2a:<url>")
        if (problem := await agent_user_problem(ctx)) is not None:
            return AgentOutcome("failed", FailureKind.AGENT_LAUNCH, problem)
        argv = [
            sys.executable, "-m", "worker.bridge",
            "--url", url,
            "--task-id", ctx.task.task_id,
            "--workspace", ctx.sandbox.workdir,
            "--trial-dir", str(ctx.trial_dir),
            "--deadline-sec", f"{ctx.timeout_sec:g}",
            "--max-turns", str(self.max_turns),
            "--max-files", str(self.max_files),
        ]  # fmt: skip
        for name in BRIDGE_CAPS:
            argv += [f"--cap-{name.replace('_', '-')}", str(getattr(ctx.caps, name))]
        if ctx.skills_dir:
            argv += ["--skills-dir", ctx.skills_dir]
        env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
        try:
            process = await HostProcess.start(argv, env=env)
        except OSError as exc:
            return AgentOutcome(
                "failed", FailureKind.AGENT_LAUNCH, f"cannot start the a2a bridge: {exc}"
            )
        config = SessionConfig(
            cwd=ctx.sandbox.workdir,
            prompt=ctx.prompt,
            timeout_sec=ctx.timeout_sec + BACKSTOP_SEC,
            idle_timeout_sec=None,  # silence while the participant thinks is the bridge's call
            cancel_grace_sec=3.0,
            serve_sandbox_tools=True,
        )
        result = await run_process_session(process, ctx, config, "a2a_bridge")
        return bridge_outcome(result)


def bridge_outcome(result: SessionResult) -> AgentOutcome:
    """The participant's categories come from the bridge; the rest is our own failure."""
    n = result.n_tool_calls
    if result.status == "timeout":
        return AgentOutcome("timeout", FailureKind.PARTICIPANT_TIMEOUT, result.message, n)
    if result.status not in ("completed", "cancelled"):
        return AgentOutcome(
            "failed",
            FailureKind.AGENT_PROTOCOL
            if result.status == "protocol_error"
            else FailureKind.AGENT_LAUNCH,
            result.message,
            n,
        )
    info = result.meta.get(OUTCOME_KEY) or {}
    details = {"bridge": info} if info else {}
    status = info.get("status")
    failure = info.get("failure")
    if failure:
        kind = FailureKind(failure)
        state: AgentStatus = "timeout" if kind is FailureKind.PARTICIPANT_TIMEOUT else "failed"
        return AgentOutcome(state, kind, info.get("message"), n, details)
    if status == "deadline":
        return AgentOutcome("timeout", FailureKind.AGENT_TIMEOUT, info.get("message"), n, details)
    if status == "cancelled" or result.status == "cancelled":
        return AgentOutcome("cancelled", None, info.get("message"), n, details)
    return AgentOutcome("completed", None, info.get("message"), n, details)
