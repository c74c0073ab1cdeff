"""The worker's ACP client: records what the agent reports and serves its ``fs/*`` and
``terminal/*`` requests in the trial's sandbox.

A plain class on purpose (not a subclass of ``acp.Client``): the SDK answers "method not found"
for anything it does not define, where a Protocol subclass would silently answer ``{}``.
"""

from __future__ import annotations

import base64
import binascii
import time
from typing import Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    CreateTerminalResponse,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from pydantic import BaseModel

from worker.acp import sandbox_fs
from worker.acp.extensions import ENCODING_KEY, STREAMS_KEY, WITHIN_KEY
from worker.acp.terminals import Terminals
from worker.acp.trajectory import update_event
from worker.sandbox.base import Sandbox
from worker.trial_record.trajectory import Recorder

_PERMISSION_PREFERENCE = ("bypassPermissions", "allow_always", "allow_once")


class SandboxClient:
    """ACP client side of one agent connection."""

    def __init__(self, sandbox: Sandbox, record: Recorder, user: str | None = None) -> None:
        self.sandbox = sandbox
        self.record = record
        self.user = user  # the task's [agent].user: terminals and files act as it
        self.terminals = Terminals(sandbox, user)
        self.tool_call_ids: set[str] = set()
        self.last_activity = time.monotonic()
        self.pending_tools: set[str] = set()

    def _touch(self) -> None:
        self.last_activity = time.monotonic()

    # --- session -------------------------------------------------------------------------
    async def session_update(self, session_id: str, update: BaseModel, **kwargs: Any) -> None:
        self._touch()
        event = update_event(update)
        tool_id = event.get("tool_call_id")
        if event["type"] in ("tool_call", "tool_call_update") and isinstance(tool_id, str):
            self.tool_call_ids.add(tool_id)
            if event.get("status") in ("completed", "failed"):
                self.pending_tools.discard(tool_id)
            elif event.get("status") in ("pending", "in_progress"):
                self.pending_tools.add(tool_id)
        self.record(event)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self._touch()
        by_kind = {str(o.kind): o for o in options}
        by_id = {o.option_id: o for o in options}
        chosen = next(
            (
                by_id.get(k) or by_kind.get(k)
                for k in _PERMISSION_PREFERENCE
                if k in by_id or k in by_kind
            ),
            options[0] if options else None,
        )
        if chosen is None:
            raise RequestError.invalid_params({"options": "no option to select"})
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    # --- fs ------------------------------------------------------------------------------
    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self._touch()
        try:
            content = await sandbox_fs.read_text_file(
                self.sandbox,
                path,
                within=_within(kwargs),
                line=line,
                limit=limit,
                user=self.user,
            )
        except (sandbox_fs.PathRefused, sandbox_fs.SandboxFileError) as exc:
            raise RequestError.invalid_params({"path": str(exc)}) from None
        return ReadTextFileResponse(content=content)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self._touch()
        try:
            data = _content_bytes(content, kwargs)
            await sandbox_fs.write_bytes(
                self.sandbox, path, data, within=_within(kwargs), user=self.user
            )
        except (sandbox_fs.PathRefused, sandbox_fs.SandboxFileError) as exc:
            raise RequestError.invalid_params({"path": str(exc)}) from None
        return WriteTextFileResponse()

    # --- terminal ------------------------------------------------------------------------
    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        self._touch()
        terminal_id = await self.terminals.create(
            command,
            args or [],
            cwd=cwd,
            env={v.name: v.value for v in env or []},
            output_limit=output_byte_limit,
        )
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        self._touch()
        terminal = self._terminal(terminal_id)
        code = terminal.exit_code
        meta = None
        if kwargs.get(STREAMS_KEY):
            meta = {
                STREAMS_KEY: {
                    name: {"text": tail.text(), "truncated": tail.truncated}
                    for name, tail in terminal.streams.items()
                }
            }
        return TerminalOutputResponse(
            output=terminal.combined.text(),
            truncated=terminal.combined.truncated,
            exit_status=None if code is None else _exit_status(code, terminal.killed),
            field_meta=meta,
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self._terminal(terminal_id)
        self.pending_tools.add(terminal_id)  # a running command counts as progress
        try:
            code = await terminal.wait()
        finally:
            self.pending_tools.discard(terminal_id)
            self._touch()
        status = _exit_status(code, terminal.killed)
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        self._touch()
        await self._terminal(terminal_id).kill()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        self._touch()
        await self.terminals.release(terminal_id)
        return ReleaseTerminalResponse()

    def _terminal(self, terminal_id: str) -> Any:
        try:
            return self.terminals.get(terminal_id)
        except KeyError as exc:
            raise RequestError.invalid_params({"terminalId": str(exc)}) from None


def _content_bytes(content: str, meta: dict[str, Any]) -> bytes:
    """Plain ACP sends text; our bridge may send base64 of binary content (``ENCODING_KEY``)."""
    encoding = meta.get(ENCODING_KEY, "utf-8")
    if encoding == "utf-8":
        return content.encode("utf-8")
    if encoding != "base64":
        raise RequestError.invalid_params({ENCODING_KEY: "must be utf-8 or base64"})
    try:
        return base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError):
        raise RequestError.invalid_params({"content": "invalid base64"}) from None


def _within(meta: dict[str, Any]) -> list[str]:
    roots = meta.get(WITHIN_KEY)
    if roots is None:
        return []
    if not isinstance(roots, list) or not all(isinstance(r, str) and r for r in roots):
        raise RequestError.invalid_params({WITHIN_KEY: "must be a list of folders"})
    return roots


def _exit_status(code: int, killed: bool) -> TerminalExitStatus:
    if code < 0:
        return TerminalExitStatus(exit_code=None, signal=f"signal {-code}")
    if killed and code in (137, 143):
        return TerminalExitStatus(exit_code=code, signal="SIGKILL" if code == 137 else "SIGTERM")
    return TerminalExitStatus(exit_code=code, signal=None)
