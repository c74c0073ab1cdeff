"""skillsbench-shell/v1 models: what survives the A2A DataPart round trip, what is refused."""

from __future__ import annotations

import pytest
from a2a.helpers import get_data_parts, new_data_part

from worker.bridge.protocol import (
    PROTOCOL,
    ActionResult,
    ActionResultMessage,
    ExecAction,
    FileContent,
    FinishAction,
    ShellContext,
    find_action,
    find_action_result,
    find_context,
    parse_action,
)


def _through_a2a(data: dict) -> dict:
    """What the peer reads after a 1.x DataPart: every number becomes a float."""
    [out] = get_data_parts([new_data_part(data)])
    return out


def test_context_survives_float_numbers() -> None:
    ctx = ShellContext(
        task_id="t-1", workspace="/root", limits={"max_turns": 30, "deadline_sec": 600}
    )
    wire = _through_a2a(ctx.to_data())
    assert wire["limits"]["max_turns"] == 30.0 and isinstance(wire["limits"]["max_turns"], float)
    back = find_context([{"unrelated": 1}, wire])
    assert back == ctx
    assert back is not None and isinstance(back.limits.max_turns, int)
    assert back.protocol == PROTOCOL


def test_every_action_round_trips() -> None:
    actions = [
        ExecAction(command="ls -la", timeout_sec=30),
        parse_action({"action": "read_file", "path": "a.txt"}),
        parse_action(
            {"action": "write_file", "path": "b.bin", "content": "AAE=", "encoding": "base64"}
        ),
        FinishAction(message="done", files=[FileContent(path="out.txt", content="42\n")]),
    ]
    for action in actions:
        assert find_action([{"text": "x"}, _through_a2a(action.to_data())]) == action


def test_result_round_trips_with_int_exit_code() -> None:
    msg = ActionResultMessage(action_result=ActionResult(exit_code=2, stdout="o", stderr="e"))
    got = find_action_result([_through_a2a(msg.to_data())])
    assert got is not None and got.exit_code == 2 and isinstance(got.exit_code, int)


def test_no_action_means_none() -> None:
    assert find_action([{"note": "hello"}]) is None
    assert find_context([{"protocol": "other/v1"}]) is None
    assert find_action_result([]) is None


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"action": "rm_rf"}, "action"),
        ({"action": "exec"}, "command"),
        ({"action": "write_file", "path": "x", "content": "y", "encoding": "latin-1"}, "encoding"),
        ({"action": "exec", "command": "ls", "timeout_sec": "soon"}, "timeout_sec"),
    ],
)
def test_malformed_action_names_the_field(data: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        find_action([data])


def test_fractional_turns_are_refused() -> None:
    with pytest.raises(ValueError, match="max_turns"):
        find_context([{"protocol": PROTOCOL, "task_id": "t", "limits": {"max_turns": 2.5}}])


def test_result_message_that_names_the_protocol_is_not_a_context() -> None:
    """The bridge tags its result messages with the protocol and extra fields; v1 readers cope."""
    data = {
        "protocol": PROTOCOL,
        "turn": 3.0,
        "action_result": {"exit_code": 0.0, "stdout": "ok", "timed_out": False, "action": "exec"},
    }
    assert find_context([data]) is None
    got = find_action_result([data])
    assert got is not None and got.exit_code == 0 and got.stdout == "ok"


def test_usage_is_found_beside_the_action_or_in_its_own_part() -> None:
    from worker.bridge.protocol import find_usage

    beside = find_usage([{"action": "exec", "command": "ls", "usage": {"input_tokens": 12.0}}])
    assert beside is not None and beside.input_tokens == 12
    assert beside.output_tokens is None and beside.cost_usd is None  # unknown stays unknown
    alone = find_usage([{"action": "finish"}, {"usage": {"model": "m", "calls": 2}}])
    assert alone is not None and (alone.model, alone.calls) == ("m", 2)
    assert find_usage([{"action": "finish"}]) is None


def test_malformed_usage_names_the_field() -> None:
    import pytest

    from worker.bridge.protocol import find_usage

    with pytest.raises(ValueError, match="usage: output_tokens"):
        find_usage([{"usage": {"output_tokens": -3}}])
    with pytest.raises(ValueError, match="must be an object"):
        find_usage([{"usage": 5}])
