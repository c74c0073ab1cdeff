"""One artifact-ref rule for every call site: the row model, the normalizer and the readiness
check of public results files accept and refuse exactly the same refs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from leaderboard.normalize import normalize_row
from leaderboard.readiness_results import check_results_file
from leaderboard.rows import PublicRow, artifact_ref_problems, is_public_artifact_ref
from tests.leaderboard.support import SMOKE_FILE
from tests.support import PUBLISHED_DATA

PUBLIC = [
    "sha256:" + "ab" * 32,  # a content digest names bytes, not where they are stored
    "https://example.org/artifacts/run-1/result.json",
    "https://github.com/benchflow-ai/skillsbench-leaderboard/actions/runs/12345",
    "https://example.org:8443/a.json",
    "https://8.8.8.8/a.json",
    "https://[2001:4860:4860::8888]/a.json",
]
REFUSED = [
    "",
    "   ",
    " https://example.org/a",
    "sha256:" + "AB" * 32,
    "sha256:" + "ab" * 31,
    "s3://bucket/proof.json",
    "gs://bucket/proof.json",
    "r2://bucket/proof.json",
    "file:///tmp/proof.json",
    "sandbox://trial/1",
    "local://agentbeats-private-proof/x",
    "jobs://run/1",
    "/home/u/jobs/proof.json",
    "results/proof.json",
    "http://example.org/a.json",
    "ftp://example.org/a.json",
    "https://localhost/a",
    "https://127.0.0.1/a",
    "https://127.1/a",
    "https://0.0.0.0/a",
    "https://[::1]/a",
    "https://10.0.0.5/a",
    "https://172.16.0.1/a",
    "https://192.168.1.10/a",
    "https://169.254.169.254/latest/meta-data",
    "https://[fe80::1]/a",
    "https://[fd00::1]/a",
    "https://proof.local/a",
    "https://storage.internal/a",
    "https://host.docker.internal/a",
    "https://minio/a",
    "https://u:p@example.org/a",
    "https://example.org/a?X-Amz-Signature=abc",
    "https://example.org/a#frag",
    "https://example.org/a/../b",
    "https://example.org/token=abcdef1234",
    "https://example.org/a b",
    "https://example.org:99999/a",
    "https://[::1/a",
]
CASES = [(ref, True) for ref in PUBLIC] + [(ref, False) for ref in REFUSED]
IDS = [repr(ref) for ref, _ in CASES]


def _published() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PUBLISHED_DATA / SMOKE_FILE).read_text())
    return data


BASE_ROW: dict[str, Any] = _published()["results"][0]["results"][0]


@pytest.mark.parametrize(("ref", "public"), CASES, ids=IDS)
def test_the_rule(ref: str, public: bool) -> None:
    assert is_public_artifact_ref(ref) is public
    problems = artifact_ref_problems(ref)
    assert bool(problems) is not public
    if ref.strip():
        assert all(ref.strip() not in p for p in problems), "a reason must not repeat the ref"


@pytest.mark.parametrize(("ref", "public"), CASES, ids=IDS)
def test_row_model(ref: str, public: bool) -> None:
    row = {**BASE_ROW, "artifact_refs": [ref]}
    if public:
        assert PublicRow.model_validate(row).artifact_refs == [ref]
    else:
        with pytest.raises(ValidationError, match="artifact_refs"):
            PublicRow.model_validate(row)


@pytest.mark.parametrize(("ref", "public"), CASES, ids=IDS)
def test_normalizer(ref: str, public: bool) -> None:
    row = normalize_row({**BASE_ROW, "artifact_refs": [ref]})
    assert row.infra_failure_type is None
    assert row.artifact_refs == ([ref] if public else [])


@pytest.mark.parametrize(("ref", "public"), CASES, ids=IDS)
def test_readiness_results_check(ref: str, public: bool, tmp_path: Path) -> None:
    data = _published()
    data["results"][0]["results"][0]["artifact_refs"] = [ref]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    findings = check_results_file(path, None, "results/smoke.json")
    if public:
        assert findings == []
    else:
        hits = [f for f in findings if f.rule == "artifact_ref"]
        assert hits, [f.render() for f in findings]
        assert {f.path for f in hits} == {"$.results[0].results[0].artifact_refs[0]"}
