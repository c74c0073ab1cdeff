"""The public row contract: published rows validate unchanged, every invariant has a failing case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from leaderboard.rows import BASE_ROW_KEYS, FAILURE_CATEGORIES, ROW_KEYS, Envelope, PublicRow
from tests.leaderboard.support import as_published
from tests.support import PUBLISHED_DATA


def _published_rows() -> list[dict[str, Any]]:
    rows = []
    for path in sorted(PUBLISHED_DATA.glob("*__results__*.json")):
        for envelope in json.loads(path.read_text())["results"]:
            rows.extend(envelope["results"])
    return rows


PUBLISHED_ROWS = _published_rows()


def test_published_rows_round_trip_in_key_order() -> None:
    assert len(PUBLISHED_ROWS) == 12
    for row in PUBLISHED_ROWS:
        # Published before the optional usage keys: they validate, read as unknown usage and
        # are written back without the usage keys, exactly as published (peer conformance).
        assert list(row) == list(BASE_ROW_KEYS)
        out = PublicRow.model_validate(row).public_dict()
        assert out == row
        assert list(out) == list(row)


def test_published_envelopes_validate() -> None:
    for path in sorted(PUBLISHED_DATA.glob("*__results__*.json")):
        for envelope in json.loads(path.read_text())["results"]:
            out = Envelope.model_validate(envelope).public_dict()
            assert out == envelope


def test_failure_categories_are_the_reviewed_ones() -> None:
    assert FAILURE_CATEGORIES == (
        "worker_timeout",
        "worker_cancelled",
        "worker_error",
        "participant_communication",
        "participant_timeout",
        "participant_error",
        "sandbox_error",
        "verifier_error",
    )


BASE = PUBLISHED_ROWS[0]

INVALID: list[tuple[dict[str, Any], str]] = [
    ({"score_eligible": False}, "needs an infra_failure_type"),
    ({"infra_failure_type": "sandbox_error", "error_type": "sandbox_error"}, "score-eligible"),
    ({"error_type": "sandbox_error"}, "score-eligible"),
    (
        {"score_eligible": False, "infra_failure_type": "sandbox_error", "error_type": None},
        "mirror",
    ),
    (
        {"score_eligible": False, "infra_failure_type": "oom", "error_type": "oom"},
        "infra_failure_type",
    ),
    ({"passed": True, "reward": 0.0}, "passed requires reward > 0"),
    ({"reward": 1.5}, "outside"),
    ({"reward": -0.1}, "outside"),
    ({"reward": float("nan")}, "finite"),
    ({"max_score": 0.0, "reward": 0.0}, "max_score"),
    ({"time_used": -1.0}, "non-negative"),
    ({"score_eligible": "true"}, "boolean"),
    ({"reward": "1.0"}, "number"),
    ({"trial_id": "unknown"}, "placeholder"),
    ({"trial_id": "null"}, "placeholder"),
    ({"trial_id": "/home/u/jobs/trial-1"}, "compact"),
    ({"trial_id": "https://host/x"}, "compact"),
    ({"trial_id": "{'id': 1}"}, "compact"),
    ({"trial_id": "../trial"}, "path"),
    ({"trial_id": "sk-abcdefghijklmnop1234567"}, "credential"),
    ({"task_id": "tasks/citation-check"}, "plain name"),
    ({"task_id": ""}, "plain name"),
    ({"task_set": "../smoke"}, "plain name"),
    ({"task_set_digest": "sha256:abc"}, "sha256"),
    ({"task_digest": "md5:" + "0" * 32}, "sha256"),
    ({"category": "/home/u/category"}, "label"),
    ({"difficulty": "s3://bucket/x"}, "label"),
    ({"tags": ["ok", "~/secret"]}, "label"),
    ({"tags": ["password=hunter2"]}, "label"),
    ({"artifact_refs": ["s3://bucket/proof.json"]}, "artifact_refs"),
    ({"artifact_refs": ["https://h.example.com/a?X-Amz-Signature=abc"]}, "artifact_refs"),
    ({"artifact_refs": ["https://u:p@h.example.com/a"]}, "artifact_refs"),
    ({"artifact_refs": ["https://h.example.com/a#frag"]}, "artifact_refs"),
    ({"artifact_refs": ["http://h.example.com/a"]}, "artifact_refs"),
    ({"artifact_refs": ["/home/u/jobs/proof.json"]}, "artifact_refs"),
    ({"condition": "no_skills"}, "condition"),
    ({"extra": 1}, "extra"),
    ({"usage_source": "participant_reported", "input_tokens": -1}, "input_tokens must be"),
    ({"usage_source": "provider_response", "output_tokens": -5}, "output_tokens must be"),
    ({"usage_source": "provider_response", "output_tokens": True}, "integer"),
    ({"usage_source": "provider_response", "input_tokens": 1.5}, "integer"),
    ({"usage_source": "participant_reported", "cost_usd": -0.01}, "cost_usd must be"),
    ({"usage_source": "participant_reported", "cost_usd": float("inf")}, "finite"),
    ({"usage_source": "participant_reported", "cost_usd": "0.5"}, "number"),
    ({"usage_source": "measured"}, "usage_source"),
    ({"input_tokens": 10}, "need a usage_source"),
    ({"usage_source": "unavailable", "cost_usd": 0.0}, "need a usage_source"),
]


@pytest.mark.parametrize(("patch", "message"), INVALID)
def test_invariant_violations_are_rejected(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        PublicRow.model_validate({**BASE, **patch})
    assert message.lower() in str(info.value).lower()


def test_whole_token_counts_that_crossed_a2a_as_doubles_are_integers() -> None:
    row = {**BASE, "usage_source": "participant_reported", "input_tokens": 175.0}
    out = PublicRow.model_validate(row).public_dict()
    assert out["input_tokens"] == 175 and isinstance(out["input_tokens"], int)


@pytest.mark.parametrize(
    "usage",
    [
        {"usage_source": "participant_reported", "input_tokens": 1200, "output_tokens": 80},
        {"usage_source": "provider_response", "input_tokens": 0, "cost_usd": 0.0123},
        {"usage_source": "agent_native_acp", "output_tokens": 7, "cost_usd": 1},
    ],
)
def test_usage_is_kept_and_unknown_stays_null(usage: dict[str, Any]) -> None:
    out = PublicRow.model_validate({**BASE, **usage}).public_dict()
    assert list(out) == list(ROW_KEYS)
    assert out == as_published({**BASE, **usage})  # what was not given is null, never 0


@pytest.mark.parametrize(
    "usage",
    [
        {},
        {"usage_source": "unavailable"},
        {"usage_source": None, "input_tokens": None, "output_tokens": None, "cost_usd": None},
        {"usage_source": "unavailable", "input_tokens": None, "cost_usd": None},
        {"usage_source": "provider_response", "input_tokens": None},
    ],
)
def test_a_row_without_a_usage_figure_carries_no_usage_keys(usage: dict[str, Any]) -> None:
    out = PublicRow.model_validate({**BASE, **usage}).public_dict()
    assert list(out) == list(BASE_ROW_KEYS)
    assert PublicRow.model_validate(out).public_dict() == out


def test_public_artifact_refs_are_kept() -> None:
    refs = ["https://example.org/a/b.json", "sha256:" + "0" * 64]
    assert PublicRow.model_validate({**BASE, "artifact_refs": refs}).artifact_refs == refs


@pytest.mark.parametrize(
    "participants",
    [
        {},
        {"agent": ""},
        {"agent": "http://u:p@127.0.0.1:8080/agent"},
        {"agent": "http://127.0.0.1:8080/agent?token=x"},
        {"agent": "not-a-uuid"},
        {"agent": "s3://bucket/agent"},
    ],
)
def test_envelope_participants_rules(participants: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        Envelope(participants=participants, results=[])


def test_results_file_validation_names_the_usage_field(tmp_path: Path) -> None:
    from leaderboard.validate import validate_results_file

    document = {
        "status": "completed",
        "participants": {"agent": "019e5a00-0000-7000-8000-0000000000fd"},
        "results": [{"participants": {"agent": "019e5a00-0000-7000-8000-0000000000fd"}}],
    }
    good = {**BASE, "usage_source": "participant_reported", "input_tokens": 10, "cost_usd": 0.5}
    path = tmp_path / "results.json"
    document["results"][0]["results"] = [good, BASE]  # BASE: a row from before the usage keys
    path.write_text(json.dumps(document))
    assert validate_results_file(path, contract=True) == []
    document["results"][0]["results"] = [{**good, "input_tokens": -1, "cost_usd": -0.5}]
    path.write_text(json.dumps(document))
    found = [(v.path, v.message) for v in validate_results_file(path, contract=True)]
    assert [p for p, _ in found] == [
        "$.results[0].results[0].input_tokens",
        "$.results[0].results[0].cost_usd",
    ]
    assert "non-negative" in found[0][1] and "US dollars" in found[1][1]
