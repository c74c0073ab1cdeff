"""What one trial folder says, read back for people: its instruction, the timeline of messages and
actions (each with its exit code and output), the model calls and usage, the verifier's output and
the reward. ``trials show`` prints a digest of it; ``trials view`` renders all of it as HTML.

Everything here is read as untrusted text (the agent wrote much of it): callers escape it.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from datetime import datetime
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
MAX_WRITTEN_CHARS: Final = 64_000  # of one file the agent wrote, shown beside its action


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (symlinks followed) is within ``folder``: a trial folder holds what the
    agent left, and a link out of it must not make a reader show a file of the host."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):  # a symlink loop; a NUL in a path of a URL
        return False


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
    started_at: str | None = None  # the trajectory's timestamps (ISO, UTC)
    ended_at: str | None = None
    written: str | None = None  # the content of a file the agent wrote (a2a trials)

    @property
    def seconds(self) -> float | None:
        """How long the action took, from its first to its last recorded event."""
        start, end = instant(self.started_at), instant(self.ended_at)
        return None if start is None or end is None else max(0.0, end - start)


def instant(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass
class Step:
    """One timeline entry: a message (``user``, ``agent``, ``thought``) or an action."""

    kind: str  # user | agent | thought | action | event
    text: str = ""
    action: Action | None = None
    at: str | None = None  # when it began (the trajectory's timestamp)


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
    task_id: str | None = None  # the task's id (result.json's ``task_id`` is Harbor's object)
    problems: list[str] = field(default_factory=list)  # files not read (``load(lenient=True)``)

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


def _lines(folder: Path, name: str, strict: bool) -> list[dict[str, Any]]:
    path = folder / name
    return list(json_lines(path, strict=strict)) if inside(path, folder) else []


def timeline(folder: Path, *, strict: bool = True) -> list[Step]:
    """Messages and actions in the order the ACP trajectory recorded them; consecutive chunks of
    one message are joined, a tool call's updates are folded into its action (a trajectory still
    being written: ``strict=False`` passes over a torn last line)."""
    steps: list[Step] = []
    actions: dict[str, Action] = {}
    names = {"user_message": "user", "agent_message": "agent", "agent_thought": "thought"}
    for event in _lines(folder, ACP_TRAJECTORY_FILE, strict):
        kind = event.get("type")
        stamp = event.get("timestamp") if isinstance(event.get("timestamp"), str) else None
        if kind in names:
            text = str(event.get("text") or "")
            if steps and steps[-1].kind == names[kind]:
                steps[-1].text += text
            else:
                steps.append(Step(names[kind], text, at=stamp))
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
                    started_at=stamp,
                )
                actions[call_id] = action
                steps.append(Step("action", action=action, at=stamp))
            action.ended_at = stamp or action.ended_at
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
            steps.append(Step("event", f"{kind} {json.dumps(detail, sort_keys=True)}", at=stamp))
    _attach_written(folder, actions, strict)
    return steps


def _written_text(item: dict[str, Any]) -> str | None:
    content = item.get("content")
    if not isinstance(content, str):
        return None
    if item.get("encoding") == "base64":
        try:
            raw = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            return None
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError:
            return f"({len(raw)} bytes of binary content)"
    if len(content) > MAX_WRITTEN_CHARS:
        return content[:MAX_WRITTEN_CHARS] + "\n… [cut]"
    return content


def _attach_written(folder: Path, actions: dict[str, Action], strict: bool) -> None:
    """The content of each file an a2a participant wrote, taken from its reply (the bridge's
    tool call records only the size): the action ``turn-N…`` writing PATH gets the content the
    reply of turn N gave for PATH (a ``write_file`` action or a ``finish``'s ``files``)."""
    by_turn: dict[int, dict[str, dict[str, Any]]] = {}
    for event in _lines(folder, A2A_TRAJECTORY_FILE, strict):
        payload = event.get("payload")
        turn = event.get("turn")
        if event.get("type") != "a2a_response" or not isinstance(payload, dict):
            continue
        if not isinstance(turn, int):
            continue
        files = by_turn.setdefault(turn, {})
        for part in payload.get("data") or []:
            if not isinstance(part, dict):
                continue
            items = (
                [part, *(part.get("files") or [])]
                if isinstance(part.get("files"), list)
                else [part]
            )
            for item in items:
                if isinstance(item, dict) and isinstance(item.get("path"), str):
                    files.setdefault(item["path"], item)
    for call_id, action in actions.items():
        if action.kind != "edit" or not call_id.startswith("turn-"):
            continue
        try:
            turn = int(call_id.split("-")[1])
        except (IndexError, ValueError):
            continue
        path = action.raw_input.get("path") if isinstance(action.raw_input, dict) else None
        item = by_turn.get(turn, {}).get(path) if isinstance(path, str) else None
        if item is not None:
            action.written = _written_text(item)


def reported_usage(folder: Path) -> list[dict[str, Any]]:
    """The ``usage`` object of each purple reply that carried one (a2a trials)."""
    out = []
    for event in _lines(folder, A2A_TRAJECTORY_FILE, False):
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


def _problem(exc: ValueError) -> str:
    return _clip_line(" ".join(str(exc).split()), 400)


def _clip_line(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def load(folder: Path, *, running: bool = False, lenient: bool = False) -> Transcript:
    """The trial at ``folder``; ``running``: it may not have finished (no ``result.json`` yet,
    a trajectory still being written), so what is there so far. ``lenient``: a record that is
    missing or malformed (a result.json that is not the model's, a line that is not JSON) is
    noted in ``problems`` and the rest is read, instead of a ValueError."""
    problems: list[str] = []
    try:
        record = (
            TrialResult.read(folder / RESULT_FILE) if inside(folder / RESULT_FILE, folder) else None
        )
    except ValueError as exc:
        if not lenient:
            raise
        problems.append(f"{RESULT_FILE}: {_problem(exc)}")
        record = None
    if record is None and not running and not problems:
        message = f"{folder}: no {RESULT_FILE} (not a trial folder, or it has not finished)"
        if not lenient:
            raise ValueError(message)
        problems.append(f"no readable {RESULT_FILE} (not a JSON object, or missing)")

    def lines(read: Any) -> Any:
        try:
            return read(not running)
        except ValueError as exc:
            if not lenient:
                raise
            problems.append(_problem(exc))
            return read(False)

    result = record.document() if record is not None else {}
    verifier = {}
    for name in VERIFIER_FILES:
        text = read_text(folder / name) if inside(folder / name, folder) else None
        if text is not None:
            verifier[Path(name).name] = text
    logs = {}
    agent_dir = folder / "agent"
    if agent_dir.is_dir() and inside(agent_dir, folder):
        for path in sorted(agent_dir.iterdir())[:MAX_AGENT_LOGS]:
            safe = path.is_file() and not path.is_symlink() and inside(path, folder)
            text = read_text(path) if safe else None
            if text is not None:
                logs[path.name] = text
    return Transcript(
        folder=folder,
        result=result,
        instruction=read_text(folder / INSTRUCTION_FILE)
        if inside(folder / INSTRUCTION_FILE, folder)
        else None,
        steps=lines(lambda strict: timeline(folder, strict=strict)),
        model_calls=lines(lambda strict: _lines(folder, LLM_TRAJECTORY_FILE, strict)),
        reported=reported_usage(folder),
        verifier_output=verifier,
        agent_logs=logs,
        task_id=record.task if record is not None else None,
        problems=problems,
    )


def tail(text: str, lines: int = 3, chars: int = 300) -> str:
    """The last ``lines`` non-empty lines of ``text``, at most ``chars`` characters."""
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    out = "\n".join(kept)
    return out if len(out) <= chars else "…" + out[-(chars - 1) :]
