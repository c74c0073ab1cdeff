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
            }
        }
