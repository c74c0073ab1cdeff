"""The public result row and envelope: the contract AgentBeats and the leaderboard queries read.

This module owns the key order, the reviewed failure categories, the row invariants and the
redaction rules: what may not appear in a public row (secrets, local paths, private or tokenized
references). The row model rejects values these predicates flag, the normalizer
(``leaderboard.normalize``) drops or replaces them, and the readiness checks report them, so all
three apply one set of rules.

A published contract: a leaf module (stdlib and pydantic only) that other components import.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

# --- redaction: what may not appear in a public row ----------------------------------------
# Storage and internal schemes that point at private proof or worker-local state.
_PRIVATE_SCHEMES = frozenset(
    {"s3", "gs", "r2", "sandbox", "local", "file", "worker", "jobs", "internal"}
)
_LOCAL_NAMES = {"localhost", "host.docker.internal", "gateway.docker.internal", "kubernetes"}
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain", ".lan", ".home.arpa")
_NUMERIC_LABEL = re.compile(r"^(?:[0-9]+|0x[0-9a-f]*)$")

_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    # Provider API keys: OpenAI/Anthropic style sk-..., GitHub tokens, Slack, Google, Hugging Face.
    re.compile(r"(?<![A-Za-z0-9])sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{30,}"),
    re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}"),
    # AWS access key ids.
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16,}"),
    # Authorization headers and JSON web tokens.
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    # key=value credentials: password=..., api_key: ..., X-Amz-Signature=...
    re.compile(
        r"(?i)(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|access[_-]?key|auth|credential"
        r"|authorization|signature|sig|x-amz-[a-z-]+|session[_-]?id)[\"']?\s*[:=]\s*\S+"
    ),
)

# A path start after a separator: /abs, ~/home, ./rel, ../up, C:\win, \\server.
_LOCAL_PATH = re.compile(
    r"(?:^|[\s=:,;'\"(\[{<])(?:/|~(?:[A-Za-z0-9_.-]*)/|\.{1,2}/|[A-Za-z]:\\|\\\\)"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")  # owner of the digest shape


def looks_secret(value: str) -> bool:
    """True when the text contains something shaped like a credential."""
    return any(pattern.search(value) for pattern in _SECRET_PATTERNS)


def has_local_path(value: str) -> bool:
    """True when the text contains an absolute, home-relative, dot-relative or Windows path."""
    return bool(_LOCAL_PATH.search(value)) or "\\" in value


def is_safe_label(value: str, *, max_length: int = 200) -> bool:
    """A short public label (category, tag, transport): no path, URL, secret or control chars.

    Slashes inside a word are allowed because published tags name repositories
    (``AgentOps-AI/agentops``); a slash that starts a path is not.
    """
    return (
        0 < len(value) <= max_length
        and value == value.strip()
        and not _CONTROL.search(value)
        and "://" not in value
        and "/.." not in value
        and not value.startswith((".", "~", "/"))
        and not has_local_path(value)
        and not looks_secret(value)
    )


def is_local_host(host: str) -> bool:
    """Loopback, private, link-local and local-only names (``host`` may carry a port): nothing
    outside the deployment can reach them."""
    if host.startswith("["):
        host = host[1 : host.index("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    host = host.lower().rstrip(".")
    if (
        host in _LOCAL_NAMES
        or host.endswith(_LOCAL_SUFFIXES)
        or ("." not in host and ":" not in host)
    ):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        # URL parsers read a host whose last label is a number (127.1, 0x7f.1) as an IPv4
        # address; no public DNS name ends in one.
        return bool(_NUMERIC_LABEL.match(host.rsplit(".", 1)[-1]))
    return not address.is_global


def artifact_ref_problems(ref: object) -> list[str]:
    """Why ``ref`` may not be a public artifact ref (empty when it may); the reasons never
    repeat the ref, which may hold a secret.

    A public ref is a ``sha256:`` content digest (it names bytes without saying where they are
    stored) or an ``https://`` URL on a public host with no user info, query string, fragment,
    ``..`` segment or credential-shaped text. Private storage schemes, paths and private or local
    hosts are refused: a public row must never point at storage the public cannot reach.
    """
    if not isinstance(ref, str) or not ref.strip():
        return ["an artifact ref must be a non-empty string"]
    if ref != ref.strip() or _CONTROL.search(ref) or any(c.isspace() or c == "\\" for c in ref):
        return ["contains whitespace, control characters or backslashes"]
    if DIGEST_PATTERN.match(ref):
        return []
    problems: list[str] = []
    try:
        parts = urlsplit(ref)
        host = parts.hostname
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return ["is not a well-formed URL"]
    scheme = parts.scheme.lower()
    if scheme in _PRIVATE_SCHEMES:
        problems.append(f"uses private or internal scheme {scheme}://")
    elif not scheme:
        problems.append("is a path, not a sha256: digest or public https:// URL")
    elif scheme != "https":
        problems.append("must be a sha256: digest or an https:// URL")
    elif not host:
        problems.append("names no host")
    elif is_local_host(host):
        problems.append("points at a private or local host")
    if "@" in parts.netloc:
        problems.append("carries user info")
    if parts.query or "?" in ref:
        problems.append("has a query string")
    if parts.fragment or "#" in ref:
        problems.append("has a fragment")
    if "/.." in parts.path:
        problems.append("climbs out of its path with '..'")
    if looks_secret(ref):
        problems.append("carries something shaped like a credential")
    return problems


def is_public_artifact_ref(value: str) -> bool:
    """A stable public reference (see ``artifact_ref_problems``)."""
    return not artifact_ref_problems(value)


def public_url(value: str) -> str | None:
    """The URL without credentials, query string and fragment; None if it is not http(s)."""
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in {"http", "https"} or not host:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    cleaned = f"{parts.scheme}://{netloc}{parts.path}"
    if looks_secret(cleaned) or _CONTROL.search(cleaned) or any(c.isspace() for c in cleaned):
        return None
    return cleaned


# --- the row and the envelope ---------------------------------------------------------------

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
    # Optional usage (added after the first published rows: rows without these keys still
    # validate, and read as null). Null is unknown, never 0. Published only when the row
    # carries a figure (PublicRow.public_dict).
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "usage_source",
)
USAGE_KEYS: tuple[str, ...] = ("input_tokens", "output_tokens", "cost_usd", "usage_source")
# The keys of a row without usage figures (every published row that predates usage).
BASE_ROW_KEYS: tuple[str, ...] = tuple(key for key in ROW_KEYS if key not in USAGE_KEYS)

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
# The worker's own failures: a trial with one of these never reached the agent's work (or its
# grading). A result whose every row is one of these scored nothing because of the worker.
WORKER_FAILURE_CATEGORIES: frozenset[str] = frozenset(
    {"worker_timeout", "worker_cancelled", "worker_error"}
)


def worker_failed(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """``"3 worker_error"`` when no row was scored and every one is a worker failure (the
    worker refused, lost or never ran the run: the rows measure the worker, not the agent),
    else None."""
    if not rows or any(
        row.get("score_eligible") or row.get("infra_failure_type") not in WORKER_FAILURE_CATEGORIES
        for row in rows
    ):
        return None
    kinds = Counter(str(row.get("infra_failure_type")) for row in rows)
    return ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))


# The harness's own agents (``agent_transport`` of their rows): references and probes (the
# task's solution, doing nothing, a script), never participants. Their rows never reach a
# leaderboard: ``leaderboard aggregate`` and ``validate --contract`` refuse them.
BUILTIN_AGENT_TRANSPORTS: Final = frozenset({"oracle", "nop", "script"})


def is_builtin_transport(value: str) -> bool:
    """Whether an ``agent_transport`` names a built-in agent, however a hand-edited file spells
    it (``Oracle``, `` nop``, ``SCRIPT:/x.sh``): the worker writes only the exact names."""
    return value.strip().split(":", 1)[0].strip().lower() in BUILTIN_AGENT_TRANSPORTS


CONDITIONS: tuple[str, ...] = ("with_skills", "without_skills")
# Who the usage figures come from: the worker measured them (provider_response through its model
# proxy, agent_native_acp from the agent's own ACP report), the participant said so itself
# (participant_reported, never trusted as a measurement), or nothing was recorded (unavailable).
# The same vocabulary as result.json's agent_result.usage_source (worker/usage/records.py).
UsageSource = Literal[
    "provider_response", "agent_native_acp", "participant_reported", "unavailable"
]
USAGE_SOURCES: tuple[str, ...] = get_args(UsageSource)
MEASURED_USAGE_SOURCES: tuple[str, ...] = ("provider_response", "agent_native_acp")

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
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    usage_source: UsageSource | None = None

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

    @field_validator("input_tokens", "output_tokens", mode="before")
    @classmethod
    def _whole_tokens(cls, value: Any) -> Any:
        # Rows that crossed A2A as protobuf Values carry every number as a double (175.0).
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    @field_validator("input_tokens", "output_tokens")
    @classmethod
    def _tokens(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"{info.field_name} must be a non-negative number of tokens or null")
        return value

    @field_validator("cost_usd")
    @classmethod
    def _cost(cls, value: float | None) -> float | None:
        if value is not None and value < 0:
            raise ValueError("cost_usd must be a non-negative number of US dollars or null")
        return value

    @model_validator(mode="after")
    def _invariants(self) -> PublicRow:
        if self.usage_source in (None, "unavailable") and (
            self.input_tokens is not None
            or self.output_tokens is not None
            or self.cost_usd is not None
        ):
            raise ValueError(
                "input_tokens, output_tokens and cost_usd need a usage_source that says who "
                "measured or reported them"
            )
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

    def carries_usage(self) -> bool:
        """Whether the row holds a usage figure (tokens or cost)."""
        return any(
            value is not None for value in (self.input_tokens, self.output_tokens, self.cost_usd)
        )

    def public_dict(self) -> dict[str, Any]:
        """The row as published, in the published order. The usage keys appear only when the
        row carries a figure: a row without one reads as the published rows that predate usage
        (which lack the keys), so a published row normalizes to itself."""
        data = self.model_dump(mode="json")
        keys = ROW_KEYS if self.carries_usage() else BASE_ROW_KEYS
        return {key: data[key] for key in keys}


def usage_count(value: Any) -> int | None:
    """A token count as a public row holds it: a non-negative whole number (175 or 175.0, as a
    row that crossed A2A as protobuf Values carries it), else None (unknown)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if value >= 0 else None


def usage_cost(value: Any) -> float | None:
    """A cost in US dollars as a public row holds it: a non-negative finite number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


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
