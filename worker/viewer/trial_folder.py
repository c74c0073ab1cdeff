"""What one trial folder says, read back for people: its instruction, the timeline of messages and
actions (each with its exit code and output), the model calls and usage, the verifier's output and
the reward. ``trials show`` prints a digest of it; ``trials view`` renders all of it as HTML.

Everything here is read as untrusted text (the agent wrote much of it): callers escape it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from worker.bridge.protocol import find_usage
from worker.trial_record.jsonl import json_lines
from worker.trial_record.paths import (
    A2A_TRAJECTORY_FILE,
    ACP_TRAJECTORY_FILE,
    LLM_TRAJECTORY_FILE,
    RESULT_FILE,
    VERIFIER_DIR,
    VERIFIER_STDOUT_FILE,
)
from worker.trial_record.result import TrialResult

INSTRUCTION_FILE: Final = "sandbox-input/instruction.md"
VERIFIER_FILES: Final = (VERIFIER_STDOUT_FILE, f"{VERIFIER_DIR}/test-stderr.txt")
MAX_TEXT_CHARS: Final = 200_000  # per file read for a transcript
MAX_AGENT_LOGS: Final = 20  # files of agent/ shown


def read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise ValueError(f"{path}: not valid JSON") from None
    return value if isinstance(value, dict) else {}


def read_text(path: Path) -> str | None:
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        data = handle.read(MAX_TEXT_CHARS + 1)
    text = data[:MAX_TEXT_CHARS].decode("utf-8", errors="replace")
    return text + ("\n… [cut]" if len(data) > MAX_TEXT_CHARS else "")


@dataclass
class Action:
    """One tool call: what was asked, how it ended, and its output."""

    call_id: str
    kind: str
    title: str
    status: str
    exit_code: int | None = None
    timed_out: bool = False
    output: str = ""
    raw_input: Any = None


@dataclass
class Step:
    """One timeline entry: a message (``user``, ``agent``, ``thought``) or an action."""

    kind: str  # user | agent | thought | action | event
    text: str = ""
    action: Action | None = None


@dataclass
class Transcript:
    folder: Path
    result: dict[str, Any]
    instruction: str | None
    steps: list[Step]
    model_calls: list[dict[str, Any]]  # llm_trajectory.jsonl lines (measured by the worker)
    reported: list[dict[str, Any]]  # per reply: {"turn", "usage"} (the participant's word)
    verifier_output: dict[str, str] = field(default_factory=dict)  # file name -> text
    agent_logs: dict[str, str] = field(default_factory=dict)  # agent/<file> -> text

    @property
    def actions(self) -> list[Action]:
        return [s.action for s in self.steps if s.action is not None]

    @property
    def final_message(self) -> str | None:
        """The agent's last message (its chunks joined), if it said anything."""
        for step in reversed(self.steps):
            if step.kind == "agent" and step.text.strip():
                return step.text
        message = (self.result.get("agent_result") or {}).get("message")
        return message if isinstance(message, str) and message.strip() else None


def _content_text(content: Any) -> str:
    """The text of an ACP tool call's ``content`` (a list of content blocks)."""
    texts = []
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict):
            continue
        inner = item.get("content") if item.get("type") == "content" else item
        if isinstance(inner, dict) and isinstance(inner.get("text"), str):
            texts.append(inner["text"])
    return "".join(texts)


def timeline(folder: Path) -> list[Step]:
    """Messages and actions in the order the ACP trajectory recorded them; consecutive chunks of
    one message are joined, a tool call's updates are folded into its action."""
    steps: list[Step] = []
    actions: dict[str, Action] = {}
    names = {"user_message": "user", "agent_message": "agent", "agent_thought": "thought"}
    for event in json_lines(folder / ACP_TRAJECTORY_FILE):
        kind = event.get("type")
        if kind in names:
            text = str(event.get("text") or "")
            if steps and steps[-1].kind == names[kind]:
                steps[-1].text += text
            else:
                steps.append(Step(names[kind], text))
        elif kind in ("tool_call", "tool_call_update"):
            call_id = str(event.get("tool_call_id") or "")
            action = actions.get(call_id)
            if action is None:
                action = Action(
                    call_id,
                    str(event.get("kind") or ""),
                    str(event.get("title") or ""),
                    str(event.get("status") or ""),
                    raw_input=event.get("raw_input"),
                )
                actions[call_id] = action
                steps.append(Step("action", action=action))
            if event.get("title") and not action.title:
                action.title = str(event["title"])
            if event.get("status"):
                action.status = str(event["status"])
            raw = event.get("raw_output")
            if isinstance(raw, dict):
                if isinstance(raw.get("exit_code"), int):
                    action.exit_code = raw["exit_code"]
                action.timed_out = bool(raw.get("timed_out")) or action.timed_out
                if isinstance(raw.get("error"), str) and not action.output:
                    action.output = raw["error"]
            text = _content_text(event.get("content"))
            if text:
                action.output = text
        elif kind in ("agent_timeout", "cancel_sent", "trajectory_truncated"):
            detail = {k: v for k, v in event.items() if k not in ("type", "timestamp")}
            steps.append(Step("event", f"{kind} {json.dumps(detail, sort_keys=True)}"))
    return steps


def reported_usage(folder: Path) -> list[dict[str, Any]]:
    """The ``usage`` object of each purple reply that carried one (a2a trials)."""
    out = []
    for event in json_lines(folder / A2A_TRAJECTORY_FILE):
        payload = event.get("payload")
        if event.get("type") != "a2a_response" or not isinstance(payload, dict):
            continue
        try:
            usage = find_usage(payload.get("data") or [])
        except ValueError:
            continue  # the trial ended as a participant error; result.json says why
        if usage is not None:
            out.append({"turn": event.get("turn"), "usage": usage.to_data()})
    return out


def load(folder: Path) -> Transcript:
    record = TrialResult.read(folder / RESULT_FILE)
    if record is None:
        raise ValueError(f"{folder}: no {RESULT_FILE} (not a trial folder, or it has not finished)")
    result = record.document()
    verifier = {}
    for name in VERIFIER_FILES:
        text = read_text(folder / name)
        if text is not None:
            verifier[Path(name).name] = text
    logs = {}
    agent_dir = folder / "agent"
    if agent_dir.is_dir():
        for path in sorted(agent_dir.iterdir())[:MAX_AGENT_LOGS]:
            text = read_text(path) if path.is_file() and not path.is_symlink() else None
            if text is not None:
                logs[path.name] = text
    return Transcript(
        folder=folder,
        result=result,
        instruction=read_text(folder / INSTRUCTION_FILE),
        steps=timeline(folder),
        model_calls=list(json_lines(folder / LLM_TRAJECTORY_FILE)),
        reported=reported_usage(folder),
        verifier_output=verifier,
        agent_logs=logs,
    )


def tail(text: str, lines: int = 3, chars: int = 300) -> str:
    """The last ``lines`` non-empty lines of ``text``, at most ``chars`` characters."""
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    out = "\n".join(kept)
    return out if len(out) <= chars else "…" + out[-(chars - 1) :]
