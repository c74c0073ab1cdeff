"""Public rows from trial outcomes, the failure table's invariants, reproducibility metadata."""

from __future__ import annotations

from typing import Any

import pytest

from leaderboard.rows import BASE_ROW_KEYS, ROW_KEYS, USAGE_KEYS, PublicRow
from worker.api import RunRequest, RunTask
from worker.core.failures import FAILURE_TABLE, FailureKind, RetryPolicy
from worker.runs.meta import ProofSettings, check_durable_prefix, manifest_digest, worker_meta
from worker.trial_record.public_row import build_row, new_trial_id

DIGEST = "sha256:" + "ab" * 32


def _request(**config: object) -> RunRequest:
    return RunRequest(
        config={"condition": "with_skills", **config},
        task_set="examples",
        task_set_digest=DIGEST,
        tasks=[
            RunTask(
                task_id="csv-sales",
                task_digest="sha256:" + "cd" * 32,
                category="office",
                difficulty="easy",
                tags=["csv"],
            )
        ],
        agent="nop",
    )


def test_trial_id_shape() -> None:
    trial_id = new_trial_id("csv-sales")
    prefix, suffix = trial_id.split("__agentbeats__")
    assert prefix == "csv-sales" and len(suffix) == 8 and int(suffix, 16) >= 0
    assert new_trial_id("csv-sales") != trial_id


def test_scored_row_carries_manifest_metadata() -> None:
    request = _request()
    row = build_row(
        request,
        request.tasks[0],
        trial_id="csv-sales__agentbeats__0123abcd",
        agent_transport="oracle",
        reward=1.0,
        failure=None,
        time_used=3.14159,
    )
    assert tuple(row) == BASE_ROW_KEYS  # the oracle calls no model: no usage keys
    assert row["passed"] and row["score_eligible"] and row["reward"] == 1.0
    assert row["time_used"] == 3.142
    assert (row["category"], row["difficulty"], row["tags"]) == ("office", "easy", ["csv"])
    assert row["infra_failure_type"] is None and row["error_type"] is None
    PublicRow(**row)


@pytest.mark.parametrize("kind", list(FailureKind))
def test_every_failure_kind_makes_a_valid_row(kind: FailureKind) -> None:
    request = _request()
    row = build_row(
        request,
        request.tasks[0],
        trial_id="csv-sales__agentbeats__0123abcd",
        agent_transport="a2a",
        reward=1.0,  # a reward from a failed trial must not leak into the row
        failure=kind,
        time_used=None,
    )
    meaning = FAILURE_TABLE[kind]
    assert row["score_eligible"] is meaning.score_eligible
    assert row["infra_failure_type"] == meaning.category == row["error_type"]
    if not meaning.score_eligible:
        assert row["reward"] == 0.0 and row["passed"] is False


def test_timeouts_and_wrong_answers_are_never_retried() -> None:
    policy = RetryPolicy(max_attempts=5)
    assert not policy.should_retry(FailureKind.AGENT_TIMEOUT, 1)
    assert not policy.should_retry(None, 1)  # a wrong answer is not a failure
    assert policy.should_retry(FailureKind.SANDBOX_START, 1)
    assert not policy.should_retry(FailureKind.SANDBOX_START, 5)
    assert [policy.backoff_sec(n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert RetryPolicy(backoff_max_sec=3).backoff_sec(10) == 3.0


def test_without_skills_condition() -> None:
    request = _request(condition="without_skills")
    row = build_row(
        request,
        request.tasks[0],
        trial_id="csv-sales__agentbeats__0123abcd",
        agent_transport="nop",
        reward=0.0,
        failure=None,
        time_used=1.0,
    )
    assert row["condition"] == "without_skills" and row["has_skills"] is False


def test_worker_meta_records_revisions_or_null() -> None:
    env = {"SKILLSBENCH_WORKER_REVISION": "abc123", "SKILLSBENCH_WORKER_IMAGE": ""}
    meta = worker_meta(_request(), environment="local", concurrency=2, agent="nop", env=env)
    assert meta["worker_revision"] == "abc123"
    for key in (
        "skillsbench_revision",
        "benchflow_revision",
        "worker_image",
        "worker_image_digest",
    ):
        assert meta[key] is None
    manifest = meta["task_set_manifest"]
    assert manifest["task_set"] == "examples" and manifest["tasks"][0]["task_id"] == "csv-sales"
    assert manifest_digest(manifest).startswith("sha256:")


@pytest.mark.parametrize(
    "prefix",
    ["s3://bucket/proofs", "gs://b/p", "r2://b", "https://proofs.example.org/skillsbench"],
)
def test_durable_prefixes_accepted(prefix: str) -> None:
    check_durable_prefix(prefix)


@pytest.mark.parametrize(
    ("prefix", "reason"),
    [
        ("local://agentbeats-private-proof", "not durable"),
        ("http://proofs.example.org/x", "not durable"),
        ("file:///tmp/x", "not durable"),
        ("https://user:pw@proofs.example.org/x", "credentials"),
        ("https://proofs.example.org/x?sig=abc", "query"),
        ("https://proofs.example.org/x#frag", "fragment"),
    ],
)
def test_non_durable_prefixes_refused(prefix: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        check_durable_prefix(prefix)


def test_required_durable_proof_is_checked_at_startup(tmp_path: object) -> None:
    from pathlib import Path

    jobs = Path(str(tmp_path))
    env = {"SKILLSBENCH_REQUIRE_DURABLE_PRIVATE_PROOF": "true"}
    with pytest.raises(ValueError, match="not durable"):
        ProofSettings.from_env(jobs, env)
    ok = ProofSettings.from_env(
        jobs, {**env, "SKILLSBENCH_PRIVATE_PROOF_URI_PREFIX": "s3://bucket/p/"}
    )
    assert ok.require_durable and ok.uri_prefix == "s3://bucket/p"
    assert ProofSettings.from_env(jobs, {}).directory == jobs / "private-proof"


def test_error_texts_are_plain_and_bounded() -> None:
    from worker.core.failures import ERROR_TEXT_CHARS, plain_text

    builder = "\x1b[91mE: Unable to locate package nope\x1b[0m\r\n\x1b]0;title\x07done\x00"
    assert plain_text(builder) == "E: Unable to locate package nope \ndone"
    long = "head " + "x" * 10_000 + " tail"
    text = plain_text(long)
    assert len(text) <= ERROR_TEXT_CHARS
    assert text.startswith("head ") and text.endswith(" tail")


def test_deterministic_sandbox_failures_end_after_one_try() -> None:
    from worker.sandbox.base import SandboxError, SandboxUnsupported
    from worker.sandbox.errors import ImageBuildFailed, SandboxConfigRefused
    from worker.sandbox.failures import failure_kind_of

    policy = RetryPolicy(max_attempts=3)
    kinds = {
        failure_kind_of(exc)
        for exc in (ImageBuildFailed("x"), SandboxConfigRefused("x"), SandboxUnsupported("x"))
    }
    assert kinds == {
        FailureKind.SANDBOX_BUILD,
        FailureKind.SANDBOX_CONFIG,
        FailureKind.SANDBOX_UNSUPPORTED,
    }
    assert not any(policy.should_retry(kind, 1) for kind in kinds)
    assert failure_kind_of(SandboxError("engine said 500")) is FailureKind.SANDBOX_START
    assert policy.should_retry(FailureKind.SANDBOX_START, 1)


async def test_a_deterministic_start_failure_happens_once_per_task() -> None:
    from worker.sandbox.base import SandboxError
    from worker.sandbox.errors import ImageBuildFailed
    from worker.sandbox.failures import FirstStarts

    starts: list[str] = []

    def starter(key: str, error: SandboxError | None) -> Any:
        async def start() -> None:
            starts.append(key)
            if error is not None:
                raise error

        return start

    gate = FirstStarts()
    for _ in range(3):
        with pytest.raises(ImageBuildFailed) as info:
            await gate.start("broken", starter("broken", ImageBuildFailed("RUN exit 3")))
    assert starts == ["broken"]  # built once; the others got the same failure
    assert "RUN exit 3" in str(info.value) and "earlier trial" in str(info.value)
    for _ in range(2):  # a transient failure is not remembered: each trial tries again
        with pytest.raises(SandboxError):
            await gate.start("flaky", starter("flaky", SandboxError("engine said 500")))
    await gate.start("flaky", starter("flaky", None))
    await gate.start("flaky", starter("flaky", None))
    assert starts == ["broken", "flaky", "flaky", "flaky", "flaky"]


@pytest.mark.parametrize(
    ("agent_result", "usage"),
    [
        (None, None),
        (
            {
                "n_input_tokens": 175,
                "n_output_tokens": 20,
                "cost_usd": None,
                "usage_source": "participant_reported",
            },
            (175, 20, None, "participant_reported"),
        ),
        (
            {
                "n_input_tokens": 1000,
                "n_output_tokens": 50,
                "cost_usd": 0.0042,
                "usage_source": "provider_response",
            },
            (1000, 50, 0.0042, "provider_response"),
        ),
        # Unavailable: every figure null whatever else is there; a figure the row would refuse
        # (the participant's word is not checked upstream) is unknown, not an error.
        ({"n_input_tokens": 0, "usage_source": "unavailable"}, None),
        (
            {
                "n_input_tokens": -1,
                "n_output_tokens": True,
                "cost_usd": float("nan"),
                "usage_source": "participant_reported",
            },
            None,
        ),
        ({"n_input_tokens": 5, "usage_source": "guessed"}, None),
        (
            {"n_input_tokens": 7.0, "n_output_tokens": 2.5, "usage_source": "provider_response"},
            (7, None, None, "provider_response"),
        ),
    ],
)
def test_row_carries_the_trial_s_usage(
    agent_result: dict[str, Any] | None, usage: tuple[Any, ...] | None
) -> None:
    """The figures and their source; a row with no known figure carries no usage keys."""
    request = _request()
    row = build_row(
        request,
        request.tasks[0],
        trial_id="csv-sales__agentbeats__0123abcd",
        agent_transport="a2a",
        reward=1.0,
        failure=None,
        time_used=1.0,
        usage=agent_result,
    )
    if usage is None:
        assert tuple(row) == BASE_ROW_KEYS
        return
    assert tuple(row) == ROW_KEYS
    assert tuple(row[key] for key in USAGE_KEYS) == usage
