"""Public-readiness validation: the filled template passes; every rule has a failing example."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from leaderboard.evidence import RULES
from leaderboard.findings import Finding
from leaderboard.query_check import QueryRunner
from leaderboard.readiness import validate_evidence
from tests.leaderboard.support import (
    CANONICAL_URL,
    STORAGE,
    TASK_DIGEST,
    copy_results,
    filled_template,
    published_queries,
    published_task_set,
)

Doc = dict[str, Any]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    copy_results(tmp_path)
    return tmp_path


def validate(doc: Any, workspace: Path, queries: dict[str, str] | None = None) -> list[Finding]:
    return validate_evidence(
        doc,
        base_dir=workspace,
        queries=QueryRunner(queries or published_queries()),
        task_set_loader=published_task_set,
    )


def valid_doc() -> Doc:
    doc, unfilled = filled_template()
    assert not unfilled, f"template placeholders without a test value: {unfilled}"
    return doc


def test_filled_template_passes(workspace: Path) -> None:
    assert validate(valid_doc(), workspace) == []


def test_quick_submit_enabled_on_a_validated_file_passes(workspace: Path) -> None:
    doc = valid_doc()
    doc["quick_submit"]["enabled"] = True
    assert validate(doc, workspace) == []


def _edit_results(workspace: Path, name: str, edit: Callable[[Doc], None]) -> None:
    path = workspace / "results" / name
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _first_row(data: Doc) -> Doc:
    row: Doc = data["results"][0]["results"][0]
    return row


def _all_infra_failed(data: Doc) -> None:
    for envelope in data["results"]:
        for row in envelope["results"]:
            row.update(score_eligible=False, passed=False, reward=0.0)
            row.update(infra_failure_type="sandbox_error", error_type="sandbox_error")


def _set(path: str, value: Any) -> Callable[[Doc, Path], None]:
    keys = path.split(".")

    def mutate(doc: Doc, _: Path) -> None:
        node: Any = doc
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        last = keys[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _delete(path: str) -> Callable[[Doc, Path], None]:
    section, key = path.split(".")
    return lambda doc, _: doc[section].pop(key)


def _results(name: str, edit: Callable[[Doc], None]) -> Callable[[Doc, Path], None]:
    return lambda _, ws: _edit_results(ws, name, edit)


def _enable_qs(**values: Any) -> Callable[[Doc, Path], None]:
    def mutate(doc: Doc, _: Path) -> None:
        doc["quick_submit"].update(enabled=True, **values)

    return mutate


def _extra_task_image(doc: Doc, _: Path) -> None:
    entry = dict(doc["task_environment_images"]["images"][0], task_id="not-in-the-set")
    doc["task_environment_images"]["images"].append(entry)


def _duplicate_task_image(doc: Doc, _: Path) -> None:
    images = doc["task_environment_images"]["images"]
    images.append(dict(images[0]))


def _bad_sql(doc: Doc, ws: Path) -> None:
    (ws / "BROKEN_QUERIES").write_text("1")


ENTRY = "task_environment_images.images.0"
OTHER_UUID = "019e0000-0000-7000-8000-000000000000"

# (rule, expected JSON path or None, mutation)
FAILING: list[tuple[str, str | None, Callable[[Doc, Path], None]]] = [
    ("schema_version", "$.schema_version", _set("schema_version", "v0")),
    ("unknown_key", "$.extra", _set("extra", 1)),
    ("unknown_key", "$.images.green_image_tag", _set("images.green_image_tag", "x")),
    ("missing_key", "$.worker", lambda d, _: d.pop("worker")),
    ("missing_key", "$.images.purple_image_platform", _delete("images.purple_image_platform")),
    ("section_type", "$.agentbeats", _set("agentbeats", [])),
    ("leaderboard_repository", None, _set("leaderboard.repository", "https://github.com/a/b")),
    ("queries_exact", None, _set("leaderboard.queries", ["overall", "overall", "by_category"])),
    ("queries_exact", None, _set("leaderboard.queries", ["overall", "by_category"])),
    ("query_row_count", None, _set("leaderboard.query_row_counts.overall", 0)),
    ("agentbeats_id", "$.agentbeats.purple_agent_id", _set("agentbeats.purple_agent_id", "agent")),
    ("image_ref_malformed", "$.images.green_image", _set("images.green_image", "Bad Ref")),
    (
        "image_registry_implicit",
        None,
        _set("images.green_image", "acme/green@" + "sha256:" + "a" * 64),
    ),
    (
        "image_registry_local",
        None,
        _set("images.worker_image", "localhost:5000/w@sha256:" + "b" * 64),
    ),
    (
        "image_registry_local",
        None,
        _set("images.worker_image", "127.0.0.1:5000/w@sha256:" + "b" * 64),
    ),
    (
        "image_not_pinned",
        "$.images.purple_image",
        _set("images.purple_image", "ghcr.io/acme/p:latest"),
    ),
    ("image_digest", "$.images.green_image_digest", _set("images.green_image_digest", "abc")),
    ("image_digest_mismatch", None, _set("images.green_image_digest", "sha256:" + "e" * 64)),
    (
        "image_platform",
        "$.images.worker_image_platform",
        _set("images.worker_image_platform", "linux/arm64"),
    ),
    (
        "image_platform",
        f"$.{ENTRY.replace('.0', '[0]')}.image_platform",
        _set(f"{ENTRY}.image_platform", None),
    ),
    ("task_set_unknown", None, _set("task_environment_images.task_set", "no-such-set")),
    (
        "task_set_digest_mismatch",
        None,
        _set("task_environment_images.task_set_digest", TASK_DIGEST),
    ),
    ("task_image_entry", None, _set(ENTRY, "ghcr.io/acme/env@" + TASK_DIGEST)),
    ("task_image_duplicate", None, _duplicate_task_image),
    ("task_image_unexpected", None, _extra_task_image),
    (
        "task_image_coverage",
        "$.task_environment_images.images",
        _set("task_environment_images.images", []),
    ),
    ("image_not_pinned", None, _set(f"{ENTRY}.image", "ghcr.io/acme/env:citation-check")),
    ("storage_local_path", None, _set("worker.private_proof_storage", "/home/worker/jobs/proof")),
    (
        "storage_local_path",
        None,
        _set("worker.private_proof_storage", "jobs/agentbeats-private-proof"),
    ),
    (
        "storage_local_path",
        None,
        _set("worker.private_proof_storage", "local://agentbeats-private-proof"),
    ),
    ("storage_local_path", None, _set("worker.private_proof_storage", "file:///srv/proof")),
    ("storage_scheme", None, _set("worker.private_proof_storage", "http://proof.example.com/p")),
    ("storage_scheme", None, _set("worker.private_proof_storage", "ftp://proof.example.com/p")),
    ("storage_query", None, _set("worker.private_proof_storage", "gs://bucket/p?versions=1")),
    ("storage_fragment", None, _set("worker.private_proof_storage", "r2://bucket/p#frag")),
    (
        "storage_presigned",
        None,
        _set("worker.private_proof_storage", "https://b.s3.amazonaws.com/p?X-Amz-Signature=ab"),
    ),
    (
        "storage_credentials",
        None,
        _set("worker.private_proof_storage", "https://u:pw@proof.example.com/p"),
    ),
    ("storage_credentials", None, _set("worker.private_proof_storage", "s3://bucket/token=abc/p")),
    ("storage_missing_bucket", None, _set("worker.private_proof_storage", "s3:///prefix")),
    ("durable_proof_required", None, _set("worker.require_durable_private_proof", False)),
    ("proof_retention", None, _set("worker.private_proof_retention", " ")),
    (
        "workflow_run_url",
        "$.public_smoke.workflow_run_url",
        _set("public_smoke.workflow_run_url", "https://github.com/x"),
    ),
    (
        "workflow_run_repository",
        "$.canonical_run.workflow_run_url",
        _set("canonical_run.workflow_run_url", "https://github.com/someone/fork/actions/runs/5"),
    ),
    ("proof_manifest_refs", None, _set("public_smoke.private_proof_manifest_refs", [])),
    (
        "proof_ref_outside_storage",
        "$.public_smoke.private_proof_manifest_refs[0]",
        _set("public_smoke.private_proof_manifest_refs", ["s3://other-bucket/proof.json"]),
    ),
    (
        "storage_query",
        None,
        _set("canonical_run.private_proof_manifest_refs", [f"{STORAGE}/p.json?x=1"]),
    ),
    ("results_files", "$.public_smoke.results_files", _set("public_smoke.results_files", [])),
    (
        "results_file_missing",
        "$.canonical_run.results_files[0]",
        _set("canonical_run.results_files", ["nope.json"]),
    ),
    (
        "results_file_json",
        None,
        lambda _, ws: (ws / "results" / "smoke.json").write_text("{not json"),
    ),
    ("results_file_keys", "$", _results("smoke.json", lambda d: d.update(metadata={"x": 1}))),
    (
        "results_file_status",
        "$.status",
        _results("smoke.json", lambda d: d.update(status="partial")),
    ),
    (
        "results_participants",
        "$.participants",
        _results("smoke.json", lambda d: d["participants"].update(green=OTHER_UUID)),
    ),
    (
        "results_participants",
        "$.participants.agent",
        _results("canonical.json", lambda d: d["participants"].update(agent=OTHER_UUID)),
    ),
    (
        "results_file_envelopes",
        "$.results[0]",
        _results("smoke.json", lambda d: d.update(results=[_first_row(d)])),
    ),
    ("results_file_envelopes", "$.results", _results("smoke.json", lambda d: d.update(results=[]))),
    (
        "envelope_keys",
        "$.results[0]",
        _results("smoke.json", lambda d: d["results"][0].update(meta={})),
    ),
    (
        "envelope_status",
        "$.results[0].status",
        _results("smoke.json", lambda d: d["results"][0].update(status="failed")),
    ),
    (
        "envelope_rows",
        "$.results[0].results",
        _results("smoke.json", lambda d: d["results"][0].update(results=[])),
    ),
    (
        "row_keys",
        "$.results[0].results[0]",
        _results("smoke.json", lambda d: _first_row(d).update(rollout_dir="/home/worker/jobs/x")),
    ),
    ("row_schema", None, _results("canonical.json", lambda d: _first_row(d).update(reward="high"))),
    (
        "row_schema",
        None,
        _results("canonical.json", lambda d: _first_row(d).update(infra_failure_type="oops")),
    ),
    (
        "artifact_ref",
        "$.results[0].results[0].artifact_refs[0]",
        _results(
            "smoke.json", lambda d: _first_row(d).update(artifact_refs=["s3://private/proof.json"])
        ),
    ),
    (
        "artifact_ref",
        None,
        _results(
            "smoke.json", lambda d: _first_row(d).update(artifact_refs=["https://x.org/a?token=1"])
        ),
    ),
    (
        "artifact_ref",
        None,
        _results("smoke.json", lambda d: _first_row(d).update(artifact_refs=["sandbox://t/1"])),
    ),
    ("query_failed", "$.leaderboard.query_row_counts", _bad_sql),
    (
        "query_empty",
        "$.leaderboard.query_row_counts.overall",
        lambda _, ws: [
            _edit_results(ws, n, _all_infra_failed) for n in ("smoke.json", "canonical.json")
        ],
    ),
    (
        "query_purple_missing",
        "$.leaderboard.query_row_counts.overall",
        _set("agentbeats.purple_agent_id", OTHER_UUID),
    ),
    (
        "query_row_count_mismatch",
        "$.leaderboard.query_row_counts.by_category",
        _set("leaderboard.query_row_counts.by_category", 9),
    ),
    ("quick_submit_enabled", None, _set("quick_submit.enabled", "yes")),
    (
        "quick_submit_results_file",
        "$.quick_submit.results_file",
        _enable_qs(results_file="results/other.json"),
    ),
    (
        "quick_submit_run_url",
        "$.quick_submit.workflow_run_url",
        _enable_qs(results_file="results/smoke.json", workflow_run_url=CANONICAL_URL),
    ),
    (
        "workflow_run_url",
        "$.quick_submit.workflow_run_url",
        _enable_qs(workflow_run_url="http://github.com/x"),
    ),
]


@pytest.mark.parametrize(
    ("rule", "path", "mutate"), FAILING, ids=[f"{i}-{r}" for i, (r, _, _) in enumerate(FAILING)]
)
def test_failing_example(
    rule: str, path: str | None, mutate: Callable[[Doc, Path], None], workspace: Path
) -> None:
    doc = copy.deepcopy(valid_doc())
    mutate(doc, workspace)
    queries = published_queries()
    if (workspace / "BROKEN_QUERIES").exists():
        queries["overall"] = "SELECT no_such_column FROM results"
    findings = validate(doc, workspace, queries)
    hits = [f for f in findings if f.rule == rule]
    assert hits, f"expected {rule}, got {[f.render() for f in findings]}"
    if path is not None:
        assert path in {f.path for f in hits}, [f.render() for f in hits]


def test_every_rule_has_a_failing_example() -> None:
    covered = {rule for rule, _, _ in FAILING} | {"evidence_type"}
    assert covered == set(RULES)


def test_not_an_object() -> None:
    assert [f.rule for f in validate([], Path("."))] == ["evidence_type"]


def test_every_violation_is_listed(workspace: Path) -> None:
    doc = valid_doc()
    doc["images"]["green_image"] = "ghcr.io/acme/green:latest"
    doc["worker"]["private_proof_storage"] = "http://proof.example.com/p?token=1#x"
    doc["leaderboard"]["queries"] = ["overall"]
    doc["unexpected"] = True
    rules = {f.rule for f in validate(doc, workspace)}
    assert {
        "image_not_pinned",
        "storage_scheme",
        "storage_query",
        "storage_fragment",
        "queries_exact",
        "unknown_key",
    } <= rules


def test_results_file_names_are_taken_literally(tmp_path: Path) -> None:
    """A name with glob characters names only itself (the loader otherwise expands globs)."""
    copy_results(tmp_path)
    results = tmp_path / "results"
    (results / "smoke.json").rename(results / "smoke[1].json")
    (results / "canonical.json").rename(results / "smoke1.json")  # what "smoke[1].json" globs to
    runner = QueryRunner(published_queries())
    counts = {name: len(r.rows) for name, r in runner.run([results / "smoke[1].json"]).items()}
    assert counts == {"overall": 1, "by_category": 1, "by_difficulty": 1}
