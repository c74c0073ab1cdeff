"""Manifest agents (kind ``acp``, and bare manifest names): installed as root in the sandbox with ``install_cmd``, then launched with
``launch_cmd`` inside it, speaking ACP over the process's stdio.

The agent's folder (manifest and any files beside it) is uploaded to ``AGENT_SRC_DIR/<name>`` and
named by ``SKILLSBENCH_AGENT_SRC`` for both commands. Secrets travel only in the process
environment: never in argv, and their values are masked in the install log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from worker.acp.agent_manifest import AgentManifestEntry, AgentManifestError, discover, find
from worker.acp.provision import ProvisionError, provision
from worker.acp.session import SessionConfig
from worker.agents.acp_session import outcome_of, run_process_session
from worker.agents.base import Agent, AgentContext, AgentOutcome, agent_kind, agent_user_problem
from worker.core.failures import FailureKind
from worker.sandbox.base import SandboxError, SandboxUnsupported

logger = logging.getLogger(__name__)

AGENT_SRC_DIR = "/tmp/skillsbench-agents"
PROVIDER_PREFIXES = ("BENCHFLOW_PROVIDER_", "RUNTIME_PROVIDER_")


@agent_kind("acp")
class ManifestAgent(Agent):
    """``acp:<name>``, or a bare manifest name (see :func:`resolve_manifest_name`)."""

    idle_timeout_sec: float | None = 600.0  # no session/update for this long: stopped

    def __init__(self, spec: str, entry: AgentManifestEntry | None = None) -> None:
        super().__init__(spec)
        self._entry = entry

    @property
    def manifest_name(self) -> str:
        kind, sep, name = self.spec.partition(":")
        return name if sep and kind == "acp" else self.spec

    def entry(self) -> AgentManifestEntry:
        if self._entry is None:
            self._entry = find(self.manifest_name)
        return self._entry

    def check_ready(self, agent_env: Mapping[str, str]) -> None:
        """The manifest loads and its ``requires_env`` is set ("must be set before a run
        starts"): checked by the engine before it accepts a run (``run`` and the worker API)."""
        try:
            entry = self.entry()
        except AgentManifestError as exc:
            raise ValueError(str(exc)) from None
        manifest = entry.manifest
        if manifest.unknown_keys:  # BenchFlow drops them silently; we name them
            logger.warning(
                "agent %r (%s): unknown keys ignored: %s",
                manifest.name,
                entry.path,
                ", ".join(manifest.unknown_key_notes),
            )
        missing = manifest.missing_env(agent_env)
        if missing:
            raise ValueError(_missing_message(manifest.name, missing))

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        try:
            entry = self.entry()
        except AgentManifestError as exc:
            return AgentOutcome("failed", FailureKind.AGENT_LAUNCH, str(exc))
        manifest = entry.manifest
        if (problem := await agent_user_problem(ctx)) is not None:  # before a long install
            return AgentOutcome("failed", FailureKind.AGENT_LAUNCH, problem)
        try:
            env = agent_env(entry, ctx.env)
        except AgentManifestError as exc:
            return AgentOutcome("failed", FailureKind.AGENT_LAUNCH, str(exc))
        secrets = [v for k, v in env.items() if k != "SKILLSBENCH_AGENT_SRC" and len(v) >= 4]
        try:
            await ctx.sandbox.upload(entry.folder, env["SKILLSBENCH_AGENT_SRC"])
            installed = await ctx.sandbox.exec(
                ["sh", "-c", manifest.install_cmd],
                user="root",
                env=env,
                timeout_sec=manifest.install_timeout,
                max_output_bytes=ctx.caps.agent_log_bytes // 2,  # each stream; the log holds both
            )
        except (SandboxError, OSError) as exc:
            return AgentOutcome(
                "failed", FailureKind.AGENT_INSTALL, f"install of {manifest.name}: {exc}"
            )
        log = ctx.trial_dir / "agent" / "install-stdout.txt"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(_mask(installed.stdout + installed.stderr, secrets), encoding="utf-8")
        if installed.timed_out or installed.exit_code != 0:
            why = "timed out" if installed.timed_out else f"exit code {installed.exit_code}"
            return AgentOutcome(
                "failed", FailureKind.AGENT_INSTALL, f"install_cmd of {manifest.name} {why}"
            )
        try:
            done = await provision(
                ctx.sandbox,
                manifest,
                env,
                user=ctx.task.config.agent.user,
                skills_dir=ctx.skills_dir,
            )
        except (ProvisionError, SandboxError) as exc:
            return AgentOutcome(
                "failed", FailureKind.AGENT_INSTALL, f"set-up of {manifest.name}: {exc}"
            )
        try:
            # What the install changed in the system folders is ours, not the agent's work.
            await ctx.sandbox.trust_current_changes()
        except SandboxError as exc:
            return AgentOutcome(
                "failed", FailureKind.AGENT_INSTALL, f"set-up of {manifest.name}: {exc}"
            )
        if done:
            with log.open("a", encoding="utf-8") as out:
                out.write("".join(f"[skillsbench] {line}\n" for line in done))
        try:
            process = await ctx.sandbox.open_process(
                [*ctx.launch_prefix, "sh", "-c", manifest.launch_cmd],
                cwd=ctx.sandbox.workdir,
                env=env,
                user=ctx.task.config.agent.user,
            )
        except SandboxUnsupported:  # e.g. an [agent].user the local sandbox cannot switch to
            raise
        except (SandboxError, OSError) as exc:
            return AgentOutcome(
                "failed", FailureKind.AGENT_LAUNCH, f"launch of {manifest.name}: {exc}"
            )
        model_id = None
        if ctx.model is not None and manifest.supports_acp_set_model:
            model_id = manifest.acp_model_id(ctx.model)
        config = SessionConfig(
            cwd=ctx.sandbox.workdir,
            prompt=ctx.prompt,
            timeout_sec=ctx.timeout_sec,
            idle_timeout_sec=self.idle_timeout_sec,
            model_id=model_id,
        )
        result = await run_process_session(process, ctx, config, manifest.name.replace("-", "_"))
        outcome = outcome_of(result)
        if ctx.model is not None and model_id is None:
            outcome.details["model_selection"] = {
                "method": None,
                "model_id": None,
                "accepted": None,
                "note": "supports_acp_set_model = false: the agent takes its model from its "
                "launch environment (BENCHFLOW_PROVIDER_MODEL, env_mapping)",
            }
        return outcome


def agent_env(entry: AgentManifestEntry, extra: Mapping[str, str]) -> dict[str, str]:
    """The agent's process environment: the trial's extra env, the required host variables, the
    provider variables under the agent's own names (``env_mapping``), and its source folder."""
    manifest = entry.manifest
    env = dict(extra)
    missing = manifest.missing_env(env)
    if missing:
        raise AgentManifestError(_missing_message(manifest.name, missing))
    for name in manifest.requires_env:
        if name not in env:
            env[name] = os.environ[name]
    for source, target in manifest.env_mapping.items():
        for candidate in (
            source,
            *(p + source.split("_PROVIDER_", 1)[-1] for p in PROVIDER_PREFIXES),
        ):
            if candidate in env:
                env[target] = env[candidate]
                break
    env["SKILLSBENCH_AGENT_SRC"] = f"{AGENT_SRC_DIR}/{manifest.name}"
    return env


def _missing_message(name: str, missing: list[str]) -> str:
    return f"agent {name!r} needs {', '.join(missing)} set"


def _mask(text: str, secrets: list[str]) -> str:
    # Longest first: a shorter value inside a longer secret must not break the longer match.
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def resolve_manifest_name(spec: str) -> Agent | None:
    """Fallback resolver: a bare spec naming a manifest agent (``py-acp-agent``)."""
    if ":" in spec:
        return None
    agents = discover()
    return ManifestAgent(spec, agents[spec]) if spec in agents else None
