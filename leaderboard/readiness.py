"""Validate public-readiness evidence: every rule, every violation, each at its JSON path.

The evidence proves a SkillsBench deployment is fit for public scoring: pinned public images for
the green, worker and purple agents; a prebuilt image for every task of the task set; durable
private proof; public smoke and canonical runs from the leaderboard repository whose results files
pass the public schema and reproduce the recorded leaderboard query rows.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from leaderboard.evidence import (
    AGENTBEATS_UUID,
    EVIDENCE_SCHEMA_VERSION,
    GITHUB_REPOSITORY,
    OPTIONAL_SECTION_KEYS,
    OPTIONAL_SECTIONS,
    RUN_SECTIONS,
    SECTION_KEYS,
    TOP_LEVEL_KEYS,
    WORKFLOW_RUN_URL,
)
from leaderboard.findings import EvidenceCollector, Finding, child, json_path
from leaderboard.query_check import QUERY_NAMES, QueryRunner
from leaderboard.readiness_images import TaskSetLoader, check_images, check_task_images
from leaderboard.readiness_results import check_queries, check_results_file
from leaderboard.storage_refs import is_under_prefix, private_storage_problems
from leaderboard.task_set_lookup import load_task_set


def validate_evidence(
    doc: Any,
    *,
    base_dir: Path,
    queries: QueryRunner,
    task_set_loader: TaskSetLoader = load_task_set,
) -> list[Finding]:
    """All findings for ``doc``; results files resolve relative to ``base_dir``, and ``queries``
    runs the leaderboard queries over them."""
    c = EvidenceCollector()
    if not isinstance(doc, dict):
        c.add("$", "evidence_type", "the evidence must be a JSON object")
        return c.findings
    if doc.get("schema_version") != EVIDENCE_SCHEMA_VERSION:
        c.add(json_path("schema_version"), "schema_version", f"must be {EVIDENCE_SCHEMA_VERSION!r}")
    c.keys(doc, "$", TOP_LEVEL_KEYS, TOP_LEVEL_KEYS - OPTIONAL_SECTIONS)
    sections: dict[str, dict[str, Any]] = {}
    for name, allowed in SECTION_KEYS.items():
        value = doc.get(name)
        if value is None:
            continue
        if not isinstance(value, dict):
            c.add(json_path(name), "section_type", f"{name} must be an object")
            continue
        c.keys(
            value, json_path(name), allowed, allowed - OPTIONAL_SECTION_KEYS.get(name, frozenset())
        )
        sections[name] = value
    repository = _check_leaderboard(c, sections.get("leaderboard", {}))
    purple_id = _check_agentbeats(c, sections.get("agentbeats", {}))
    check_images(c, sections.get("images", {}))
    check_task_images(c, sections.get("task_environment_images", {}), task_set_loader)
    storage = _check_worker(c, sections.get("worker", {}))
    run_files: dict[str, str] = {}  # normalized results file -> workflow run url of its section
    for name in RUN_SECTIONS:
        if name in sections:
            run_files.update(_check_run(c, name, sections[name], repository, storage))
    readable = _check_results_files(c, sections, base_dir, purple_id)
    if readable and len(readable) == len(run_files):
        c.findings.extend(
            check_queries(
                readable,
                queries,
                purple_id,
                sections.get("leaderboard", {}).get("query_row_counts"),
            )
        )
    if "quick_submit" in sections:
        _check_quick_submit(c, sections["quick_submit"], repository, run_files)
    return c.findings


def _check_leaderboard(c: EvidenceCollector, section: dict[str, Any]) -> str | None:
    path = json_path("leaderboard")
    repository = section.get("repository")
    if "repository" in section and not (
        isinstance(repository, str) and GITHUB_REPOSITORY.match(repository)
    ):
        c.add(
            child(path, "repository"),
            "leaderboard_repository",
            "must be '<owner>/<repo>' on GitHub",
        )
        repository = None
    queries = section.get("queries")
    if "queries" in section:
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            c.add(child(path, "queries"), "queries_exact", "must be a list of query names")
        else:
            dupes = sorted(q for q, n in Counter(queries).items() if n > 1)
            if dupes or sorted(queries) != sorted(QUERY_NAMES):
                c.add(
                    child(path, "queries"),
                    "queries_exact",
                    f"must be exactly {list(QUERY_NAMES)} with no duplicates, got {queries}",
                )
    counts = section.get("query_row_counts")
    if "query_row_counts" in section:
        if not isinstance(counts, dict):
            c.add(
                child(path, "query_row_counts"),
                "query_row_count",
                "must map each query to its row count",
            )
        else:
            for name in sorted(set(counts) | set(QUERY_NAMES)):
                value = counts.get(name)
                if name not in QUERY_NAMES:
                    c.add(
                        child(path, "query_row_counts", name),
                        "unknown_key",
                        f"{name!r} is not a query",
                    )
                elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    c.add(
                        child(path, "query_row_counts", name),
                        "query_row_count",
                        "must be a positive integer",
                    )
    return repository if isinstance(repository, str) else None


def _check_agentbeats(c: EvidenceCollector, section: dict[str, Any]) -> str | None:
    for key in ("green_agent_id", "purple_agent_id"):
        value = section.get(key)
        if key in section and not (isinstance(value, str) and AGENTBEATS_UUID.match(value)):
            c.add(
                json_path("agentbeats", key),
                "agentbeats_id",
                "must be a registered AgentBeats UUID",
            )
    purple = section.get("purple_agent_id")
    return purple if isinstance(purple, str) and AGENTBEATS_UUID.match(purple) else None


def _check_worker(c: EvidenceCollector, section: dict[str, Any]) -> str | None:
    base = json_path("worker")
    storage = section.get("private_proof_storage")
    good = "private_proof_storage" in section
    if good:
        problems = (
            private_storage_problems(storage)
            if isinstance(storage, str)
            else [("storage_local_path", "must be a URI string")]
        )
        for rule, message in problems:
            c.add(child(base, "private_proof_storage"), rule, message)
        good = not problems
    if (
        "require_durable_private_proof" in section
        and section["require_durable_private_proof"] is not True
    ):
        c.add(
            child(base, "require_durable_private_proof"),
            "durable_proof_required",
            "must be true for public readiness",
        )
    retention = section.get("private_proof_retention")
    if "private_proof_retention" in section and not (
        isinstance(retention, str) and retention.strip()
    ):
        c.add(
            child(base, "private_proof_retention"),
            "proof_retention",
            "must name the retention policy",
        )
    return storage if good and isinstance(storage, str) else None


def _check_run_url(c: EvidenceCollector, path: str, url: Any, repository: str | None) -> bool:
    match = WORKFLOW_RUN_URL.match(url) if isinstance(url, str) else None
    if match is None:
        c.add(
            path, "workflow_run_url", "must be https://github.com/<owner>/<repo>/actions/runs/<id>"
        )
        return False
    if repository is not None and match["repo"].lower() != repository.lower():
        c.add(
            path,
            "workflow_run_repository",
            f"run is from {match['repo']!r}, not the leaderboard {repository!r}",
        )
        return False
    return True


def _check_run(
    c: EvidenceCollector,
    name: str,
    section: dict[str, Any],
    repository: str | None,
    storage: str | None,
) -> dict[str, str]:
    base = json_path(name)
    url = section.get("workflow_run_url")
    if "workflow_run_url" in section:
        _check_run_url(c, child(base, "workflow_run_url"), url, repository)
    refs = section.get("private_proof_manifest_refs")
    if "private_proof_manifest_refs" in section:
        if not isinstance(refs, list) or not refs:
            c.add(
                child(base, "private_proof_manifest_refs"),
                "proof_manifest_refs",
                "must be a non-empty list of URIs",
            )
        else:
            for i, ref in enumerate(refs):
                path = child(base, "private_proof_manifest_refs", i)
                problems = (
                    private_storage_problems(ref)
                    if isinstance(ref, str)
                    else [("storage_local_path", "must be a URI string")]
                )
                for rule, message in problems:
                    c.add(path, rule, message)
                if not problems and storage is not None and not is_under_prefix(ref, storage):
                    c.add(path, "proof_ref_outside_storage", f"{ref!r} is not under {storage!r}")
    files = section.get("results_files")
    if "results_files" in section and (
        not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files)
    ):
        c.add(
            child(base, "results_files"), "results_files", "must be a non-empty list of file paths"
        )
        return {}
    return {_norm(f): str(url) for f in files or []}


def _norm(path: str) -> str:
    return Path(path).as_posix().removeprefix("./")


def _check_results_files(
    c: EvidenceCollector, sections: dict[str, dict[str, Any]], base_dir: Path, purple_id: str | None
) -> list[Path]:
    readable: dict[str, Path] = {}
    for name in RUN_SECTIONS:
        files = sections.get(name, {}).get("results_files")
        for i, rel in enumerate(files if isinstance(files, list) else []):
            if not isinstance(rel, str) or _norm(rel) in readable:
                continue
            path = base_dir / rel
            if not path.is_file():
                c.add(
                    json_path(name, "results_files", i),
                    "results_file_missing",
                    f"{rel!r} does not exist",
                )
                continue
            readable[_norm(rel)] = path
            c.findings.extend(check_results_file(path, purple_id, rel))
    return list(readable.values())


def _check_quick_submit(
    c: EvidenceCollector, section: dict[str, Any], repository: str | None, run_files: dict[str, str]
) -> None:
    base = json_path("quick_submit")
    enabled = section.get("enabled")
    if not isinstance(enabled, bool):
        c.add(child(base, "enabled"), "quick_submit_enabled", "must be true or false")
        return
    if not enabled:
        return
    results_file = section.get("results_file")
    if not isinstance(results_file, str) or _norm(results_file) not in run_files:
        c.add(
            child(base, "results_file"),
            "quick_submit_results_file",
            "must be one of the validated public_smoke / canonical_run results files",
        )
        return
    url = section.get("workflow_run_url")
    if (
        _check_run_url(c, child(base, "workflow_run_url"), url, repository)
        and url != run_files[_norm(results_file)]
    ):
        c.add(
            child(base, "workflow_run_url"),
            "quick_submit_run_url",
            "must be the workflow run that produced the referenced results file",
        )
