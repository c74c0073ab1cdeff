"""The bridge's own record: ``trajectory/a2a_trajectory.jsonl`` (every A2A exchange and sandbox
observation) and ``agent/agentbeats_a2a.txt`` (``[agentbeats-a2a]`` lines for humans).

Both are capped (the participant decides how long its replies are): an event past
``event_cap`` bytes is shortened, events past ``trajectory_cap`` are dropped and counted in a last
``trajectory_truncated`` event; the text log stops at ``text_cap`` with a marker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from worker.bridge.protocol import PROTOCOL
from worker.core.capped import CappedFile, CappedJsonl
from worker.core.limits import OutputCaps
from worker.trial_record.paths import A2A_TRAJECTORY_FILE

_LINE_CHARS = 2000


class BridgeLog:
    def __init__(
        self, trial_dir: Path, task_id: str, participant: str, caps: OutputCaps | None = None
    ) -> None:
        caps = caps or OutputCaps()
        self.jsonl = trial_dir / A2A_TRAJECTORY_FILE
        self.text = trial_dir / "agent" / "agentbeats_a2a.txt"
        self.trajectory = CappedJsonl(
            self.jsonl, caps.trajectory_bytes, caps.trajectory_event_bytes
        )
        self.text_log = CappedFile(self.text, caps.agent_log_bytes)
        self.task_id = task_id
        self.participant = participant

    def event(self, kind: str, turn: int, payload: dict[str, Any]) -> None:
        record = {
            "protocol": PROTOCOL,
            "type": kind,
            "timestamp": time.time(),
            "task_id": self.task_id,
            "participant": self.participant,
            "turn": turn,
            "payload": payload,
        }
        self.trajectory.write(record)

    def line(self, text: str) -> None:
        if len(text) > _LINE_CHARS:
            text = f"{text[:_LINE_CHARS]}... [{len(text) - _LINE_CHARS} more characters]"
        self.text_log.append(f"[agentbeats-a2a] {text}\n".encode())
