"""The one failure table (worker/core/failures.py) decides every fact of a failure kind,
BenchFlow's categories included: a new kind cannot silently get none."""

from __future__ import annotations

import dataclasses

import pytest

from worker.core.failures import FAILURE_TABLE, FailureKind, semantics
from worker.trial_record.benchflow import benchflow_fields


def test_every_kind_has_every_fact() -> None:
    assert set(FAILURE_TABLE) == set(FailureKind)
    fields = [f.name for f in dataclasses.fields(next(iter(FAILURE_TABLE.values())))]
    assert {"benchflow_error", "benchflow_verifier_error"} <= set(fields)
    for field in dataclasses.fields(type(next(iter(FAILURE_TABLE.values())))):
        assert field.default is dataclasses.MISSING, f"{field.name} must be decided per kind"


@pytest.mark.parametrize("kind", list(FailureKind))
def test_benchflow_categories_come_from_the_table(kind: FailureKind) -> None:
    facts = semantics(kind)
    row = {"reward": 0.0, "score_eligible": facts.score_eligible}
    fields = benchflow_fields(
        task_id="t",
        trial_id="t-1",
        agent_name="nop",
        model=None,
        with_skills=True,
        row=row,
        failure=kind,
        error="boom",
        agent_result={},
        agent_started=True,
    )
    assert fields["error_category"] == facts.benchflow_error
    assert fields["verifier_error_category"] == facts.benchflow_verifier_error
    assert (fields["verifier_error"] == "boom") is (facts.benchflow_verifier_error is not None)
    if facts.benchflow_verifier_error is not None:  # BenchFlow's verifier_errored bucket
        assert not facts.score_eligible
