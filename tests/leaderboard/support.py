"""Hypothesis strategies and helpers shared by the leaderboard tests: valid public rows, poison
values (secrets, local paths, private refs) and results files in the three shapes in use."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from leaderboard.query_check import QUERY_NAMES
from leaderboard.rows import (
    BASE_ROW_KEYS,
    FAILURE_CATEGORIES,
    ROW_KEYS,
    USAGE_KEYS,
    trial_id_problem,
)
from leaderboard.task_set_lookup import TaskSetSummary, load_task_set
from tests.support import PUBLISHED_DATA, REPO_ROOT

HEX = "0123456789abcdef"
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

names = st.from_regex(r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,8}){0,2}", fullmatch=True)
digests = st.text(HEX, min_size=64, max_size=64).map(lambda h: "sha256:" + h)
labels = st.sampled_from(
    [
        "office-white-collar",
        "software-engineering",
        "natural-science",
        "easy",
        "medium",
        "hard",
        "d3.js",
        "data analysis",
        "AgentOps-AI/agentops",
        "google/auto",
        "Python",
        "3D parts understanding",
        "wyckoff_positions",
    ]
)
public_refs = st.sampled_from(
    [
        "https://example.org/artifacts/run-1/result.json",
        "https://github.com/benchflow-ai/skillsbench-leaderboard/actions/runs/12345",
        "sha256:" + "ab" * 32,
    ]
)
uuids = st.uuids().map(str)


# A row's usage as published: none (no usage keys, as every row published before usage), or a
# source with figures, at least one of them known (a row without a figure carries no usage keys).
FIGURE_KEYS = ("input_tokens", "output_tokens", "cost_usd")
_figure = st.none() | st.integers(0, 10**9)
usages = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {
            "input_tokens": _figure,
            "output_tokens": _figure,
            "cost_usd": st.none() | st.integers(0, 10**6).map(lambda n: n / 1000),
            "usage_source": st.sampled_from(
                ["provider_response", "agent_native_acp", "participant_reported"]
            ),
        }
    ).filter(lambda usage: any(usage[key] is not None for key in FIGURE_KEYS)),
)


def as_published(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` as a public row is written: the four usage keys (absent ones null) when it
    carries a figure, else none of them."""
    base = {key: value for key, value in row.items() if key not in USAGE_KEYS}
    if all(row.get(key) is None for key in FIGURE_KEYS):
        return base
    return {**base, **{key: row.get(key) for key in USAGE_KEYS}}


@st.composite
def valid_rows(draw: st.DrawFn, task_ids: st.SearchStrategy[str] = names) -> dict[str, Any]:
    """A row that satisfies every invariant, with time_used already at 3 decimals."""
    task_id = draw(task_ids)
    eligible = draw(st.booleans())
    max_score = draw(st.sampled_from([1.0, 1.0, 2.0, 10.0]))
    if eligible:
        reward = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0])) * max_score
        passed = reward > 0 and draw(st.booleans())
        failure = None
    else:
        reward, passed = 0.0, False
        failure = draw(st.sampled_from(FAILURE_CATEGORIES))
    condition = draw(st.sampled_from(["with_skills", "without_skills"]))
    trial_id = f"{task_id}__agentbeats__{draw(st.text(HEX, min_size=8, max_size=8))}"
    # A task id like "sk-0" makes a trial id that reads as an API key: never publishable.
    assume(trial_id_problem(trial_id) is None)
    row = {
        "task_id": task_id,
        "trial_id": trial_id,
        "task_set": draw(names),
        "task_set_digest": draw(digests),
        "condition": condition,
        "score_eligible": eligible,
        "passed": passed,
        "reward": reward,
        "max_score": max_score,
        "time_used": draw(st.none() | st.integers(0, 10_000_000).map(lambda n: n / 1000)),
        "task_digest": draw(st.none() | digests),
        "category": draw(st.none() | labels),
        "difficulty": draw(st.none() | st.sampled_from(["easy", "medium", "hard"])),
        "tags": draw(st.lists(labels, max_size=4)),
        "has_skills": condition == "with_skills",
        "agent_transport": "a2a",
        "participant_role": "agent",
        "infra_failure_type": failure,
        "error_type": failure,
        "artifact_refs": draw(st.lists(public_refs, max_size=2)),
    }
    usage = draw(usages)
    row.update({key: usage[key] for key in USAGE_KEYS if key in usage})  # in the published order
    assert tuple(row) in (ROW_KEYS, BASE_ROW_KEYS)
    return row


def _token(prefix: str, size: int, alphabet: str = ALNUM) -> st.SearchStrategy[str]:
    # A digit at the end: real keys mix letters and digits.
    return st.text(alphabet, min_size=size, max_size=size + 8).map(lambda t: f"{prefix}{t}7")


secrets_ = st.one_of(
    _token("sk-", 24),
    _token("sk-ant-api03-", 30),
    _token("sk-proj-", 30),
    _token("ghp_", 36),
    _token("github_pat_", 40),
    _token("hf_", 30),
    _token("AKIA", 15, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
    _token("Bearer ", 20),
    _token("password=", 6),
    _token("api_key: ", 12),
    _token("xoxb-", 20),
    st.just("-----BEGIN RSA PRIVATE KEY-----"),
    _token("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.", 20),
)
local_paths = st.one_of(
    st.from_regex(
        r"/(home|root|tmp|var|srv|Users)/[a-z]{1,8}(/[a-z0-9._-]{1,8}){0,3}", fullmatch=True
    ),
    st.from_regex(r"~/[a-z]{1,8}(/[a-z]{1,8}){0,2}", fullmatch=True),
    st.from_regex(r"\.\.?/jobs/[a-z0-9]{1,8}", fullmatch=True),
    st.from_regex(r"[A-Z]:\\Users\\[a-z]{1,8}", fullmatch=True),
)
private_refs = st.one_of(
    st.from_regex(
        r"(s3|gs|r2|sandbox|local|file)://[a-z0-9-]{1,10}(/[a-z0-9._-]{1,10}){0,3}", fullmatch=True
    ),
    st.from_regex(
        r"https://[a-z]{3,8}\.example\.com/[a-z]{1,8}\?(token|X-Amz-Signature|sig)=[a-z0-9]{6,12}",
        fullmatch=True,
    ),
    st.from_regex(
        r"https://[a-z]{3,8}:[a-z0-9]{6,12}@host\.example\.com/[a-z]{1,8}", fullmatch=True
    ),
    st.from_regex(r"https://host\.example\.com/[a-z]{1,8}#frag[a-z0-9]{4,8}", fullmatch=True),
)
poisons = st.one_of(secrets_, local_paths, private_refs)


def all_strings(value: Any) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [str(k), *all_strings(v)]]
    if isinstance(value, list):
        return [s for item in value for s in all_strings(item)]
    return []


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


# Shared test data for the readiness tests: a filled evidence template over published results.
TEMPLATE = REPO_ROOT / "integrations" / "agentbeats" / "public-readiness-evidence.template.json"
PURPLE = "019e5799-ca68-7b33-b1a5-c97b92b6fda1"
GREEN = "019e4ecb-4b5b-7481-b6f4-85ad93336437"
REPO = "benchflow-ai/skillsbench-leaderboard"
SMOKE_URL = f"https://github.com/{REPO}/actions/runs/1001"
CANONICAL_URL = f"https://github.com/{REPO}/actions/runs/1002"
STORAGE = "s3://skillsbench-private-proof/agentbeats"
D = {role: "sha256:" + (c * 64) for role, c in (("green", "a"), ("worker", "b"), ("purple", "c"))}
TASK_DIGEST = "sha256:" + "d" * 64
SMOKE_FILE = "benchflow-ai__skillsbench-leaderboard__results__benchflow-ai-20260618-012425.json"
CANONICAL_FILE = "benchflow-ai__skillsbench-leaderboard__results__benchflow-ai-20260619-012257.json"


def published_queries() -> dict[str, str]:
    return {
        name: (
            PUBLISHED_DATA / f"benchflow-ai__skillsbench-agentbeats__queries__{name}.sql"
        ).read_text(encoding="utf-8")
        for name in QUERY_NAMES
    }


def published_task_set(name: str) -> TaskSetSummary:
    path = PUBLISHED_DATA / f"benchflow-ai__skillsbench-agentbeats__task_sets__{name}.json"
    if not path.is_file():
        raise ValueError(f"task set {name!r} not found")
    return load_task_set(path)


def copy_results(workspace: Path) -> None:
    (workspace / "results").mkdir(parents=True, exist_ok=True)
    shutil.copy(PUBLISHED_DATA / SMOKE_FILE, workspace / "results" / "smoke.json")
    shutil.copy(PUBLISHED_DATA / CANONICAL_FILE, workspace / "results" / "canonical.json")


def fill_values() -> dict[str, Any]:
    smoke = published_task_set("smoke")
    return {
        "<leaderboard-owner/repo>": REPO,
        "<overall-row-count>": 1,
        "<by-category-row-count>": 4,
        "<by-difficulty-row-count>": 2,
        "<registered-green-agentbeats-uuid>": GREEN,
        "<registered-purple-agentbeats-uuid>": PURPLE,
        **{f"<{r}-image@sha256:digest>": f"ghcr.io/acme/skillsbench-{r}@{D[r]}" for r in D},
        **{f"<{r}-image-digest>": D[r] for r in D},
        "<task-set-name>": "smoke",
        "<task-set-digest>": smoke.task_set_digest,
        "<task-id>": "citation-check",
        "<task-environment-image@sha256:digest>": f"ghcr.io/acme/skillsbench-task-env@{TASK_DIGEST}",
        "<task-environment-image-digest>": TASK_DIGEST,
        "<durable-private-proof-prefix>": STORAGE,
        "<private-proof-retention-policy>": "90-days-after-publication",
        "<public-smoke-workflow-run-url>": SMOKE_URL,
        "<public-smoke-results-file>": "results/smoke.json",
        "<public-smoke-proof-manifest-ref>": f"{STORAGE}/run-1001/proof.json",
        "<canonical-workflow-run-url>": CANONICAL_URL,
        "<canonical-results-file>": "results/canonical.json",
        "<canonical-proof-manifest-ref>": f"{STORAGE}/run-1002/proof.json",
        "<quick-submit-workflow-run-url>": CANONICAL_URL,
        "<quick-submit-results-file>": "results/canonical.json",
    }


def fill(node: Any, values: dict[str, Any], unfilled: set[str]) -> Any:
    if isinstance(node, dict):
        return {k: fill(v, values, unfilled) for k, v in node.items()}
    if isinstance(node, list):
        return [fill(v, values, unfilled) for v in node]
    if isinstance(node, str) and node.startswith("<") and node.endswith(">"):
        if node not in values:
            unfilled.add(node)
        return values.get(node, node)
    return node


def filled_template() -> tuple[dict[str, Any], set[str]]:
    unfilled: set[str] = set()
    doc = fill(json.loads(TEMPLATE.read_text(encoding="utf-8")), fill_values(), unfilled)
    return doc, unfilled
