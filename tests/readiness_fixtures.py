"""Shared test data for the readiness tests: a filled evidence template over published results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from testsupport import PUBLISHED_DATA, REPO_ROOT

from leaderboard.query_check import QUERY_NAMES
from leaderboard.task_set_lookup import TaskSetSummary, load_task_set

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
