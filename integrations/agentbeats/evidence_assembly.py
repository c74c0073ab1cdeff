"""Assemble public-readiness evidence from what a deployment produced.

By default the three leaderboard queries run over the supplied results files and their row
counts are recorded; only a draft (before public results exist) skips them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderboard.evidence import EVIDENCE_SCHEMA_VERSION, IMAGE_FIELD_SUFFIXES, IMAGE_ROLES
from leaderboard.query_check import QUERY_NAMES, QueryRunner
from leaderboard.task_set_lookup import TaskSetSummary


@dataclass
class RunInput:
    workflow_run_url: str
    results_files: Sequence[Path]
    proof_refs: Sequence[str]


@dataclass
class EvidenceInputs:
    images: Mapping[str, Any]
    task_images: list[dict[str, Any]]
    task_set: TaskSetSummary
    repository: str
    green_agent_id: str
    purple_agent_id: str
    private_proof_storage: str
    private_proof_retention: str
    smoke: RunInput
    canonical: RunInput
    quick_submit_results: Path | None = None
    quick_submit_run_url: str | None = None


def _relative(path: Path, base_dir: Path) -> str:
    return Path(os.path.relpath(path.resolve(), base_dir.resolve())).as_posix()


def _run(run: RunInput, base_dir: Path) -> dict[str, Any]:
    return {
        "workflow_run_url": run.workflow_run_url,
        "results_files": [_relative(p, base_dir) for p in run.results_files],
        "private_proof_manifest_refs": list(run.proof_refs),
    }


def assemble_evidence(
    inputs: EvidenceInputs, *, base_dir: Path, queries: QueryRunner | None
) -> dict[str, Any]:
    """The evidence document; ``queries=None`` makes a draft without query row counts. Pass the
    same runner to ``validate_evidence`` and the queries run once."""
    leaderboard: dict[str, Any] = {"repository": inputs.repository, "queries": list(QUERY_NAMES)}
    if queries is not None:
        files = [*inputs.smoke.results_files, *inputs.canonical.results_files]
        results = queries.run(files)
        leaderboard["query_row_counts"] = {name: len(results[name].rows) for name in QUERY_NAMES}
    images = {
        f"{role}_image{s}": inputs.images.get(f"{role}_image{s}")
        for role in IMAGE_ROLES
        for s in IMAGE_FIELD_SUFFIXES
    }
    doc: dict[str, Any] = {
        "schema_version": EVIDENCE_SCHEMA_VERSION,
        "leaderboard": leaderboard,
        "agentbeats": {
            "green_agent_id": inputs.green_agent_id,
            "purple_agent_id": inputs.purple_agent_id,
        },
        "images": images,
        "task_environment_images": {
            "task_set": inputs.task_set.task_set,
            "task_set_digest": inputs.task_set.task_set_digest,
            "images": sorted(inputs.task_images, key=lambda e: str(e.get("task_id"))),
        },
        "worker": {
            "private_proof_storage": inputs.private_proof_storage,
            "private_proof_retention": inputs.private_proof_retention,
            "require_durable_private_proof": True,
        },
        "public_smoke": _run(inputs.smoke, base_dir),
        "canonical_run": _run(inputs.canonical, base_dir),
    }
    if inputs.quick_submit_results is not None:
        doc["quick_submit"] = {
            "enabled": True,
            "workflow_run_url": inputs.quick_submit_run_url,
            "results_file": _relative(inputs.quick_submit_results, base_dir),
        }
    else:
        doc["quick_submit"] = {"enabled": False}
    return doc
