"""The bridge's own record: ``trajectory/a2a_trajectory.jsonl`` (every A2A exchange and sandbox
observation) and ``agent/agentbeats_a2a.txt`` (``[agentbeats-a2a]`` lines for humans)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from worker.bridge.protocol import PROTOCOL


class BridgeLog:
    def __init__(self, trial_dir: Path, task_id: str, participant: str) -> None:
        self.jsonl = trial_dir / "trajectory" / "a2a_trajectory.jsonl"
        self.text = trial_dir / "agent" / "agentbeats_a2a.txt"
        self.jsonl.parent.mkdir(parents=True, exist_ok=True)
        self.text.parent.mkdir(parents=True, exist_ok=True)
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
        with self.jsonl.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")

    def line(self, text: str) -> None:
        with self.text.open("a", encoding="utf-8") as out:
            out.write(f"[agentbeats-a2a] {text}\n")
