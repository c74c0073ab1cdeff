"""Readiness checks on the public results files named by the evidence, and the query re-run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from leaderboard.evidence import RESULTS_FILE_KEYS
from leaderboard.findings import Finding, child, json_path
from leaderboard.query_check import QUERY_NAMES, QueryRunner
from leaderboard.rows import ROW_KEYS, PublicRow, artifact_ref_problems


def check_results_file(path: Path, purple_id: str | None, label: str) -> list[Finding]:
    """Findings for one public results file (``label`` names it in each finding)."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return [Finding(path="$", rule="results_file_json", message=str(exc), file=label)]
    out: list[Finding] = []

    def add(p: str, rule: str, message: str) -> None:
        out.append(Finding(path=p, rule=rule, message=message, file=label))

    if not isinstance(data, dict):
        add("$", "results_file_keys", "a results file is an object {status, participants, results}")
        return out
    extra = sorted(set(data) - RESULTS_FILE_KEYS)
    if extra:
        add("$", "results_file_keys", f"top-level keys {extra} are not allowed in public results")
    if data.get("status") != "completed":
        add(json_path("status"), "results_file_status", "status must be 'completed'")
    participants = data.get("participants")
    if not isinstance(participants, dict) or set(participants) != {"agent"}:
        add(
            json_path("participants"),
            "results_participants",
            "participants must hold only the registered agent UUID under 'agent'",
        )
    elif purple_id is not None and participants.get("agent") != purple_id:
        add(
            json_path("participants", "agent"),
            "results_participants",
            f"participants.agent {participants.get('agent')!r} is not the registered purple id",
        )
    envelopes = data.get("results")
    if not isinstance(envelopes, list) or not envelopes:
        add(json_path("results"), "results_file_envelopes", "results must be a non-empty list")
        return out
    for i, envelope in enumerate(envelopes):
        out.extend(_check_envelope(envelope, json_path("results", i), label))
    return out


def _check_envelope(envelope: Any, path: str, label: str) -> list[Finding]:
    def finding(p: str, rule: str, message: str) -> Finding:
        return Finding(path=p, rule=rule, message=message, file=label)

    if not isinstance(envelope, dict) or "task_id" in envelope:
        return [
            finding(
                path,
                "results_file_envelopes",
                "each item must be a result envelope {status, participants, results} "
                "(the legacy direct-row shape is rejected)",
            )
        ]
    out: list[Finding] = []
    extra = sorted(set(envelope) - RESULTS_FILE_KEYS)
    if extra:
        out.append(finding(path, "envelope_keys", f"envelope keys {extra} are not allowed"))
    if envelope.get("status") != "completed":
        out.append(finding(child(path, "status"), "envelope_status", "must be 'completed'"))
    rows = envelope.get("results")
    if not isinstance(rows, list) or not rows:
        out.append(finding(child(path, "results"), "envelope_rows", "needs a non-empty row list"))
        return out
    for j, row in enumerate(rows):
        out.extend(finding(p, r, m) for p, r, m in _row_problems(row, child(path, "results", j)))
    return out


def _row_problems(row: Any, path: str) -> list[tuple[str, str, str]]:
    if not isinstance(row, dict):
        return [(path, "row_schema", "a row must be an object")]
    problems: list[tuple[str, str, str]] = []
    extra = [key for key in row if key not in ROW_KEYS]
    if extra:
        problems.append((path, "row_keys", f"keys {extra} are outside the approved row schema"))
    try:
        PublicRow.model_validate({k: v for k, v in row.items() if k in ROW_KEYS})
    except ValidationError as exc:
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"]) or "row"
            problems.append((path, "row_schema", f"{where}: {error['msg']}"))
    refs = row.get("artifact_refs", [])
    for k, ref in enumerate(refs if isinstance(refs, list) else []):
        for message in artifact_ref_problems(ref):
            problems.append((child(path, "artifact_refs", k), "artifact_ref", message))
    return problems


def check_queries(
    files: Sequence[Path],
    runner: QueryRunner,
    purple_id: str | None,
    recorded: Any,
) -> list[Finding]:
    """Re-run the queries; each must return rows, name the purple id, and match the record."""
    counts_path = json_path("leaderboard", "query_row_counts")
    try:
        results = runner.run(files)
    except ValueError as exc:
        return [Finding(path=counts_path, rule="query_failed", message=str(exc))]
    out: list[Finding] = []
    for name in QUERY_NAMES:
        rows = results[name].rows if name in results else ()
        path = child(counts_path, name)
        if not rows:
            out.append(Finding(path=path, rule="query_empty", message=f"{name} returns no rows"))
            continue
        if purple_id is not None and purple_id not in {str(r[0]) for r in rows}:
            out.append(
                Finding(
                    path=path,
                    rule="query_purple_missing",
                    message=f"{name}: the registered purple id is not in the first column",
                )
            )
        if isinstance(recorded, dict) and recorded.get(name) != len(rows):
            out.append(
                Finding(
                    path=path,
                    rule="query_row_count_mismatch",
                    message=f"{name} recorded {recorded.get(name)!r} rows, re-run gives {len(rows)}",
                )
            )
    return out
