"""The one table that decides failure semantics.

For each failure kind: is the trial retried, may its reward count (score-eligible), and which
reviewed public category does the row carry. Agent timeouts and wrong answers are not failures of
the infrastructure: they are scored (reward from the verifier, usually 0) and never retried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from leaderboard.rows import FailureCategory


class SandboxEnd(StrEnum):
    """Who ended a sandbox that stopped running before the trial stopped it (what
    ``Sandbox.ended`` answers; :func:`sandbox_ended` is the rule it feeds). Defined here, beside
    the rule, so the sandbox package depends on the failure table and not the other way round."""

    INSIDE = "inside"  # what ran in it: its processes exited, the OOM kill of its memory limit
    OUTSIDE = "outside"  # the engine or the host: a daemon error, removed or killed from outside


class FailureKind(StrEnum):
    SANDBOX_START = "sandbox_start"  # transient: the engine answered 5xx, timed out, went away
    SANDBOX_BUILD = "sandbox_build"  # deterministic: the image build failed / base image missing
    SANDBOX_CONFIG = "sandbox_config"  # deterministic: the engine refused the task's config (4xx)
    SANDBOX_UNSUPPORTED = "sandbox_unsupported"
    SANDBOX_LOST = "sandbox_lost"  # the sandbox ended from outside (engine, host): infra
    SANDBOX_ENDED_BY_AGENT = "sandbox_ended_by_agent"  # ended from inside: scored, reward 0
    AGENT_INSTALL = "agent_install"
    AGENT_LAUNCH = "agent_launch"  # agent process died at start / pipe closed
    AGENT_PROTOCOL = "agent_protocol"  # ACP error from a local agent
    AGENT_TIMEOUT = "agent_timeout"  # the agent used its whole time: scored, not retried
    PARTICIPANT_COMMUNICATION = "participant_communication"
    PARTICIPANT_TIMEOUT = "participant_timeout"
    PARTICIPANT_ERROR = "participant_error"
    VERIFIER_INFRA = "verifier_infra"  # verifier could not run (sandbox exec failed)
    VERIFIER_TIMEOUT = "verifier_timeout"
    VERIFIER_NO_REWARD = "verifier_no_reward"  # ran, produced no/invalid reward
    # The agent changed what the verifier runs or loads (an interpreter, a shell, a library, the
    # loader's configuration, a Python start-up hook): the verifier is not run, the row fails.
    VERIFIER_TAMPERED = "verifier_tampered"
    # What ran in the sandbox hit the task's limits before the verifier (worker/sandbox/resources):
    # the kernel killed a process at memory_mb, or refused a fork at the process cap.
    OOM = "oom"
    PIDS_LIMIT = "pids_limit"
    # The local sandbox's storage watchdog (a worker that may not mount a capped tmpfs): the
    # trial's writable folders took more disk than the storage cap; everything in it was killed.
    STORAGE_LIMIT = "storage_limit"
    # The `ray` executor: the node, its Ray worker process or the attempt's result was lost
    # (docs/scaling.md). The attempt is re-run with a fresh trial id, never recorded twice.
    NODE_LOST = "node_lost"
    # The worker's jobs folder was full (ENOSPC, EDQUOT) when the trial wrote its own records:
    # the disk's fault. Tried again once space returns, not counted against --max-attempts.
    JOBS_DISK_FULL = "jobs_disk_full"
    WORKER_TIMEOUT = "worker_timeout"
    WORKER_CANCELLED = "worker_cancelled"
    WORKER_ERROR = "worker_error"
    USAGE_LIMIT = "usage_limit"  # the model proxy refused a call over --max-tokens/--max-cost-usd
    USAGE_UNTRACKED = "usage_untracked"  # --usage-tracking required, and no trusted usage


@dataclass(frozen=True)
class Semantics:
    """Every fact of one failure kind, each decided in :data:`FAILURE_TABLE` (no defaults: a new
    kind must say each)."""

    retried: bool
    score_eligible: bool
    category: FailureCategory | None  # the public row's infra_failure_type
    # BenchFlow's ``error_category`` and ``verifier_error_category`` of result.json
    # (benchflow/_utils/scoring.py; worker/trial_record/benchflow.py), None where it has none.
    benchflow_error: str | None
    benchflow_verifier_error: str | None


FAILURE_TABLE: dict[FailureKind, Semantics] = {
    FailureKind.SANDBOX_START: Semantics(True, False, "sandbox_error", "sandbox_setup", None),
    # Deterministic: the same task fails the same way on a retry (and a build can take minutes).
    FailureKind.SANDBOX_BUILD: Semantics(False, False, "sandbox_error", "sandbox_setup", None),
    FailureKind.SANDBOX_CONFIG: Semantics(False, False, "sandbox_error", "sandbox_setup", None),
    FailureKind.SANDBOX_UNSUPPORTED: Semantics(
        False, False, "sandbox_error", "sandbox_setup", None
    ),
    FailureKind.SANDBOX_LOST: Semantics(True, False, "sandbox_error", "infra_failure", None),
    FailureKind.SANDBOX_ENDED_BY_AGENT: Semantics(
        False, True, None, None, None
    ),  # the agent's own doing
    FailureKind.AGENT_INSTALL: Semantics(True, False, "worker_error", "install_failure", None),
    FailureKind.AGENT_LAUNCH: Semantics(True, False, "worker_error", "pipe_closed", None),
    FailureKind.AGENT_PROTOCOL: Semantics(False, False, "worker_error", "acp_error", None),
    FailureKind.AGENT_TIMEOUT: Semantics(False, True, None, "timeout", None),
    FailureKind.PARTICIPANT_COMMUNICATION: Semantics(
        False, False, "participant_communication", None, None
    ),
    FailureKind.PARTICIPANT_TIMEOUT: Semantics(False, False, "participant_timeout", None, None),
    FailureKind.PARTICIPANT_ERROR: Semantics(False, False, "participant_error", None, None),
    FailureKind.VERIFIER_INFRA: Semantics(True, False, "verifier_error", None, "verifier_infra"),
    FailureKind.VERIFIER_TIMEOUT: Semantics(
        False, False, "verifier_error", None, "verifier_timeout"
    ),
    FailureKind.VERIFIER_NO_REWARD: Semantics(
        False, False, "verifier_error", None, "verifier_failure"
    ),
    FailureKind.VERIFIER_TAMPERED: Semantics(
        False, True, None, None, None
    ),  # the agent's failure: scored 0
    # The agent's failures too, like tampering: the verifier does not run, reward 0, no retry.
    FailureKind.OOM: Semantics(False, True, None, None, None),
    FailureKind.PIDS_LIMIT: Semantics(False, True, None, None, None),
    FailureKind.STORAGE_LIMIT: Semantics(False, True, None, None, None),
    FailureKind.NODE_LOST: Semantics(True, False, "worker_error", None, None),
    FailureKind.JOBS_DISK_FULL: Semantics(True, False, "worker_error", "infra_failure", None),
    FailureKind.WORKER_TIMEOUT: Semantics(False, False, "worker_timeout", "infra_failure", None),
    FailureKind.WORKER_CANCELLED: Semantics(
        False, False, "worker_cancelled", "infra_failure", None
    ),
    FailureKind.WORKER_ERROR: Semantics(False, False, "worker_error", "infra_failure", None),
    FailureKind.USAGE_LIMIT: Semantics(False, True, None, None, None),  # scored, like a timeout
    FailureKind.USAGE_UNTRACKED: Semantics(False, False, "worker_error", None, None),
}


def semantics(kind: FailureKind) -> Semantics:
    return FAILURE_TABLE[kind]


def sandbox_ended(end: SandboxEnd | None, infra: FailureKind) -> FailureKind:
    """The one rule for a sandbox that died while the trial still needed it (``end``: what
    ``Sandbox.ended`` answered). Ended from inside (the agent's processes exited, its memory
    limit's OOM kill) is the agent's doing: a failed, score-eligible trial (reward 0), never
    retried. Ended from outside (the engine's or the host's doing) is ``sandbox_lost``, whatever
    the phase that noticed and whatever its command returned (retried, not scored). Unknown is
    ``infra`` (an infrastructure kind of the phase that noticed: retried, not scored)."""
    if end is SandboxEnd.INSIDE:
        return FailureKind.SANDBOX_ENDED_BY_AGENT
    if end is SandboxEnd.OUTSIDE:
        return FailureKind.SANDBOX_LOST
    return infra


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a retried failure kind is tried again."""

    max_attempts: int = 3  # first try + 2 retries
    backoff_base_sec: float = 1.0
    backoff_max_sec: float = 30.0

    def should_retry(self, kind: FailureKind | None, attempts_so_far: int) -> bool:
        return kind is not None and semantics(kind).retried and attempts_so_far < self.max_attempts

    def backoff_sec(self, attempts_so_far: int) -> float:
        return float(min(self.backoff_base_sec * 2 ** (attempts_so_far - 1), self.backoff_max_sec))


ERROR_TEXT_CHARS = 2000
_ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def plain_text(text: str, limit: int = ERROR_TEXT_CHARS) -> str:
    """An error text fit for a row, a result and a summary: no ANSI escape codes (the Docker
    builder colours its output) or other control characters, at most ``limit`` characters (the
    head and the tail, where a build log says what failed)."""
    text = _ANSI_ESCAPE.sub("", text)
    text = "".join(ch if ch.isprintable() or ch in "\n\t" else " " for ch in text).strip()
    if len(text) > limit:
        keep = (limit - 5) // 2
        text = f"{text[:keep]} ... {text[-keep:]}"
    return text
