"""Purple actions performed in the sandbox through the worker's ACP client.

Each is announced as a ``tool_call`` (kind ``execute``, ``read`` or ``edit``) and closed with a
``tool_call_update``, so the worker's trajectory counts them like any agent's commands. Paths are
checked here lexically and again by the worker inside the sandbox (symlinks).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
import uuid
from typing import Any

from acp import RequestError, start_tool_call, text_block, tool_content, update_tool_call

from worker.acp.extensions import ENCODING_KEY, STREAMS_KEY, WITHIN_KEY
from worker.bridge import paths
from worker.bridge.config import BridgeConfig, Outcome
from worker.bridge.logs import BridgeLog
from worker.bridge.protocol import ExecAction, FileContent, ReadFileAction, WriteFileAction

MAX_READ_BYTES = 1 << 20
SCRATCH_DIR = "/tmp"


class SandboxActions:
    def __init__(
        self, config: BridgeConfig, conn: Any, session_id: str, log: BridgeLog, deadline: float
    ) -> None:
        self.config = config
        self.conn = conn
        self.sid = session_id
        self.log = log
        self.deadline = deadline
        self.turn = 0

    async def perform(
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
        try:
            output, timed_out = await self._run(action)
        except RequestError as exc:  # the sandbox could not start the command
            return await self._tool_error(tool_id, "exec", action.command, exc)
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

    async def _run(self, action: ExecAction) -> tuple[Any, bool]:
        """Create the terminal, wait (killing it at the timeout), read its output, release it."""
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
        return output, timed_out

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
                tool_id,
                status="completed",
                # what was read, so the trajectory shows it (capped like the reply)
                content=[tool_content(text_block(content))],
                raw_output={"bytes": len(raw), "truncated": truncated},
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
            size = _decoded_size(file)
            if size > self.config.max_file_bytes:
                raise paths.PathRefused(
                    f"{file.path}: larger than {self.config.max_file_bytes} bytes"
                )
            await self.conn.write_text_file(
                session_id=self.sid,
                path=path,
                content=file.content,
                **{WITHIN_KEY: roots, ENCODING_KEY: file.encoding},
            )
        except (paths.PathRefused, RequestError, ValueError) as exc:
            return await self._tool_error(tool_id, action, file.path, exc)
        await self.conn.session_update(
            self.sid, update_tool_call(tool_id, status="completed", raw_output={"path": path})
        )
        self.log.event("file_observation", self.turn, {"action": action, "path": path})
        return {"action": action, "path": path, "bytes_written": size}

    async def _tool_error(
        self, tool_id: str, action: str, path: str, exc: Exception
    ) -> dict[str, Any]:
        """Close the tool call as failed; ``path`` is the file (or the command) concerned."""
        detail = _error_text(exc)
        await self.conn.session_update(
            self.sid, update_tool_call(tool_id, status="failed", raw_output={"error": detail})
        )
        self.log.event(
            "terminal_protocol_error", self.turn, {"action": action, "path": path, "error": detail}
        )
        return {"action": action, "path": path, "error": detail}

    async def materialize(self, files: list[FileContent], outcome: Outcome) -> None:
        """Write a finish's files[] into the workspace, refusing anything that leaves it."""
        total = 0
        for index, file in enumerate(files):
            try:
                total += _decoded_size(file)  # bytes, as the per-file limit counts them
            except ValueError as exc:
                outcome.refused_files.append({"path": file.path, "error": str(exc)})
                continue
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


def _decoded_size(file: FileContent | WriteFileAction) -> int:
    """Bytes the file will hold; base64 content is checked here, before anything is written."""
    if file.encoding == "utf-8":
        return len(file.content.encode("utf-8"))
    try:
        return len(base64.b64decode(file.content, validate=True))
    except (binascii.Error, ValueError):
        raise ValueError(f"{file.path}: invalid base64 content") from None


def _error_text(exc: Exception) -> str:
    if isinstance(exc, RequestError) and isinstance(exc.data, dict):
        return "; ".join(str(v) for v in exc.data.values())
    return str(exc)
