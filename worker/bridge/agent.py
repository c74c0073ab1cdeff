"""The bridge as an ACP agent: one ``session/prompt`` = one A2A conversation with the purple agent.

Every purple action is performed through the worker's ACP client (``terminal/*``, ``fs/*``) and
announced as a ``tool_call`` first, so the worker records each command exactly like a local
agent's. How the conversation ended travels back in the prompt result's ``_meta``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
)
from acp.schema import AgentCapabilities, Implementation

from worker.acp.extensions import OUTCOME_KEY, STREAMS_KEY, WITHIN_KEY
from worker.bridge import paths
from worker.bridge.a2a_peer import Conversation, ParticipantFailure, Reply, data_part, text_part
from worker.bridge.logs import BridgeLog
from worker.bridge.protocol import (
    ActionError,
    ExecAction,
    FileContent,
    FinishAction,
    Limits,
    ReadFileAction,
    ShellContext,
    WriteFileAction,
    find_action,
    result_data,
)
from worker.failures import FailureKind

MAX_READ_BYTES = 1 << 20
SCRATCH_DIR = "/tmp"


@dataclass(frozen=True)
class BridgeConfig:
    url: str
    task_id: str
    workspace: str
    skills_dir: str | None
    trial_dir: Path
    deadline_sec: float
    max_turns: int = 100
    max_output_bytes: int = 64 << 10
    max_file_bytes: int = 5 << 20
    max_files: int = 100
    max_total_file_bytes: int = 20 << 20


@dataclass
class Outcome:
    status: str  # finished | plain_reply | max_turns | deadline | participant_failure | cancelled
    failure: FailureKind | None = None
    message: str | None = None
    turns: int = 0
    written_files: list[str] = field(default_factory=list)
    refused_files: list[dict[str, str]] = field(default_factory=list)

    def meta(self) -> dict[str, Any]:
        return {
            OUTCOME_KEY: {
                "status": self.status,
                "failure": self.failure.value if self.failure else None,
                "message": self.message,
                "turns": self.turns,
                "written_files": self.written_files,
                "refused_files": self.refused_files,
            }
        }


class BridgeAgent:
    """Plain class: the SDK answers "method not found" for whatever it does not define."""

    def __init__(self, config: BridgeConfig) -> None:
        self.config = config
        self._running: dict[str, asyncio.Task[Outcome]] = {}
        self._tools_ok = False

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **kw: Any
    ) -> InitializeResponse:
        caps = client_capabilities
        self._tools_ok = bool(
            caps
            and caps.terminal
            and caps.fs
            and caps.fs.read_text_file
            and caps.fs.write_text_file
        )
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="skillsbench-a2a-bridge", version="0.1.0"),
        )

    async def new_session(self, cwd: str, **kw: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=uuid.uuid4().hex)

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> PromptResponse:
        if not self._tools_ok:
            raise RequestError.invalid_request(
                {"detail": "the a2a bridge needs the client's terminal and fs capabilities"}
            )
        instruction = "\n".join(getattr(block, "text", "") for block in prompt)
        shell = ShellSession(self.config, self.conn, session_id)
        task = asyncio.create_task(shell.run(instruction))
        self._running[session_id] = task
        try:
            outcome = await task
        except asyncio.CancelledError:
            outcome = Outcome("cancelled", message="cancelled by the worker", turns=shell.turn)
        finally:
            self._running.pop(session_id, None)
        shell.log.line(
            f"end status={outcome.status} failure={outcome.meta()[OUTCOME_KEY]['failure']}"
        )
        stop = "cancelled" if outcome.status == "cancelled" else "end_turn"
        if outcome.status == "max_turns":
            stop = "max_turn_requests"
        return PromptResponse(stop_reason=stop, field_meta=outcome.meta())

    async def cancel(self, session_id: str, **kw: Any) -> None:
        task = self._running.get(session_id)
        if task is not None:
            task.cancel()


class ShellSession:
    """The ``skillsbench-shell/v1`` loop for one trial."""

    def __init__(self, config: BridgeConfig, conn: Any, session_id: str) -> None:
        self.config = config
        self.conn = conn
        self.sid = session_id
        self.turn = 0
        self.log = BridgeLog(config.trial_dir, config.task_id, config.url)
        self.deadline = time.monotonic() + config.deadline_sec

    def context(self) -> ShellContext:
        c = self.config
        return ShellContext(
            task_id=c.task_id,
            workspace=c.workspace,
            skills_dir=c.skills_dir,
            limits=Limits(
                max_turns=c.max_turns,
                deadline_sec=c.deadline_sec,
                max_output_bytes=c.max_output_bytes,
            ),
        )

    async def run(self, instruction: str) -> Outcome:
        outcome = Outcome("finished")
        try:
            async with Conversation(self.config.url, self.deadline) as conv:
                context = self.context().to_data()
                self.log.event("user_message", 0, {"text": instruction})
                self.log.event("sandbox_context", 0, context)
                self.log.line(f"conversation with {self.config.url} task={self.config.task_id}")
                parts = [text_part(instruction), data_part(context)]
                while True:
                    self.turn += 1
                    outcome.turns = self.turn
                    message = conv.message(parts)
                    self.log.event("a2a_request", self.turn, {"context_id": conv.context_id})
                    reply = await conv.send(message)
                    self._log_reply(reply)
                    try:
                        action = find_action(reply.data)
                    except ActionError as exc:
                        result: dict[str, Any] = {"error": f"invalid action: {exc}"}
                    else:
                        if action is None:
                            await self._say(" ".join(reply.texts))
                            outcome.status = "plain_reply"
                            return outcome
                        if isinstance(action, FinishAction):
                            await self._say(action.message or "")
                            await self._materialize(action.files, outcome)
                            return outcome
                        result = await self._perform(action)
                    if self.turn >= self.config.max_turns:
                        outcome.status = "max_turns"
                        outcome.message = f"stopped after {self.turn} turns"
                        return outcome
                    if time.monotonic() >= self.deadline:
                        outcome.status = "deadline"
                        outcome.message = "time ran out while the bridge was acting"
                        return outcome
                    parts = [text_part(_summary(result)), data_part(result_data(self.turn, result))]
        except ParticipantFailure as exc:
            self.log.event("a2a_error", self.turn, {"failure": exc.kind.value, "message": str(exc)})
            self.log.line(f"error {exc.kind.value}: {exc}")
            outcome.status = "participant_failure"
            outcome.failure = exc.kind
            outcome.message = str(exc)
            return outcome

    def _log_reply(self, reply: Reply) -> None:
        self.log.event(
            "a2a_response",
            self.turn,
            {
                "state": reply.state,
                "texts": reply.texts,
                "data": reply.data,
                "agent_under_test_receipt": reply.raw,
            },
        )
        self.log.line(
            f"turn {self.turn}: reply state={reply.state or 'message'} data_parts={len(reply.data)}"
        )

    async def _say(self, text: str) -> None:
        if text.strip():
            await self.conn.session_update(self.sid, update_agent_message_text(text))

    # --- actions ------------------------------------------------------------------------
    async def _perform(
        self, action: ExecAction | ReadFileAction | WriteFileAction
    ) -> dict[str, Any]:
        if isinstance(action, ExecAction):
            return await self._exec(action)
        if isinstance(action, ReadFileAction):
            return await self._read(action)
        return await self._write(action, [self.config.workspace, SCRATCH_DIR], "write_file")

    async def _exec(self, action: ExecAction) -> dict[str, Any]:
        tool_id = f"turn-{self.turn}"
        await self.conn.session_update(
            self.sid,
            start_tool_call(
                tool_id,
                action.command,
                kind="execute",
                status="in_progress",
                raw_input=action.model_dump(),
            ),
        )
        timeout = max(0.1, min(action.timeout_sec, self.deadline - time.monotonic()))
        terminal = await self.conn.create_terminal(
            session_id=self.sid,
            command="sh",
            args=["-c", action.command],
            cwd=self.config.workspace,
            output_byte_limit=self.config.max_output_bytes,
        )
        tid = terminal.terminal_id
        timed_out = False
        try:
            try:
                await asyncio.wait_for(
                    self.conn.wait_for_terminal_exit(session_id=self.sid, terminal_id=tid), timeout
                )
            except TimeoutError:
                timed_out = True
                await self.conn.kill_terminal(session_id=self.sid, terminal_id=tid)
            output = await self.conn.terminal_output(
                session_id=self.sid, terminal_id=tid, **{STREAMS_KEY: True}
            )
        finally:
            await self.conn.release_terminal(session_id=self.sid, terminal_id=tid)
        streams = (output.field_meta or {}).get(STREAMS_KEY, {})
        status = output.exit_status
        exit_code = status.exit_code if status and status.exit_code is not None else -1
        result = {
            "action": "exec",
            "exit_code": exit_code,
            "stdout": streams.get("stdout", {}).get("text", output.output),
            "stderr": streams.get("stderr", {}).get("text", ""),
            "truncated": bool(
                output.truncated or any(s.get("truncated") for s in streams.values())
            ),
            "timed_out": timed_out,
        }
        self.log.event("terminal_observation", self.turn, {"command": action.command, **result})
        await self.conn.session_update(
            self.sid,
            update_tool_call(
                tool_id,
                status="completed" if exit_code == 0 and not timed_out else "failed",
                content=[tool_content(text_block(output.output))],
                raw_output={k: result[k] for k in ("exit_code", "truncated", "timed_out")},
            ),
        )
        return result

    async def _read(self, action: ReadFileAction) -> dict[str, Any]:
        roots = [
            self.config.workspace,
            SCRATCH_DIR,
            *([self.config.skills_dir] if self.config.skills_dir else []),
        ]
        tool_id = f"turn-{self.turn}"
        await self.conn.session_update(
            self.sid,
            start_tool_call(
                tool_id,
                f"read {action.path}",
                kind="read",
                status="in_progress",
                raw_input=action.model_dump(),
            ),
        )
        try:
            path = paths.resolve(action.path, self.config.workspace, roots)
            response = await self.conn.read_text_file(
                session_id=self.sid, path=path, **{WITHIN_KEY: roots}
            )
        except (paths.PathRefused, RequestError) as exc:
            return await self._tool_error(tool_id, "read_file", action.path, exc)
        content = response.content
        raw = content.encode("utf-8")
        truncated = len(raw) > MAX_READ_BYTES
        if truncated:
            content = raw[:MAX_READ_BYTES].decode("utf-8", errors="ignore")
        await self.conn.session_update(
            self.sid,
            update_tool_call(
                tool_id, status="completed", raw_output={"bytes": len(raw), "truncated": truncated}
            ),
        )
        self.log.event(
            "file_observation", self.turn, {"action": "read_file", "path": path, "bytes": len(raw)}
        )
        return {"action": "read_file", "path": path, "content": content, "truncated": truncated}

    async def _write(
        self, file: FileContent | WriteFileAction, roots: list[str], action: str
    ) -> dict[str, Any]:
        tool_id = (
            f"turn-{self.turn}"
            if action == "write_file"
            else f"turn-{self.turn}-{uuid.uuid4().hex[:6]}"
        )
        await self.conn.session_update(
            self.sid,
            start_tool_call(
                tool_id,
                f"write {file.path}",
                kind="edit",
                status="in_progress",
                raw_input={
                    "path": file.path,
                    "encoding": file.encoding,
                    "bytes": len(file.content),
                },
            ),
        )
        try:
            path = paths.resolve(file.path, self.config.workspace, roots)
            text = _decode(file)
            if len(text.encode("utf-8")) > self.config.max_file_bytes:
                raise paths.PathRefused(
                    f"{file.path}: larger than {self.config.max_file_bytes} bytes"
                )
            await self.conn.write_text_file(
                session_id=self.sid, path=path, content=text, **{WITHIN_KEY: roots}
            )
        except (paths.PathRefused, RequestError, ValueError) as exc:
            return await self._tool_error(tool_id, action, file.path, exc)
        await self.conn.session_update(
            self.sid, update_tool_call(tool_id, status="completed", raw_output={"path": path})
        )
        self.log.event("file_observation", self.turn, {"action": action, "path": path})
        return {"action": action, "path": path, "bytes_written": len(text.encode("utf-8"))}

    async def _tool_error(
        self, tool_id: str, action: str, path: str, exc: Exception
    ) -> dict[str, Any]:
        detail = _error_text(exc)
        await self.conn.session_update(
            self.sid, update_tool_call(tool_id, status="failed", raw_output={"error": detail})
        )
        self.log.event(
            "terminal_protocol_error", self.turn, {"action": action, "path": path, "error": detail}
        )
        return {"action": action, "path": path, "error": detail}

    async def _materialize(self, files: list[FileContent], outcome: Outcome) -> None:
        """Write a finish's files[] into the workspace, refusing anything that leaves it."""
        total = 0
        for index, file in enumerate(files):
            size = len(file.content)
            total += size
            if index >= self.config.max_files:
                result = {"path": file.path, "error": f"more than {self.config.max_files} files"}
            elif total > self.config.max_total_file_bytes:
                result = {
                    "path": file.path,
                    "error": f"files[] larger than {self.config.max_total_file_bytes} bytes in total",
                }
            else:
                result = await self._write(file, [self.config.workspace], "returned_file")
            if "error" in result:
                outcome.refused_files.append({"path": file.path, "error": result["error"]})
            else:
                outcome.written_files.append(result["path"])
        if files:
            self.log.event(
                "returned_files",
                self.turn,
                {"written": outcome.written_files, "refused": outcome.refused_files},
            )
            self.log.line(
                f"returned files: {len(outcome.written_files)} written, {len(outcome.refused_files)} refused"
            )


def _decode(file: FileContent | WriteFileAction) -> str:
    if file.encoding == "utf-8":
        return file.content
    try:
        raw = base64.b64decode(file.content, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{file.path}: invalid base64 content") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{file.path}: binary (non UTF-8) content is not supported") from None


def _error_text(exc: Exception) -> str:
    if isinstance(exc, RequestError) and isinstance(exc.data, dict):
        return "; ".join(str(v) for v in exc.data.values())
    return str(exc)


def _summary(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"{result.get('action', 'action')} refused: {result['error']}"
    if result.get("action") == "exec":
        return f"exec finished: exit code {result['exit_code']}" + (
            " (timed out)" if result["timed_out"] else ""
        )
    return f"{result.get('action')} done: {result.get('path')}"
