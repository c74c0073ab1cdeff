"""The bridge as an ACP agent: one ``session/prompt`` = one A2A conversation with the purple agent.

Every purple action is performed through the worker's ACP client (``terminal/*``, ``fs/*``) and
announced as a ``tool_call`` first, so the worker records each command exactly like a local
agent's. How the conversation ended travels back in the prompt result's ``_meta``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
)
from acp.schema import AgentCapabilities, Implementation

from worker.acp.extensions import OUTCOME_KEY
from worker.bridge.config import BridgeConfig, Outcome
from worker.bridge.shell import ShellSession


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
        outcome.usage = shell.usage.to_data()
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
