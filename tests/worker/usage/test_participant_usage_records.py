"""The bridge's sum of participant-reported usage and what result.json and the summaries make of
it: unknown stays unknown (None, never 0), and it is always said to be the participant's word."""

from __future__ import annotations

from typing import Any

from purple_agent.usage_report import UsageSinceReply
from worker.bridge.participant_usage import UsageTally
from worker.bridge.protocol import ParticipantUsage
from worker.usage.participant import agent_result_fields, describe, tally_from_details
from worker.usage.records import cost_summary
from worker.usage.summary import cost_line


def tally(*usages: ParticipantUsage | None) -> dict[str, Any]:
    t = UsageTally()
    for usage in usages:
        t.add(usage)
    data = t.to_data()
    assert data is not None
    return data


def test_no_usage_object_on_any_reply_is_no_record() -> None:
    t = UsageTally()
    t.add(None)
    t.add(None)
    assert t.to_data() is None
    assert tally_from_details({"bridge": {"usage": None}}) is None
    assert tally_from_details({}) is None


def test_complete_reports_give_headline_numbers() -> None:
    data = tally(
        ParticipantUsage(model="a", calls=1, input_tokens=10, output_tokens=2, cost_usd=0.5),
        ParticipantUsage(model="b", calls=2, input_tokens=30, output_tokens=4, cost_usd=0.25),
    )
    fields = agent_result_fields(data)
    assert (fields["n_input_tokens"], fields["n_output_tokens"], fields["total_tokens"]) == (
        40,
        6,
        46,
    )
    assert fields["cost_usd"] == 0.75 and fields["price_source"] == "participant"
    assert fields["n_model_calls"] == 3
    assert fields["participant_usage"]["models"] == ["a", "b"]
    assert cost_summary(fields, calls_model=True) == (
        "$0.7500, 46 tokens (reported by the participant, not measured by the worker)"
    )


def test_a_field_one_reply_left_out_is_unknown_in_the_headline() -> None:
    data = tally(
        ParticipantUsage(input_tokens=10, output_tokens=2),
        ParticipantUsage(output_tokens=3, cost_usd=0.1),
    )
    assert data["input_tokens"] == 10 and data["n_unknown"]["input_tokens"] == 1
    assert data["calls"] is None and data["n_unknown"]["calls"] == 2
    fields = agent_result_fields(data)
    assert fields["n_input_tokens"] is None and fields["total_tokens"] is None
    assert fields["n_output_tokens"] == 5
    assert fields["cost_usd"] is None and fields["n_model_calls"] is None
    assert cost_summary(fields, calls_model=True).startswith("not reported in USD, tokens unknown")
    assert "unknown: calls on 2, input_tokens on 1, cost_usd on 1" in describe(data)


def test_job_line_sums_only_what_every_trial_knew() -> None:
    def result(data: dict[str, Any]) -> dict[str, Any]:
        return {
            "agent_result": agent_result_fields(data),
            "usage_tracking": {"model_access": "external"},
        }

    known = tally(ParticipantUsage(input_tokens=100, output_tokens=20, cost_usd=0.01))
    unpriced = tally(ParticipantUsage(input_tokens=50, output_tokens=5))
    line = cost_line([result(known), result(known)])
    assert line.startswith("Cost: not measured by the worker (remote participant)")
    assert line.endswith(
        "(2 of 2 trial(s), the participant's word, not measured): 240 tokens, $0.0200"
    )
    assert cost_line([result(known), result(unpriced)]).endswith("175 tokens, cost unknown")


def test_the_harness_report_keeps_unknown_unknown() -> None:
    since = UsageSinceReply()
    assert since.take() == {
        "usage": {
            "model": None,
            "calls": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cost_usd": 0.0,
        }
    }
    since.add("m", 10, 2, None)
    since.add("m", 5, 1, 0.5)
    assert since.take()["usage"] == {
        "model": "m",
        "calls": 2,
        "input_tokens": 15,
        "output_tokens": 3,
        "cost_usd": None,
    }
    since.add(None, None, 4, 0.1)
    assert since.take()["usage"]["input_tokens"] is None
