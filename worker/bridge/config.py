"""What one bridge process is told (its command line) and what it reports back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.acp.extensions import OUTCOME_KEY
from worker.core.capped import clip_text
from worker.core.failures import FailureKind
from worker.core.limits import MESSAGE_BYTES, OutputCaps

# The caps (worker.core.limits.OutputCaps fields) the bridge applies to its own logs; the worker passes
# its values as ``--cap-<name>`` flags.
CAPS = ("trajectory_event_bytes", "trajectory_bytes", "agent_log_bytes")
_PATH_BYTES = 1024  # a participant's path, as the outcome reports it
# What the bridge holds of one reply: one HTTP body, one streamed event, and all the events of
# one streamed turn together. A finish may return max_total_file_bytes (20 MiB) of files, 27 MiB
# in base64: this leaves room for that and bounds the bridge's memory
# (docs/participant-protocol.md, "Size limits").
MAX_REPLY_BYTES = 32 << 20
MAX_RETRIES_KEPT = 20  # retries listed in the outcome (all are counted, and logged)


@dataclass(frozen=True)
class BridgeConfig:
    url: str
    task_id: str
    workspace: str
    skills_dir: str | None
    trial_dir: Path
    deadline_sec: float
    max_turns: int = 100
    max_output_bytes: int = 64 << 10
    max_file_bytes: int = 5 << 20
    max_files: int = 100
    max_total_file_bytes: int = 20 << 20
    max_reply_bytes: int = MAX_REPLY_BYTES
    caps: OutputCaps = field(default_factory=OutputCaps)  # of its own logs


@dataclass
class Outcome:
    """How the conversation ended; sent to the worker in the prompt result's ``_meta``."""

    status: str  # finished | plain_reply | max_turns | deadline | participant_failure | cancelled
    failure: FailureKind | None = None
    message: str | None = None
    turns: int = 0
    written_files: list[str] = field(default_factory=list)
    refused_files: list[dict[str, str]] = field(default_factory=list)
    # The participant's own usage reports summed (participant_usage.UsageTally.to_data).
    usage: dict[str, Any] | None = None
    # Transient failures retried (worker/bridge/retries.py): how many, the first MAX_RETRIES_KEPT.
    n_retries: int = 0
    retries: list[dict[str, Any]] = field(default_factory=list)

    def add_retry(self, retry: dict[str, Any]) -> None:
        self.n_retries += 1
        if len(self.retries) < MAX_RETRIES_KEPT:
            self.retries.append(retry)

    def meta(self) -> dict[str, Any]:
        return {
            OUTCOME_KEY: {
                "status": self.status,
                "failure": self.failure.value if self.failure else None,
                "message": None if self.message is None else clip_text(self.message, MESSAGE_BYTES),
                "turns": self.turns,
                "written_files": [clip_text(f, _PATH_BYTES) for f in self.written_files],
                "refused_files": [
                    {k: clip_text(v, _PATH_BYTES) for k, v in refused.items()}
                    for refused in self.refused_files
                ],
                "usage": self.usage,
                "n_retries": self.n_retries,
                "retries": self.retries,
            }
        }
