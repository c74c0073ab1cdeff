"""What the scripted purple agents answer, turn by turn (no a2a import: shared by the a2a-sdk
1.x and 0.3 servers). Every received DataPart is appended to $PURPLE_LOG for the tests."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

_TURNS: dict[str, int] = {}


def record_cancel(task_id: str, context_id: str) -> None:
    """A ``CancelTask`` the agent received, appended to $PURPLE_LOG."""
    log = os.environ.get("PURPLE_LOG")
    if log:
        with open(log, "a") as out:
            out.write(json.dumps({"cancel": task_id, "context_id": context_id}) + "\n")


def next_reply(
    mode: str, context_id: str, data_parts: list[Any]
) -> dict[str, Any] | list[dict[str, Any]] | str | None:
    """A DataPart action (dict), several DataParts (list), plain text (str), or None for "never
    answer"."""
    log = os.environ.get("PURPLE_LOG")
    if log:
        with open(log, "a") as out:
            out.write(json.dumps({"context_id": context_id, "data": data_parts}) + "\n")
    turn = _TURNS[context_id] = _TURNS.get(context_id, 0) + 1
    if mode == "exec" or mode.startswith("slow-"):
        # "slow-<seconds>": first an exec of ``sleep <seconds>`` (a marker on the host)
        slow = [{"action": "exec", "command": f"sleep {mode[5:]}", "timeout_sec": 120}]
        steps: list[dict[str, Any]] = [
            *(slow if mode != "exec" else []),
            {"action": "exec", "command": "ls -la"},
            {
                "action": "exec",
                "command": "echo 42 > answer.txt && echo wrote >&2",
                "timeout_sec": 30,
            },
            {"action": "read_file", "path": "answer.txt"},
            {"action": "finish", "message": "done"},
        ]
        return steps[min(turn, len(steps)) - 1]
    if mode == "usage":  # reports its model usage: beside the action, or in a part of its own
        usage_steps: list[Any] = [
            {
                "action": "exec",
                "command": "echo 42 > answer.txt",
                "usage": {
                    "model": "m-1",
                    "calls": 2,
                    "input_tokens": 100,
                    "output_tokens": 10,
                    "cost_usd": 0.001,
                },
            },
            {  # cost unknown on this reply
                "action": "exec",
                "command": "true",
                "usage": {"model": "m-1", "calls": 1, "input_tokens": 50, "output_tokens": 5},
            },
            {"action": "read_file", "path": "answer.txt"},  # no usage object at all
            [
                {"action": "finish", "message": "done"},
                {
                    "usage": {
                        "calls": 1,
                        "input_tokens": 25.0,
                        "output_tokens": 5,
                        "cost_usd": 0.0005,
                    }
                },
            ],
        ]
        return usage_steps[min(turn, len(usage_steps)) - 1]  # type: ignore[no-any-return]
    if mode == "usage-bad":
        return {"action": "exec", "command": "true", "usage": {"calls": 1, "input_tokens": -5}}
    if mode == "files":
        return {"action": "finish", "files": [{"path": "answer.txt", "content": "42\n"}]}
    if mode == "escape":
        if turn == 1:
            return {
                "action": "exec",
                "command": "mkdir -p /tmp/outside && ln -s /tmp/outside escape",
            }
        if turn == 2:
            return {"action": "write_file", "path": "/etc/owned", "content": "x"}
        return {
            "action": "finish",
            "files": [
                {"path": "../../etc/passwd", "content": "pwned"},
                {"path": "/etc/passwd", "content": "pwned"},
                {"path": "/tmp/outside/direct.txt", "content": "pwned"},
                {"path": "escape/pwned.txt", "content": "pwned"},
                {"path": "answer.txt", "content": "NDIK", "encoding": "base64"},
            ],
        }
    if mode == "binary":
        blob = base64.b64encode(bytes(range(256))).decode()
        if turn == 1:
            return {
                "action": "write_file",
                "path": "blob.bin",
                "content": blob,
                "encoding": "base64",
            }
        return {
            "action": "finish",
            "files": [
                {"path": "answer.txt", "content": "42\n"},
                {"path": "returned.bin", "content": blob, "encoding": "base64"},
            ],
        }
    if mode == "limits":
        steps = [
            {"action": "exec", "command": "head -c 200000 /dev/zero | tr '\\0' a"},
            {"action": "exec", "command": "echo started; sleep 30", "timeout_sec": 1},
            {"action": "bogus"},
            {"action": "exec", "command": "(sleep 20 &) ; echo back", "timeout_sec": 10},
            {"action": "finish"},
        ]
        return steps[min(turn, len(steps)) - 1]
    if mode == "many":
        files = [{"path": f"out/{n}.txt", "content": str(n)} for n in range(4)]
        return {"action": "finish", "files": [{"path": "answer.txt", "content": "42\n"}, *files]}
    if mode == "plain":
        return "I cannot use tools, sorry."
    if mode == "silent":
        return None
    if mode == "stall":  # one action, then never another answer
        return {"action": "exec", "command": "true"} if turn == 1 else None
    if mode == "flood":  # hostile: $PURPLE_FLOOD_BYTES of junk per reply, $PURPLE_FLOOD_TURNS turns
        size = int(os.environ.get("PURPLE_FLOOD_BYTES", str(4 << 20)))
        if turn >= int(os.environ.get("PURPLE_FLOOD_TURNS", "10")):
            return {"action": "finish", "message": "x" * size}
        return {"action": "exec", "command": "true #" + "y" * 100_000, "notes": "z" * size}
    if mode == "loop":
        return {"action": "exec", "command": "true"}
    raise ValueError(f"unknown mode {mode}")
