"""The built-in agents: ``oracle`` (the task's solution), ``nop`` (does nothing), ``script:<file>``.

Each runs at most one shell command in the sandbox and reports it as an ACP-style ``tool_call``
followed by a ``tool_call_update`` carrying the exit code and the tail of the output.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import ClassVar

from worker.agents.base import Agent, AgentContext, AgentOutcome, agent_kind
from worker.core.failures import FailureKind
from worker.sandbox.base import SOLUTION_DIR, SandboxError, SandboxUnsupported

OUTPUT_TAIL_CHARS = 4000
SCRIPT_SANDBOX_PATH = "/tmp/skillsbench-agent-script.sh"
_call_ids = itertools.count(1)


async def run_recorded(
    ctx: AgentContext,
    command: str,
    *,
    title: str,
    log_name: str,
    timeout_sec: float,
    output_only: bool = False,
) -> AgentOutcome:
    """Run ``command`` under ``sh -c`` in the workdir as the task's ``[agent].user``, record it,
    keep its output in agent/: a record of the run (command, exit code, stdout, stderr), or with
    ``output_only`` just what it printed. A backend that cannot switch to that user raises
    :class:`SandboxUnsupported` (the trial's ``sandbox_unsupported``)."""
    call_id = f"call_{next(_call_ids)}"
    ctx.record(
        {
            "type": "tool_call",
            "tool_call_id": call_id,
            "kind": "execute",
            "title": title,
            "status": "in_progress",
            "raw_input": {"command": command, "cwd": ctx.sandbox.workdir},
        }
    )
    try:
        result = await ctx.sandbox.exec(
            command,
            cwd=ctx.sandbox.workdir,
            env=dict(ctx.env),
            user=ctx.task.config.agent.user,
            timeout_sec=timeout_sec,
            # Each stream; the log holds both (one, when the command folds stderr into stdout).
            max_output_bytes=ctx.caps.agent_log_bytes // (1 if output_only else 2),
        )
    except SandboxUnsupported:
        ctx.record({"type": "tool_call_update", "tool_call_id": call_id, "status": "failed"})
        raise
    except SandboxError as exc:
        ctx.record({"type": "tool_call_update", "tool_call_id": call_id, "status": "failed"})
        return AgentOutcome(
            status="failed",
            failure=FailureKind.AGENT_LAUNCH,
            message=f"could not run {title}: {exc}",
            n_tool_calls=1,
        )
    log = ctx.trial_dir / "agent" / log_name
    log.parent.mkdir(parents=True, exist_ok=True)
    if output_only:
        log.write_text(result.stdout + result.stderr, encoding="utf-8")
    else:
        log.write_text(
            f"$ {command}\n[exit {result.exit_code}{' timeout' if result.timed_out else ''}]\n"
            f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}\n",
            encoding="utf-8",
        )
    output = (result.stdout + result.stderr)[-OUTPUT_TAIL_CHARS:]
    ctx.record(
        {
            "type": "tool_call_update",
            "tool_call_id": call_id,
            "status": "completed" if result.exit_code == 0 and not result.timed_out else "failed",
            "content": [{"type": "content", "content": {"type": "text", "text": output}}],
            "raw_output": {"exit_code": result.exit_code, "timed_out": result.timed_out},
        }
    )
    if result.timed_out:
        ctx.record(
            {"type": "agent_timeout", "reason": "wall_clock_timeout", "timeout_sec": timeout_sec}
        )
        return AgentOutcome(status="timeout", message=f"{title} timed out", n_tool_calls=1)
    return AgentOutcome(status="completed", n_tool_calls=1, details={"exit_code": result.exit_code})


@agent_kind("nop")
class NopAgent(Agent):
    """Does nothing: every task should fail with it (the verifier's negative control)."""

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        return AgentOutcome(status="completed")


@agent_kind("oracle")
class OracleAgent(Agent):
    """Runs the task's ``solution/solve.sh``: every task should pass with it."""

    needs_solution: ClassVar[bool] = True

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        if ctx.task.solution_dir is None:
            return AgentOutcome(
                status="failed",
                failure=FailureKind.AGENT_PROTOCOL,
                message=f"task {ctx.task.task_id} has no solution/solve.sh",
            )
        timeout = ctx.task.config.solution.timeout_sec or ctx.timeout_sec
        solve = f"{SOLUTION_DIR}/solve.sh"
        command = (
            f"chmod +x {solve} 2>/dev/null; "
            f"if [ -x /bin/bash ]; then exec /bin/bash {solve}; else exec sh {solve}; fi"
        )
        return await run_recorded(
            ctx, command, title=f"bash {solve}", log_name="oracle.txt", timeout_sec=timeout
        )


@agent_kind("script")
class ScriptAgent(Agent):
    """``script:<file>``: a host shell script run in the sandbox as the agent (probes, fixtures).
    What it prints (stdout and stderr, in order) is the trial's ``agent/script.txt``; its command
    and exit code are in the trajectory's tool call."""

    def __init__(self, spec: str) -> None:
        super().__init__(spec)
        _, _, path = spec.partition(":")
        if not path:
            raise ValueError("script agent needs a file: script:<path>")
        self.path = Path(path).expanduser().resolve()
        if not self.path.is_file():
            raise ValueError(f"script agent: {path} is not a file")

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        await ctx.sandbox.upload(self.path, SCRIPT_SANDBOX_PATH)
        return await run_recorded(
            ctx,
            f"sh {SCRIPT_SANDBOX_PATH} 2>&1; status=$?; rm -f {SCRIPT_SANDBOX_PATH}; exit $status",
            title=f"sh {self.path.name}",
            log_name="script.txt",
            timeout_sec=ctx.timeout_sec,
            output_only=True,
        )
