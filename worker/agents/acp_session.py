"""Run one ACP agent process through a session and turn the result into an :class:`AgentOutcome`.

Shared by manifest agents (process inside the sandbox) and the a2a bridge (process on the host).
The agent's stderr is drained into ``agent/<name>.txt`` as it comes (an undrained pipe deadlocks a
chatty agent), up to ``OutputCaps.agent_log_bytes``.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from worker.acp.client import SandboxClient
from worker.acp.session import SessionConfig, SessionResult, run_session
from worker.agents.base import AgentContext, AgentOutcome
from worker.core.capped import CappedFile
from worker.core.failures import FailureKind
from worker.sandbox.base import SandboxProcess

EXIT_GRACE_SEC = 2.0


def agent_log_path(trial_dir: Path, name: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "._" else "_" for c in name) or "agent"
    return trial_dir / "agent" / f"{safe}.txt"


async def drain(stream: asyncio.StreamReader, path: Path, cap: int) -> None:
    """Everything the stream says is read (the agent never blocks on it); at most ``cap`` bytes
    are kept, then a marker counts the rest."""
    out = CappedFile(path, cap)
    path.touch()
    while chunk := await stream.read(65536):
        out.append(chunk)


async def run_process_session(
    process: SandboxProcess, ctx: AgentContext, config: SessionConfig, log_name: str
) -> SessionResult:
    """The session, with stderr drained and the process stopped afterwards whatever happens."""
    drainer = asyncio.create_task(
        drain(process.stderr, agent_log_path(ctx.trial_dir, log_name), ctx.caps.agent_log_bytes)
    )
    client = SandboxClient(ctx.sandbox, ctx.record, user=ctx.task.config.agent.user)
    try:
        return await run_session(process, client, config)
    finally:
        await asyncio.shield(_stop(process, drainer))


async def _stop(process: SandboxProcess, drainer: asyncio.Task[None]) -> None:
    with contextlib.suppress(Exception):
        process.stdin.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(process.wait(), EXIT_GRACE_SEC)
    with contextlib.suppress(Exception):
        await process.kill()
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(drainer, EXIT_GRACE_SEC)
    if not drainer.done():
        drainer.cancel()


def outcome_of(result: SessionResult) -> AgentOutcome:
    """How a local ACP agent's session maps to the failure table."""
    n = result.n_tool_calls
    details: dict[str, Any] = {"stop_reason": result.stop_reason} if result.stop_reason else {}
    if result.model_selection is not None:
        details["model_selection"] = result.model_selection
    if result.agent_info is not None:
        details["agent_info"] = result.agent_info
    if result.status in ("completed", "cancelled"):
        return AgentOutcome("completed", None, result.message, n, details)
    if result.status in ("timeout", "idle_timeout"):
        return AgentOutcome("timeout", FailureKind.AGENT_TIMEOUT, result.message, n, details)
    if result.status == "protocol_error":
        return AgentOutcome("failed", FailureKind.AGENT_PROTOCOL, result.message, n, details)
    return AgentOutcome("failed", FailureKind.AGENT_LAUNCH, result.message, n, details)
