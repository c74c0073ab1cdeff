"""The trial's ACP-style trajectory: ``trajectory/acp_trajectory.jsonl``, one event per line.

Event shapes follow BenchFlow's capture: ``user_message``, ``agent_message``, ``agent_thought``,
``tool_call`` / ``tool_call_update`` (``tool_call_id``, ``kind``, ``title``, ``status``, ...),
``agent_timeout``. Every event gets a ``timestamp``; tool calls are counted as they are recorded.
The file is capped (:class:`worker.core.limits.OutputCaps`): an event past ``trajectory_event_bytes`` is
shortened, events past ``trajectory_bytes`` are dropped and counted in a last
``trajectory_truncated`` event; tool calls are counted all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from worker.core.capped import CappedJsonl
from worker.core.limits import OutputCaps
from worker.trial_record.paths import ACP_TRAJECTORY_FILE

# Events the worker writes itself and reads back (usage from prompt_end): kept past the cap.
ESSENTIAL_TYPES = frozenset({"prompt_end", "cancel_sent", "agent_timeout"})

# What agents and the ACP client call to append one event to the trajectory.
Recorder = Callable[[dict[str, Any]], None]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TrajectoryRecorder:
    """Appends events as they happen, so a crash keeps everything recorded before it."""

    def __init__(self, trial_dir: Path, caps: OutputCaps | None = None) -> None:
        caps = caps or OutputCaps()
        self.path = trial_dir / ACP_TRAJECTORY_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self.file = CappedJsonl(self.path, caps.trajectory_bytes, caps.trajectory_event_bytes)
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
        self.file.write(line, essential=line.get("type") in ESSENTIAL_TYPES)
        self.n_events += 1
