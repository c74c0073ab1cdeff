"""The public result row and envelope: the contract AgentBeats and the leaderboard queries read.

This module owns the key order, the reviewed failure categories and the row invariants. The
normalizer (``leaderboard.normalize``) turns any worker payload into rows of this shape.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ROW_KEYS: tuple[str, ...] = (
    "task_id",
    "trial_id",
    "task_set",
    "task_set_digest",
    "condition",
    "score_eligible",
    "passed",
    "reward",
    "max_score",
    "time_used",
    "task_digest",
    "category",
    "difficulty",
    "tags",
    "has_skills",
    "agent_transport",
    "participant_role",
    "infra_failure_type",
    "error_type",
    "artifact_refs",
)

# The reviewed public failure categories; nothing else may appear in `infra_failure_type`.
FAILURE_CATEGORIES: tuple[str, ...] = (
    "worker_timeout",
    "worker_cancelled",
    "worker_error",
    "participant_communication",
    "participant_timeout",
    "participant_error",
    "sandbox_error",
    "verifier_error",
)
FailureCategory = Literal[
    "worker_timeout",
    "worker_cancelled",
    "worker_error",
    "participant_communication",
    "participant_timeout",
    "participant_error",
    "sandbox_error",
    "verifier_error",
]

TRIAL_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")
_PLACEHOLDER_TRIAL_IDS = frozenset(
    {"", "none", "null", "unknown", "n/a", "na", "todo", "tbd", "placeholder", "trial", "trial_id"}
)


class PublicRow(BaseModel):
    """One task result as published. Fields are declared in the published key order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(min_length=1)
    trial_id: str
    task_set: str = Field(min_length=1)
    task_set_digest: str
    condition: Literal["with_skills", "without_skills"] = "with_skills"
    score_eligible: bool
    passed: bool
    reward: float
    max_score: float = 1.0
    time_used: float | None = None
    task_digest: str | None = None
    category: str | None = None
    difficulty: str | None = None
    tags: list[str] = Field(default_factory=list)
    has_skills: bool = True
    agent_transport: str = "a2a"
    participant_role: str = "agent"
    infra_failure_type: FailureCategory | None = None
    error_type: FailureCategory | None = None
    artifact_refs: list[str] = Field(default_factory=list)

    @field_validator("trial_id")
    @classmethod
    def _trial_id(cls, value: str) -> str:
        if value.strip().lower() in _PLACEHOLDER_TRIAL_IDS:
            raise ValueError("trial_id is a placeholder")
        if not TRIAL_ID_PATTERN.match(value):
            raise ValueError("trial_id must be compact [A-Za-z0-9._:-] (no path, URL or object)")
        if "://" in value or value.startswith(("/", ".")):
            raise ValueError("trial_id must not be a path or URL")
        return value

    @field_validator("task_set_digest")
    @classmethod
    def _set_digest(cls, value: str) -> str:
        if not DIGEST_PATTERN.match(value):
            raise ValueError("task_set_digest must be sha256:<64 hex>")
        return value

    @field_validator("task_digest")
    @classmethod
    def _task_digest(cls, value: str | None) -> str | None:
        if value is not None and not DIGEST_PATTERN.match(value):
            raise ValueError("task_digest must be sha256:<64 hex>")
        return value

    @field_validator("time_used")
    @classmethod
    def _time_used(cls, value: float | None) -> float | None:
        if value is None:
            return None
        if value < 0 or value != value:
            raise ValueError("time_used must be a non-negative number of seconds")
        return round(value, 3)

    @model_validator(mode="after")
    def _invariants(self) -> PublicRow:
        if self.max_score <= 0:
            raise ValueError("max_score must be positive")
        if not (0.0 <= self.reward <= self.max_score):
            raise ValueError(f"reward {self.reward} is outside [0, {self.max_score}]")
        if self.passed and self.reward <= 0:
            raise ValueError("passed requires reward > 0")
        if self.score_eligible and self.infra_failure_type is not None:
            raise ValueError("a score-eligible row carries no infra_failure_type")
        if not self.score_eligible and self.infra_failure_type is None:
            raise ValueError("a row that is not score-eligible needs an infra_failure_type")
        return self

    def public_dict(self) -> dict[str, Any]:
        """The row as published: every key, in the published order."""
        data = self.model_dump(mode="json")
        return {key: data[key] for key in ROW_KEYS}


class Envelope(BaseModel):
    """What the green agent returns as its one DataPart (one envelope per assessment/shard)."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["completed"] = "completed"
    participants: dict[str, str]
    results: list[PublicRow]

    def public_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "participants": dict(self.participants),
            "results": [row.public_dict() for row in self.results],
        }
