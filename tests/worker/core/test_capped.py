"""The capped writers and the caps' settings (worker/core/capped.py, worker/core/limits.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.core.capped import TRAJECTORY_TRUNCATED, TRUNCATED_KEY, CappedFile, CappedJsonl
from worker.core.limits import ESSENTIAL_RESERVE, KIB, MIB, OutputCaps


def read(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_jsonl_shortens_events_and_stops_at_its_cap_with_a_counting_marker(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    out = CappedJsonl(path, cap=96 * KIB, event_cap=2 * KIB)  # 64 KiB of it kept back
    assert out.write({"type": "small", "text": "hello"})
    out.write({"type": "big", "turn": 3, "text": "é" * 10_000, "nested": {"k": ["x" * 5000]}})
    for n in range(40):
        out.write({"type": "filler", "n": n, "text": "f" * 1500})
    events = read(path)
    assert events[0] == {"type": "small", "text": "hello"}
    big = events[1]
    assert big["type"] == "big" and big["turn"] == 3
    assert big[TRUNCATED_KEY]["original_bytes"] > 20_000
    assert big["text"].endswith("more bytes dropped]")
    assert len(json.dumps(big, ensure_ascii=False).encode()) <= 2 * KIB
    assert path.stat().st_size <= 96 * KIB - ESSENTIAL_RESERVE
    marker = events[-1]
    assert marker["type"] == TRAJECTORY_TRUNCATED
    kept = [e for e in events if e["type"] == "filler"]
    assert marker["dropped_events"] == 40 - len(kept) > 0
    assert marker["dropped_bytes"] > 0
    out.write({"type": "late"})  # the marker is rewritten, never duplicated
    again = read(path)
    assert [e["type"] for e in again].count(TRAJECTORY_TRUNCATED) == 1
    assert again[-1]["dropped_events"] == marker["dropped_events"] + 1


def test_the_worker_s_own_events_survive_a_flood(tmp_path: Path) -> None:
    """``prompt_end`` carries the usage the worker reads back: a flood cannot push it out."""
    from worker.trial_record.trajectory import TrajectoryRecorder

    caps = OutputCaps(trajectory_event_bytes=8 * KIB, trajectory_bytes=128 * KIB)
    record = TrajectoryRecorder(tmp_path, caps)
    for n in range(100):
        record({"type": "agent_message", "text": "m" * 6000, "n": n})
    record({"type": "prompt_end", "stop_reason": "end_turn", "usage": {"input_tokens": 7}})
    events = read(record.path)
    assert record.path.stat().st_size <= 128 * KIB
    assert events[-2]["type"] == "prompt_end" and events[-2]["usage"] == {"input_tokens": 7}
    assert events[-1]["type"] == TRAJECTORY_TRUNCATED and events[-1]["dropped_events"] > 0
    assert record.n_events == 101


def test_an_event_that_clipping_cannot_shrink_keeps_a_preview(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    out = CappedJsonl(path, cap=80 * KIB, event_cap=4 * KIB)
    out.write({"type": "many", "tool_call_id": "c1", "items": list(range(100_000))})
    [event] = read(path)
    assert event["type"] == "many" and event["tool_call_id"] == "c1"
    assert event[TRUNCATED_KEY]["preview"].startswith('{"type": "many"')
    assert path.stat().st_size <= 4 * KIB


def test_capped_file_keeps_a_prefix_and_counts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    out = CappedFile(path, 4 * KIB)
    out.append(b"a" * 2000)
    out.append(b"b" * 5000)
    out.append(b"c" * 100)
    text = path.read_text()
    assert len(text.encode()) <= 4 * KIB
    assert text.startswith("a" * 2000 + "b")
    assert "c" not in text.split("[")[0]
    assert text.rstrip().endswith("more bytes in 2 writes dropped]")


def test_caps_come_from_the_environment() -> None:
    caps = OutputCaps.from_env(
        {"SKILLSBENCH_CAP_TRAJECTORY_BYTES": "2M", "SKILLSBENCH_CAP_LOGS_FILES": "7"}
    )
    assert caps.trajectory_bytes == 2 * MIB and caps.logs_files == 7
    assert caps.log_file_bytes == OutputCaps().log_file_bytes
    with pytest.raises(ValueError, match="SKILLSBENCH_CAP_LOGS_BYTES"):
        OutputCaps.from_env({"SKILLSBENCH_CAP_LOGS_BYTES": "lots"})
    with pytest.raises(ValueError, match="room"):
        OutputCaps(trajectory_bytes=300 * KIB)


def test_the_bridge_outcome_clips_what_the_participant_said() -> None:
    """A failed participant task's detail reaches result.json, the run document and the proof."""
    from worker.acp.extensions import OUTCOME_KEY
    from worker.bridge.config import Outcome
    from worker.core.limits import MESSAGE_BYTES

    outcome = Outcome(
        "participant_failure",
        message="x" * 100_000,
        refused_files=[{"path": "p" * 5000, "error": "e"}],
    )
    meta = outcome.meta()[OUTCOME_KEY]
    assert len(meta["message"]) < MESSAGE_BYTES + 100
    assert meta["message"].endswith(f"[skillsbench: {100_000 - MESSAGE_BYTES} more bytes dropped]")
    assert len(meta["refused_files"][0]["path"]) < 1200
