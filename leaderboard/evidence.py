"""The public-readiness evidence document: its schema version and approved keys.

One owner for the shape: the validator, the assembler and the shipped template all read it here.
"""

from __future__ import annotations

import re

from leaderboard.rows import AGENTBEATS_UUID_PATTERN

EVIDENCE_SCHEMA_VERSION = "skillsbench.agentbeats.public_readiness.v1"
IMAGE_ROLES: tuple[str, ...] = ("green", "worker", "purple")
IMAGE_FIELD_SUFFIXES: tuple[str, ...] = ("", "_digest", "_platform")
RUN_SECTIONS: tuple[str, ...] = ("public_smoke", "canonical_run")

SECTION_KEYS: dict[str, frozenset[str]] = {
    "leaderboard": frozenset({"repository", "queries", "query_row_counts"}),
    "agentbeats": frozenset({"green_agent_id", "purple_agent_id"}),
    "images": frozenset(f"{r}_image{s}" for r in IMAGE_ROLES for s in IMAGE_FIELD_SUFFIXES),
    "task_environment_images": frozenset({"task_set", "task_set_digest", "images"}),
    "worker": frozenset(
        {"private_proof_storage", "private_proof_retention", "require_durable_private_proof"}
    ),
    "public_smoke": frozenset({"workflow_run_url", "results_files", "private_proof_manifest_refs"}),
    "canonical_run": frozenset(
        {"workflow_run_url", "results_files", "private_proof_manifest_refs"}
    ),
    "quick_submit": frozenset({"enabled", "workflow_run_url", "results_file"}),
}
OPTIONAL_SECTIONS: frozenset[str] = frozenset({"quick_submit"})
OPTIONAL_SECTION_KEYS: dict[str, frozenset[str]] = {
    "quick_submit": frozenset({"workflow_run_url", "results_file"}),
}
TOP_LEVEL_KEYS: frozenset[str] = frozenset({"schema_version", *SECTION_KEYS})
TASK_IMAGE_KEYS: frozenset[str] = frozenset({"task_id", "image", "image_digest", "image_platform"})

# Public results files and the envelopes inside them.
RESULTS_FILE_KEYS: frozenset[str] = frozenset({"status", "participants", "results"})

# AgentBeats ids are UUIDs (v7 in practice); the leaderboard repo checks this pattern.
AGENTBEATS_UUID = AGENTBEATS_UUID_PATTERN
GITHUB_REPOSITORY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
WORKFLOW_RUN_URL = re.compile(
    r"^https://github\.com/(?P<repo>[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100})"
    r"/actions/runs/(?P<run>[1-9][0-9]*)(?:/attempts/[1-9][0-9]*)?/?$"
)

# Every rule the readiness validator applies, with what it demands (docs/readiness.md lists them).
RULES: dict[str, str] = {
    "evidence_type": "the evidence is a JSON object",
    "schema_version": f"schema_version is {EVIDENCE_SCHEMA_VERSION!r}",
    "unknown_key": "only approved top-level, section and entry keys",
    "missing_key": "every required section and key is present",
    "section_type": "each section is an object",
    "leaderboard_repository": "leaderboard.repository is '<owner>/<repo>'",
    "queries_exact": "leaderboard.queries is exactly overall, by_category, by_difficulty",
    "query_row_count": "leaderboard.query_row_counts holds a positive integer per query",
    "agentbeats_id": "green and purple ids are AgentBeats UUIDs",
    "image_ref_malformed": "image references parse",
    "image_registry_implicit": "image references name their registry host",
    "image_registry_local": "image registries are not local, loopback or private hosts",
    "image_not_pinned": "image references are pinned with @sha256:<digest>",
    "image_digest": "image digests are sha256:<64 hex>",
    "image_digest_mismatch": "the recorded digest is the one pinned in the reference",
    "image_platform": "platform evidence is linux/amd64",
    "task_set_unknown": "the task set resolves to a manifest",
    "task_set_digest_mismatch": "task_set_digest matches the manifest",
    "task_image_entry": "task environment images are {task_id, image, image_digest, image_platform}",
    "task_image_duplicate": "one image per task",
    "task_image_unexpected": "no image for a task outside the task set",
    "task_image_coverage": "every task of the task set has an image",
    "storage_local_path": "private proof is not worker-local (paths, file://, local://, localhost)",
    "storage_scheme": "private proof uses s3://, gs://, r2:// or access-controlled https://",
    "storage_query": "private proof URIs carry no query string",
    "storage_fragment": "private proof URIs carry no fragment",
    "storage_presigned": "private proof URIs are not presigned or tokenized",
    "storage_credentials": "private proof URIs carry no user info or credential-like parameters",
    "storage_missing_bucket": "private proof URIs name a bucket or host",
    "durable_proof_required": "worker.require_durable_private_proof is true",
    "proof_retention": "worker.private_proof_retention names a policy",
    "workflow_run_url": "run URLs are https://github.com/<owner>/<repo>/actions/runs/<id>",
    "workflow_run_repository": "run URLs come from the target leaderboard repository",
    "proof_manifest_refs": "each run lists its private proof manifest refs",
    "proof_ref_outside_storage": "proof manifest refs live under worker.private_proof_storage",
    "results_files": "each run lists its results files",
    "results_file_missing": "results files exist",
    "results_file_json": "results files are JSON",
    "results_file_keys": "results files hold only status, participants, results",
    "results_file_status": "results files have status 'completed'",
    "results_participants": "participants hold only the registered purple UUID as 'agent'",
    "results_file_envelopes": "results is a non-empty list of envelopes (no legacy direct rows)",
    "envelope_keys": "envelopes hold only status, participants, results",
    "envelope_status": "envelopes have status 'completed'",
    "envelope_rows": "envelopes hold a non-empty row list",
    "row_keys": "row keys stay within the approved public row schema",
    "row_schema": "rows satisfy the public row types and invariants",
    "artifact_ref": "artifact_refs are sha256 digests or public-host https URLs (no query, fragment, secret)",
    "query_failed": "the leaderboard queries run on the results files",
    "query_empty": "each query returns at least one row",
    "query_purple_missing": "the registered purple UUID appears in each query's first column",
    "query_row_count_mismatch": "recorded row counts equal the re-run",
    "quick_submit_enabled": "quick_submit.enabled is a boolean",
    "quick_submit_results_file": "enabled Quick Submit points at one of the validated results files",
    "quick_submit_run_url": "enabled Quick Submit names the run that produced that file",
}
