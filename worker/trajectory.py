"""The trial's ACP-style trajectory: ``trajectory/acp_trajectory.jsonl``, one event per line.

Event shapes follow BenchFlow's capture: ``user_message``, ``agent_message``, ``agent_thought``,
``tool_call`` / ``tool_call_update`` (``tool_call_id``, ``kind``, ``title``, ``status``, ...),
``agent_timeout``. Every event gets a ``timestamp``; tool calls are counted as they are recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TRAJECTORY_FILE = "trajectory/acp_trajectory.jsonl"

# What agents and the ACP client call to append one event to the trajectory.
Recorder = Callable[[dict[str, Any]], None]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TrajectoryRecorder:
    """Appends events as they happen, so a crash keeps everything recorded before it."""

    def __init__(self, trial_dir: Path) -> None:
        self.path = trial_dir / TRAJECTORY_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self.n_events = 0
        self.n_tool_calls = 0
        self._tool_call_ids: set[str] = set()

    def __call__(self, event: dict[str, Any]) -> None:
        line = {"timestamp": utc_now(), **event}
        if line.get("type") == "tool_call":
            call_id = str(line.get("tool_call_id", ""))
            if call_id not in self._tool_call_ids:
                self._tool_call_ids.add(call_id)
                self.n_tool_calls += 1
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        self.n_events += 1
