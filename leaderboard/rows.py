"""The public result row and envelope: the contract AgentBeats and the leaderboard queries read.

This module owns the key order, the reviewed failure categories and the row invariants. The
normalizer (``leaderboard.normalize``) turns any worker payload into rows of this shape; the
redaction predicates it shares with this model live in ``leaderboard.redaction``.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from leaderboard.redaction import (
    DIGEST_PATTERN,
    artifact_ref_problems,
    is_safe_label,
    looks_secret,
    public_url,
)

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
FAILURE_CATEGORIES: tuple[FailureCategory, ...] = get_args(FailureCategory)
CONDITIONS: tuple[str, ...] = ("with_skills", "without_skills")

TRIAL_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
# Task ids and task-set names are folder-like names: no separators, never a path.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
# AgentBeats ids (scripts/validate_results_schema.py of the leaderboard repository): any version.
AGENTBEATS_UUID_PATTERN = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.IGNORECASE
)
_PLACEHOLDER_TRIAL_IDS = frozenset(
    {
        "",
        "none",
        "null",
        "nil",
        "undefined",
        "unknown",
        "n/a",
        "na",
        "todo",
        "tbd",
        "placeholder",
        "trial",
        "trial_id",
        "trial-id",
        "-",
        "0",
    }
)


def trial_id_problem(value: str) -> str | None:
    """Why ``value`` is not a publishable trial id, or None when it is one."""
    if value.strip().lower() in _PLACEHOLDER_TRIAL_IDS:
        return "trial_id is a placeholder"
    if not TRIAL_ID_PATTERN.match(value):
        return "trial_id must be compact [A-Za-z0-9._:-] (no path, URL or object)"
    if value.startswith((".", ":", "-")) or ".." in value:
        return "trial_id must not be a path or URL"
    if looks_secret(value):
        return "trial_id looks like a credential"
    return None


def name_problem(field: str, value: str) -> str | None:
    """Why ``value`` is not a publishable task id or task-set name, or None."""
    if not NAME_PATTERN.match(value) or ".." in value:
        return f"{field} must be a plain name [A-Za-z0-9._-] (no path or URL)"
    if looks_secret(value):
        return f"{field} looks like a credential"
    return None


class PublicRow(BaseModel):
    """One task result as published. Fields are declared in the published key order."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    task_id: str
    trial_id: str
    task_set: str
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

    @field_validator("task_id", "task_set")
    @classmethod
    def _name(cls, value: str, info: ValidationInfo) -> str:
        problem = name_problem(info.field_name or "name", value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("trial_id")
    @classmethod
    def _trial_id(cls, value: str) -> str:
        problem = trial_id_problem(value)
        if problem:
            raise ValueError(problem)
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

    @field_validator("category", "difficulty", "agent_transport", "participant_role")
    @classmethod
    def _label(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not is_safe_label(value):
            raise ValueError(f"{info.field_name} must be a short label (no path, URL or secret)")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not is_safe_label(tag):
                raise ValueError(f"tag {tag[:40]!r}… is not a short label (no path, URL or secret)")
        return value

    @field_validator("artifact_refs")
    @classmethod
    def _artifact_refs(cls, value: list[str]) -> list[str]:
        for index, ref in enumerate(value):
            problems = artifact_ref_problems(ref)
            if problems:
                raise ValueError(
                    f"artifact_refs[{index}] {'; '.join(problems)} (artifact_refs hold only "
                    "sha256 digests or https URLs on public hosts)"
                )
        return value

    @field_validator("time_used")
    @classmethod
    def _time_used(cls, value: float | None) -> float | None:
        if value is None:
            return None
        if value < 0:
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
        if self.score_eligible and (
            self.infra_failure_type is not None or self.error_type is not None
        ):
            raise ValueError("a score-eligible row carries no infra_failure_type or error_type")
        if not self.score_eligible and self.infra_failure_type is None:
            raise ValueError("a row that is not score-eligible needs an infra_failure_type")
        if self.error_type != self.infra_failure_type:
            raise ValueError("error_type must mirror infra_failure_type")
        return self

    def public_dict(self) -> dict[str, Any]:
        """The row as published: every key, in the published order."""
        data = self.model_dump(mode="json")
        return {key: data[key] for key in ROW_KEYS}


def participant_problem(value: str) -> str | None:
    """Why an envelope participant value is not publishable: it must be an AgentBeats UUID or
    an http(s) URL without credentials, query string or fragment."""
    if AGENTBEATS_UUID_PATTERN.match(value):
        return None
    cleaned = public_url(value)
    if cleaned is None or cleaned != value:
        return (
            "a participant is an AgentBeats UUID or an http(s) URL without credentials, "
            "query string or fragment"
        )
    return None


class Envelope(BaseModel):
    """What the green agent returns as its one DataPart (one envelope per assessment/shard)."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["completed"] = "completed"
    participants: dict[str, str]
    results: list[PublicRow]

    @field_validator("participants")
    @classmethod
    def _participants(cls, value: dict[str, str]) -> dict[str, str]:
        if not value.get("agent"):
            raise ValueError("participants.agent is required")
        for role, ident in value.items():
            if not NAME_PATTERN.match(role):
                raise ValueError(f"participant role {role!r} is not a plain name")
            problem = participant_problem(ident)
            if problem:
                raise ValueError(f"participants.{role}: {problem}")
        return value

    def public_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "participants": dict(self.participants),
            "results": [row.public_dict() for row in self.results],
        }
