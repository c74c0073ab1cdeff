"""The normalizer: valid rows pass unchanged, nothing private survives, bad rows become
worker_error rows, and it never raises on any JSON payload."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.normalize import (
    UNKNOWN_TASK_ID,
    RowContext,
    build_envelope,
    extract_rows,
    normalize_row,
    normalize_rows,
)
from leaderboard.rows import ROW_KEYS, PublicRow
from tests.leaderboard.support import all_strings, as_published, poisons, valid_rows
from tests.support import PUBLISHED_DATA

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=20,
)


def _assert_public(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert list(row) == [key for key in ROW_KEYS if key in row]
        assert PublicRow.model_validate(row).public_dict() == row


@SETTINGS
@given(st.lists(valid_rows(), max_size=5))
def test_valid_rows_pass_through_unchanged(rows: list[dict[str, Any]]) -> None:
    out = normalize_rows(rows)
    assert out == rows
    assert [list(r) for r in out] == [list(r) for r in rows]


@SETTINGS
@given(valid_rows(), st.dictionaries(st.text(min_size=1, max_size=10), json_values, max_size=3))
def test_unknown_and_private_keys_are_dropped(row: dict[str, Any], extra: dict[str, Any]) -> None:
    noisy = {"_private_proof_refs": [{"rollout_dir": "/home/u/jobs/x"}], **extra, **row}
    payload = {"run_id": "r1", "status": "completed", "rows": [noisy], "_private_meta": {"k": 1}}
    assert normalize_rows(payload) == [row]


@SETTINGS
@given(
    valid_rows(),
    poisons,
    st.sampled_from([*ROW_KEYS, "_private_proof_refs", "stdout", "log_path"]),
    st.sampled_from(["replace", "embed", "append"]),
)
def test_no_poison_survives(row: dict[str, Any], poison: str, key: str, how: str) -> None:
    bad = dict(row)
    current = bad.get(key)
    if how == "append" and isinstance(current, list):
        bad[key] = [*current, poison]
    elif how == "embed" and isinstance(current, str):
        bad[key] = f"{current} {poison}"
    else:
        bad[key] = poison
    out = normalize_rows({"status": "completed", "rows": [bad]})
    _assert_public(out)
    for text in all_strings(out):
        assert poison not in text


@SETTINGS
@given(json_values)
def test_any_json_payload_gives_valid_rows(payload: Any) -> None:
    _assert_public(normalize_rows(payload))
    _assert_public(normalize_rows({"rows": [payload, payload]}))


@SETTINGS
@given(
    valid_rows(), st.dictionaries(st.sampled_from(ROW_KEYS), json_values, min_size=1, max_size=4)
)
def test_corrupted_rows_never_crash(row: dict[str, Any], patch: dict[str, Any]) -> None:
    out = normalize_rows([{**row, **patch}])
    assert len(out) == 1
    _assert_public(out)


BASE: dict[str, Any] = json.loads(
    (
        PUBLISHED_DATA
        / "benchflow-ai__skillsbench-leaderboard__results__benchflow-ai-20260618-012425.json"
    ).read_text()
)["results"][0]["results"][0]


@pytest.mark.parametrize(
    "patch",
    [
        {"reward": 2.0},
        {"passed": True, "reward": 0.0},
        {"infra_failure_type": "sandbox_error"},
        {"score_eligible": False},
        {"score_eligible": False, "infra_failure_type": "oom_killed"},
        {"score_eligible": None},
        {"reward": "lots"},
        {"reward": float("inf")},
    ],
)
def test_invalid_rows_become_worker_error_rows(patch: dict[str, Any]) -> None:
    row = normalize_row({**BASE, **patch})
    assert row.infra_failure_type == row.error_type == "worker_error"
    assert (row.score_eligible, row.passed, row.reward) == (False, False, 0.0)
    assert row.task_id == BASE["task_id"] and row.trial_id == BASE["trial_id"]
    assert row.category == BASE["category"] and row.tags == BASE["tags"]


@pytest.mark.parametrize("trial_id", [None, "", "unknown", "/tmp/x y", {"id": 1}, "s3://b/k"])
def test_invalid_trial_id_gets_a_fresh_compact_one(trial_id: Any) -> None:
    row = normalize_row({**BASE, "trial_id": trial_id, "reward": 3.0})
    assert re.fullmatch(r"citation-check__agentbeats__[0-9a-f]{8}", row.trial_id)
    assert row.infra_failure_type == "worker_error"
    # A valid row with a bad trial id keeps its score: only the id is replaced.
    kept = normalize_row({**BASE, "trial_id": trial_id})
    assert kept.score_eligible and kept.passed and kept.reward == 1.0
    assert re.fullmatch(r"citation-check__agentbeats__[0-9a-f]{8}", kept.trial_id)


def test_paths_keep_only_their_plain_name() -> None:
    row = normalize_row(
        {
            **BASE,
            "task_id": "/home/u/tasks/citation-check",
            "trial_id": "jobs/2026-06-16__18-36-23/citation-check__agentbeats__b02e9f00",
        }
    )
    assert (row.task_id, row.trial_id) == ("citation-check", "citation-check__agentbeats__b02e9f00")


def test_coercions_and_context_fallbacks() -> None:
    ctx = RowContext.from_manifest(
        json.loads(
            (
                PUBLISHED_DATA / "benchflow-ai__skillsbench-agentbeats__task_sets__smoke.json"
            ).read_text()
        )
    )
    raw = {
        "task_id": "citation-check",
        "score_eligible": "true",
        "passed": 1,
        "reward": "1",
        "time_used": 12.34567,
        "tags": ["ok", "/etc/passwd"],
        "artifact_refs": ["local://agentbeats-private-proof/x", "https://example.org/a.json"],
    }
    row = normalize_row(raw, ctx)
    assert row.task_set == "smoke" and row.task_set_digest == ctx.task_set_digest
    assert row.task_digest == ctx.tasks["citation-check"].task_digest
    assert row.category == "office-white-collar" and row.difficulty == "medium"
    assert (row.score_eligible, row.passed, row.reward, row.time_used) == (True, True, 1.0, 12.346)
    assert row.tags == ["ok"] and row.artifact_refs == ["https://example.org/a.json"]
    assert row.trial_id.startswith("citation-check__agentbeats__")


def test_unidentifiable_items_become_unknown_task_errors() -> None:
    rows = normalize_rows({"rows": [42, "row", {"task_id": "sk-abcdefghijklmnopqrstu12345"}]})
    assert [r["task_id"] for r in rows] == [UNKNOWN_TASK_ID] * 3
    assert all(r["infra_failure_type"] == "worker_error" for r in rows)
    assert all(r["category"] is None and r["tags"] == [] for r in rows)


def test_every_published_row_normalizes_unchanged() -> None:
    """Peer conformance: the published results files (rows from before the usage keys) come out
    of the normalizer exactly as they went in, key order included, and no usage key is added."""
    paths = sorted(PUBLISHED_DATA.glob("*__results__*.json"))
    assert paths
    for path in paths:
        for envelope in json.loads(path.read_text())["results"]:
            out = normalize_rows(envelope["results"])
            assert out == envelope["results"], path.name
            assert [list(r) for r in out] == [list(r) for r in envelope["results"]]
            rebuilt = build_envelope(envelope["participants"], envelope).public_dict()
            assert json.dumps(rebuilt) == json.dumps(envelope), path.name


def test_extract_rows_shapes() -> None:
    published = json.loads(
        (
            PUBLISHED_DATA
            / "benchflow-ai__skillsbench-leaderboard__results__benchflow-ai-20260619-012257.json"
        ).read_text()
    )
    assert len(extract_rows(published)) == 6
    assert len(extract_rows(published["results"][0])) == 6
    assert len(extract_rows(published["results"][0]["results"])) == 6
    assert len(extract_rows(BASE)) == 1
    assert extract_rows("nope") == [] and extract_rows({"status": "failed"}) == []


def test_build_envelope_cleans_participant_urls() -> None:
    env = build_envelope(
        {"agent": "http://user:pw@127.0.0.1:8080/agent?token=abc#x"}, {"rows": [BASE]}
    ).public_dict()
    assert env == {
        "status": "completed",
        "participants": {"agent": "http://127.0.0.1:8080/agent"},
        "results": [BASE],
    }
    uuid = "019e5799-ca68-7b33-b1a5-c97b92b6fda1"
    assert build_envelope({"agent": uuid}, [BASE]).participants == {"agent": uuid}
    with pytest.raises(ValueError, match=r"participants\.agent"):
        build_envelope({"agent": "/home/u/agent.sock"}, [BASE])
    with pytest.raises(ValueError, match="required"):
        build_envelope({"green": uuid}, [BASE])


def test_worker_run_status_model_is_a_payload() -> None:
    from worker.api import RunStatus

    status = RunStatus(
        run_id="r1",
        status="completed",
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:01:00Z",
        rows=[{**BASE, "_private_rollout_dir": "/home/u/jobs/r1"}],
        worker_meta={"_private_proof_refs": ["s3://b/k"]},
    )
    assert normalize_rows(status) == [BASE]


@pytest.mark.parametrize(
    ("usage", "kept"),
    [
        (
            {"usage_source": "participant_reported", "input_tokens": 12, "cost_usd": "0.5"},
            {"usage_source": "participant_reported", "input_tokens": 12, "cost_usd": 0.5},
        ),
        (
            {"usage_source": "provider_response", "input_tokens": -1, "output_tokens": True},
            {"usage_source": "provider_response"},
        ),
        (
            {"usage_source": "provider_response", "cost_usd": -2.0},
            {"usage_source": "provider_response"},
        ),
        (
            {"usage_source": "provider_response", "input_tokens": 175.0, "output_tokens": 1.5},
            {"usage_source": "provider_response", "input_tokens": 175},
        ),
        # Figures with no source, or under "unavailable", say nothing about whose they are.
        ({"input_tokens": 12, "cost_usd": 0.5}, {}),
        ({"usage_source": "unavailable", "output_tokens": 3}, {"usage_source": "unavailable"}),
        ({"usage_source": "guessed", "output_tokens": 3}, {}),
    ],
)
def test_usage_is_cleaned_not_invented(usage: dict[str, Any], kept: dict[str, Any]) -> None:
    row = normalize_rows([{**BASE, **usage}])[0]
    assert row == as_published({**BASE, **kept})
    assert row["score_eligible"] is BASE["score_eligible"]  # bad usage never fails the row
