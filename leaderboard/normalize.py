"""Worker payload -> public rows. Never raises on bad rows: what cannot be made valid is
published as a ``worker_error`` row, so a broken worker cannot crash an assessment or leak data.

Rules (docs/leaderboard.md has the full list): only the approved keys survive, in the published
order; ``_private_*`` meta and unknown keys are dropped; labels that look like paths, URLs or
secrets are dropped; artifact refs survive only as sha256 digests or clean public https URLs;
a row that breaks an invariant becomes a ``worker_error`` row (score_eligible false, reward 0).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from leaderboard.rows import (
    AGENTBEATS_UUID_PATTERN,
    CONDITIONS,
    DIGEST_PATTERN,
    FAILURE_CATEGORIES,
    ROW_KEYS,
    USAGE_SOURCES,
    Envelope,
    PublicRow,
    is_public_artifact_ref,
    is_safe_label,
    name_problem,
    public_url,
    trial_id_problem,
    usage_cost,
    usage_count,
)

UNKNOWN_TASK_ID = "unknown-task"
UNKNOWN_TASK_SET = "unknown"
# Stands in for a task-set digest nobody supplied: visibly not a real digest.
UNKNOWN_DIGEST = "sha256:" + "0" * 64
WORKER_ERROR = "worker_error"
_ROW_LIST_KEYS = ("rows", "results")


@dataclass(frozen=True)
class TaskMeta:
    """Manifest metadata of one task: what a row falls back to when the worker omits it."""

    task_digest: str | None = None
    category: str | None = None
    difficulty: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class RowContext:
    """What the caller knows independently of the worker (the selected task set)."""

    task_set: str | None = None
    task_set_digest: str | None = None
    condition: str | None = None
    tasks: Mapping[str, TaskMeta] = field(default_factory=dict)

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> RowContext:
        """From a task-set manifest dict (``skillsbench.agentbeats.task_set.v1``)."""
        tasks = {
            str(task["task_id"]): TaskMeta(
                task_digest=task.get("task_digest"),
                category=task.get("category"),
                difficulty=task.get("difficulty"),
                tags=tuple(task.get("tags") or ()),
            )
            for task in manifest.get("tasks", [])
            if isinstance(task, Mapping) and isinstance(task.get("task_id"), str)
        }
        return cls(
            task_set=manifest.get("task_set"),
            task_set_digest=manifest.get("task_set_digest"),
            condition=manifest.get("condition"),
            tasks=tasks,
        )


def extract_rows(payload: Any) -> list[Any]:
    """The raw row items of any worker payload: a RunStatus(-like) dict with ``rows``, an
    envelope or results file with ``results``, a list of rows, or one row."""
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(mode="json")
    if isinstance(payload, Mapping):
        if "task_id" in payload:
            return [payload]
        for key in _ROW_LIST_KEYS:
            items = payload.get(key)
            if isinstance(items, list):
                rows: list[Any] = []
                for item in items:
                    # A results file nests envelopes; an envelope holds rows.
                    if isinstance(item, Mapping) and "task_id" not in item and "results" in item:
                        rows.extend(extract_rows(item))
                    else:
                        rows.append(item)
                return rows
        return []
    if isinstance(payload, (list, tuple)):
        return list(payload)
    return []


def normalize_rows(payload: Any, context: RowContext | None = None) -> list[dict[str, Any]]:
    """Public row dicts (published key order) for every row item of ``payload``."""
    ctx = context or RowContext()
    return [normalize_row(item, ctx).public_dict() for item in extract_rows(payload)]


def normalize_row(raw: Any, context: RowContext | None = None) -> PublicRow:
    """One public row; a worker_error row when ``raw`` cannot be made valid."""
    ctx = context or RowContext()
    source: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    fields = _clean_fields(source, ctx)
    if isinstance(raw, Mapping):
        try:
            return PublicRow.model_validate(_complete(fields, source, ctx))
        except (ValidationError, _Unfixable):
            pass
    return _worker_error_row(fields, ctx)


def build_envelope(
    participants: Mapping[str, Any],
    payload: Any,
    context: RowContext | None = None,
) -> Envelope:
    """The envelope the green agent publishes for ``participants`` (role -> UUID or URL).

    URLs lose credentials, query string and fragment; a value that is neither a UUID nor an
    http(s) URL is refused, because attribution cannot be guessed.
    """
    clean: dict[str, str] = {}
    for role, value in participants.items():
        text = str(value).strip()
        if AGENTBEATS_UUID_PATTERN.match(text):
            clean[str(role)] = text
            continue
        url = public_url(text)
        if url is None:
            raise ValueError(
                f"participants.{role} is neither an AgentBeats UUID nor an http(s) URL"
            )
        clean[str(role)] = url
    if not clean.get("agent"):
        raise ValueError("participants.agent is required")
    rows = [normalize_row(item, context) for item in extract_rows(payload)]
    return Envelope(status="completed", participants=clean, results=rows)


class _Unfixable(Exception):
    """A core field is missing or wrong: the row becomes a worker_error row."""


def _clean_fields(source: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """The identity and metadata fields that are safe to publish, with context fallbacks.

    These survive even into a worker_error row; core scoring fields are read in `_complete`.
    """
    task_id = _name(source.get("task_id"), "task_id")
    meta = ctx.tasks.get(task_id or "", TaskMeta())
    task_set = _name(source.get("task_set"), "task_set") or _name(ctx.task_set, "task_set")
    trial_id = _trial_id(source.get("trial_id"))
    condition = source.get("condition")
    if condition not in CONDITIONS:
        condition = ctx.condition if ctx.condition in CONDITIONS else None
    tags_raw = source.get("tags")
    tags = (
        [tag for tag in tags_raw if isinstance(tag, str) and is_safe_label(tag)]
        if isinstance(tags_raw, list)
        else [tag for tag in meta.tags if is_safe_label(tag)]
    )
    refs_raw = source.get("artifact_refs")
    refs = (
        [ref for ref in refs_raw if isinstance(ref, str) and is_public_artifact_ref(ref)]
        if isinstance(refs_raw, list)
        else []
    )
    return {
        "task_id": task_id,
        "trial_id": trial_id,
        "task_set": task_set,
        "task_set_digest": _digest(source.get("task_set_digest")) or _digest(ctx.task_set_digest),
        "condition": condition,
        "max_score": _number(source.get("max_score")),
        "time_used": _time(source.get("time_used")),
        "task_digest": _digest(source.get("task_digest")) or _digest(meta.task_digest),
        "category": _label(source.get("category")) or _label(meta.category),
        "difficulty": _label(source.get("difficulty")) or _label(meta.difficulty),
        "tags": tags,
        "has_skills": _bool(source.get("has_skills")),
        "agent_transport": _label(source.get("agent_transport")),
        "participant_role": _label(source.get("participant_role")),
        "artifact_refs": refs,
        **_usage(source),
    }


def _usage(source: Mapping[str, Any]) -> dict[str, Any]:
    """The usage fields: a figure that is not a non-negative number is dropped (unknown), and
    figures without a source that names who measured or reported them are dropped too."""
    usage_source = source.get("usage_source")
    if usage_source not in USAGE_SOURCES:
        usage_source = None
    known = usage_source not in (None, "unavailable")

    cost = _number(source.get("cost_usd")) if known else None  # "0.5" is fixed, like reward
    return {
        "input_tokens": usage_count(source.get("input_tokens")) if known else None,
        "output_tokens": usage_count(source.get("output_tokens")) if known else None,
        "cost_usd": usage_cost(cost),
        "usage_source": usage_source,
    }


def _complete(fields: dict[str, Any], source: Mapping[str, Any], ctx: RowContext) -> dict[str, Any]:
    """The full row from the cleaned fields plus the scoring fields, or `_Unfixable`."""
    if fields["task_id"] is None or fields["task_set"] is None:
        raise _Unfixable("task_id or task_set missing")
    if fields["task_set_digest"] is None or fields["condition"] is None:
        raise _Unfixable("task_set_digest or condition missing")
    score_eligible = _bool(source.get("score_eligible"))
    passed = _bool(source.get("passed"))
    reward = _number(source.get("reward"))
    if score_eligible is None or passed is None or reward is None:
        raise _Unfixable("score_eligible, passed and reward are required")
    failure = source.get("infra_failure_type")
    if failure is None:
        failure = source.get("error_type")
    if failure is not None and failure not in FAILURE_CATEGORIES:
        raise _Unfixable("unreviewed failure category")
    trial_id = fields["trial_id"] or _fresh_trial_id(fields["task_id"])
    row = {
        **fields,
        "trial_id": trial_id,
        "score_eligible": score_eligible,
        "passed": passed,
        "reward": reward,
        "infra_failure_type": failure,
        "error_type": failure,
    }
    defaults = {
        "max_score": 1.0,
        "has_skills": fields["condition"] == "with_skills",
        "agent_transport": "a2a",
        "participant_role": "agent",
    }
    for key, default in defaults.items():
        if row[key] is None:
            row[key] = default
    return {key: row[key] for key in ROW_KEYS}


def _worker_error_row(fields: dict[str, Any], ctx: RowContext) -> PublicRow:
    task_id = fields["task_id"] or UNKNOWN_TASK_ID
    if fields["task_id"] is None:
        # Metadata of an unidentified row cannot be trusted to belong to any task.
        fields = {**fields, "task_digest": None, "category": None, "difficulty": None, "tags": []}
    max_score = fields["max_score"]
    condition = fields["condition"] or "with_skills"
    row = {
        **fields,
        "task_id": task_id,
        "trial_id": fields["trial_id"] or _fresh_trial_id(task_id),
        "task_set": fields["task_set"] or UNKNOWN_TASK_SET,
        "task_set_digest": fields["task_set_digest"] or UNKNOWN_DIGEST,
        "condition": condition,
        "score_eligible": False,
        "passed": False,
        "reward": 0.0,
        "max_score": max_score if max_score is not None and max_score > 0 else 1.0,
        "has_skills": (
            fields["has_skills"] if fields["has_skills"] is not None else condition == "with_skills"
        ),
        "agent_transport": fields["agent_transport"] or "a2a",
        "participant_role": fields["participant_role"] or "agent",
        "infra_failure_type": WORKER_ERROR,
        "error_type": WORKER_ERROR,
    }
    return PublicRow.model_validate({key: row[key] for key in ROW_KEYS})


def _fresh_trial_id(task_id: str) -> str:
    return f"{task_id}__agentbeats__{secrets.token_hex(4)}"


def _name(value: Any, field_name: str) -> str | None:
    if not isinstance(value, str):
        return None
    if name_problem(field_name, value) is None:
        return value
    tail = _path_tail(value)
    return tail if tail is not None and name_problem(field_name, tail) is None else None


def _trial_id(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    if trial_id_problem(value) is None:
        return value
    tail = _path_tail(value)
    return tail if tail is not None and trial_id_problem(tail) is None else None


def _path_tail(value: str) -> str | None:
    """The last part of a local path (jobs/…/citation-check -> citation-check); None for URLs."""
    if "://" in value or ":" in value.split("/", 1)[0]:
        return None
    tail = value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return tail if tail != value else None


def _digest(value: Any) -> str | None:
    return value if isinstance(value, str) and DIGEST_PATTERN.match(value) else None


def _label(value: Any) -> str | None:
    return value if isinstance(value, str) and is_safe_label(value) else None


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _time(value: Any) -> float | None:
    number = _number(value)
    return number if number is not None and number >= 0 else None
