"""Validate public-readiness evidence: every rule, every violation, each at its JSON path.

The evidence proves a SkillsBench deployment is fit for public scoring: pinned public images for
the green, worker and purple agents; a prebuilt image for every task of the task set; durable
private proof; public smoke and canonical runs from the leaderboard repository whose results files
pass the public schema and reproduce the recorded leaderboard query rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from leaderboard.evidence import (
    AGENTBEATS_UUID,
    EVIDENCE_SCHEMA_VERSION,
    GITHUB_REPOSITORY,
    IMAGE_ROLES,
    OPTIONAL_SECTION_KEYS,
    OPTIONAL_SECTIONS,
    RUN_SECTIONS,
    SECTION_KEYS,
    TASK_IMAGE_KEYS,
    TOP_LEVEL_KEYS,
    WORKFLOW_RUN_URL,
)
from leaderboard.findings import Finding, child, json_path
from leaderboard.image_refs import (
    REQUIRED_PLATFORM,
    SHA256_DIGEST,
    parse_image_ref,
    public_image_problems,
)
from leaderboard.query_check import QUERY_NAMES
from leaderboard.readiness_results import check_queries, check_results_file
from leaderboard.storage_refs import is_under_prefix, private_storage_problems
from leaderboard.task_set_lookup import TaskSetSummary, load_task_set

TaskSetLoader = Callable[[str], TaskSetSummary]


class _Collector:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, path: str, rule: str, message: str) -> None:
        self.findings.append(Finding(path=path, rule=rule, message=message))

    def keys(
        self, obj: dict[str, Any], path: str, allowed: frozenset[str], required: frozenset[str]
    ) -> None:
        for key in sorted(set(obj) - allowed):
            self.add(child(path, key), "unknown_key", f"{key!r} is not an approved key here")
        for key in sorted(required - set(obj)):
            self.add(child(path, key), "missing_key", f"{key!r} is required")


def validate_evidence(
    doc: Any,
    *,
    base_dir: Path,
    queries: Mapping[str, str],
    task_set_loader: TaskSetLoader = load_task_set,
) -> list[Finding]:
    """All findings for ``doc``; results files resolve relative to ``base_dir``."""
    c = _Collector()
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
    _check_images(c, sections.get("images", {}))
    _check_task_images(c, sections.get("task_environment_images", {}), task_set_loader)
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


def _check_leaderboard(c: _Collector, section: dict[str, Any]) -> str | None:
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


def _check_agentbeats(c: _Collector, section: dict[str, Any]) -> str | None:
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


def _check_image(
    c: _Collector, paths: tuple[str, str, str], ref: Any, digest: Any, platform: Any
) -> None:
    ref_path, digest_path, platform_path = paths
    if not isinstance(ref, str):
        c.add(ref_path, "image_ref_malformed", "must be an image reference string")
    else:
        for rule, message in public_image_problems(ref):
            c.add(ref_path, rule, message)
    if not (isinstance(digest, str) and SHA256_DIGEST.match(digest)):
        c.add(digest_path, "image_digest", "must be sha256:<64 hex>")
    elif isinstance(ref, str):
        try:
            pinned = parse_image_ref(ref).digest
        except ValueError:
            pinned = None
        if pinned is not None and pinned != digest:
            c.add(
                digest_path,
                "image_digest_mismatch",
                f"{digest} is not the digest pinned in {ref!r}",
            )
    if platform != REQUIRED_PLATFORM:
        c.add(
            platform_path,
            "image_platform",
            f"platform evidence must be {REQUIRED_PLATFORM!r}, got {platform!r}",
        )


def _check_images(c: _Collector, section: dict[str, Any]) -> None:
    for role in IMAGE_ROLES:
        key = f"{role}_image"
        if key not in section:
            continue
        paths = (
            json_path("images", key),
            json_path("images", f"{key}_digest"),
            json_path("images", f"{key}_platform"),
        )
        _check_image(
            c, paths, section.get(key), section.get(f"{key}_digest"), section.get(f"{key}_platform")
        )


def _check_task_images(c: _Collector, section: dict[str, Any], loader: TaskSetLoader) -> None:
    base = json_path("task_environment_images")
    name = section.get("task_set")
    summary: TaskSetSummary | None = None
    if isinstance(name, str):
        try:
            summary = loader(name)
        except ValueError as exc:
            c.add(child(base, "task_set"), "task_set_unknown", str(exc))
    elif "task_set" in section:
        c.add(child(base, "task_set"), "task_set_unknown", "must be a task-set name")
    digest = section.get("task_set_digest")
    if summary is not None and "task_set_digest" in section and digest != summary.task_set_digest:
        c.add(
            child(base, "task_set_digest"),
            "task_set_digest_mismatch",
            f"{digest!r} is not the digest of task set {summary.task_set!r} ({summary.task_set_digest})",
        )
    images = section.get("images")
    if "images" in section and not isinstance(images, list):
        c.add(child(base, "images"), "task_image_entry", "must be a list of task image entries")
        return
    seen: Counter[str] = Counter()
    for i, entry in enumerate(images or []):
        path = child(base, "images", i)
        if not isinstance(entry, dict):
            c.add(
                path,
                "task_image_entry",
                "must be an object {task_id, image, image_digest, image_platform}",
            )
            continue
        c.keys(entry, path, TASK_IMAGE_KEYS, TASK_IMAGE_KEYS)
        task_id = entry.get("task_id")
        if isinstance(task_id, str):
            seen[task_id] += 1
            if seen[task_id] == 2:
                c.add(
                    child(path, "task_id"),
                    "task_image_duplicate",
                    f"{task_id!r} has more than one image",
                )
            if summary is not None and task_id not in summary.task_ids:
                c.add(
                    child(path, "task_id"),
                    "task_image_unexpected",
                    f"{task_id!r} is not in task set {summary.task_set!r}",
                )
        paths = (child(path, "image"), child(path, "image_digest"), child(path, "image_platform"))
        _check_image(
            c, paths, entry.get("image"), entry.get("image_digest"), entry.get("image_platform")
        )
    if summary is not None:
        missing = [t for t in summary.task_ids if t not in seen]
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            )
            c.add(
                child(base, "images"),
                "task_image_coverage",
                f"{len(missing)} of {len(summary.task_ids)} tasks of {summary.task_set!r} have no image: {shown}",
            )


def _check_worker(c: _Collector, section: dict[str, Any]) -> str | None:
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


def _check_run_url(c: _Collector, path: str, url: Any, repository: str | None) -> bool:
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
    c: _Collector, name: str, section: dict[str, Any], repository: str | None, storage: str | None
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
    c: _Collector, sections: dict[str, dict[str, Any]], base_dir: Path, purple_id: str | None
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
    c: _Collector, section: dict[str, Any], repository: str | None, run_files: dict[str, str]
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


def check_images_section(section: dict[str, Any]) -> list[Finding]:
    """The image rules alone (digest-pinned, public registry, linux/amd64) for one section."""
    c = _Collector()
    c.keys(section, json_path("images"), SECTION_KEYS["images"], frozenset())
    _check_images(c, section)
    return c.findings


def check_task_images_section(section: dict[str, Any], loader: TaskSetLoader) -> list[Finding]:
    """Task environment image rules: pinned public images covering the whole task set."""
    c = _Collector()
    _check_task_images(c, section, loader)
    return c.findings
