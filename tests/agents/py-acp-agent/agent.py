"""A model-free ACP agent for tests: runs every instruction line that starts with ``$ `` as a
shell command in the session's cwd (after asking permission) and reports each one as a tool
call.

Modes (env PY_ACP_AGENT_MODE): ``run`` (default); ``slow`` waits for session/cancel; ``chatty``
writes 2 MiB to stderr first; ``crash`` exits mid-prompt; ``hog`` fills memory mid-prompt
(until the sandbox's memory limit kills it); ``refuse`` answers the prompt with an error; ``probe`` calls an extension method the
client does not implement and reports the error code; ``ignore-cancel`` never stops.

The model (env PY_ACP_AGENT_MODEL_MODE): ``set_model`` (default) accepts ``session/set_model``;
``refuse`` answers it with an error; ``absent`` does not implement it (method not found);
``option`` advertises a ``model`` session config option instead. The model it was given is its
first message when it was given one (``model: <id> via <method>``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.agent import connection as agent_connection
from acp.router import Route
from acp.schema import (
    AgentCapabilities,
    Implementation,
    PermissionOption,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SetSessionConfigOptionResponse,
)

MODE = os.environ.get("PY_ACP_AGENT_MODE", "run")
MODEL_MODE = os.environ.get("PY_ACP_AGENT_MODEL_MODE", "set_model")


class ScriptedAgent:
    def on_connect(self, conn: Any) -> None:
        self.conn = conn
        self.sessions: dict[str, str] = {}
        self.cancelled: dict[str, asyncio.Event] = {}
        self.model: str | None = None

    async def initialize(self, protocol_version: int, **kw: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="py-acp-agent", version="0.1"),
        )

    async def new_session(self, cwd: str, **kw: Any) -> NewSessionResponse:
        sid = uuid.uuid4().hex
        self.sessions[sid] = cwd
        self.cancelled[sid] = asyncio.Event()
        if MODEL_MODE == "option":
            return NewSessionResponse(session_id=sid, config_options=[self._model_option()])
        return NewSessionResponse(session_id=sid)

    def _model_option(self) -> SessionConfigOptionSelect:
        current = self.model or "default-model"
        return SessionConfigOptionSelect(
            id="model",
            name="Model",
            type="select",
            current_value=current,
            options=[SessionConfigSelectOption(value=current, name=current)],
        )

    async def set_session_model(self, params: dict[str, Any]) -> dict[str, Any]:
        """``session/set_model`` ``{sessionId, modelId}`` (routed by hand: the SDK lacks it)."""
        if MODEL_MODE == "refuse":
            raise RequestError.invalid_params({"modelId": "unknown model"})
        self.model = f"{params['modelId']} via session/set_model"
        return {}

    async def set_config_option(
        self, config_id: str, session_id: str, value: Any, **kw: Any
    ) -> SetSessionConfigOptionResponse:
        if config_id != "model":
            raise RequestError.invalid_params({"configId": config_id})
        self.model = f"{value} via session/set_config_option"
        return SetSessionConfigOptionResponse(config_options=[self._model_option()])

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> PromptResponse:
        text = "\n".join(getattr(block, "text", "") for block in prompt)
        if MODE == "chatty":
            sys.stderr.write("x" * (2 << 20))
            sys.stderr.flush()
        if MODE == "crash":
            os._exit(3)
        if MODE == "hog":
            hoard = []
            while True:  # 64 MiB at a time, every page touched
                hoard.append(bytearray(64 << 20))
                for i in range(0, 64 << 20, 4096):
                    hoard[-1][i] = 1
        if MODE == "refuse":
            raise RequestError.internal_error({"detail": "no model configured"})
        if MODE == "probe":
            try:
                await self.conn.ext_method("skillsbench.probe", {})
                answer = "probe: answered"
            except RequestError as exc:
                answer = f"probe: error {exc.code}"
            await self.conn.session_update(session_id, update_agent_message_text(answer))
            return PromptResponse(stop_reason="end_turn")
        if MODE in ("slow", "ignore-cancel"):
            await self.conn.session_update(session_id, update_agent_message_text("waiting"))
            waiter = asyncio.Event() if MODE == "ignore-cancel" else self.cancelled[session_id]
            await waiter.wait()
            return PromptResponse(stop_reason="cancelled")
        if self.model is not None:
            await self.conn.session_update(
                session_id, update_agent_message_text(f"model: {self.model}")
            )
        cwd = self.sessions[session_id]
        commands = [line[2:] for line in text.splitlines() if line.startswith("$ ")]
        await self.conn.session_update(
            session_id, update_agent_thought_text(f"{len(commands)} commands to run")
        )
        for n, command in enumerate(commands, 1):
            call_id = f"call-{n}"
            await self.conn.session_update(
                session_id,
                start_tool_call(
                    call_id,
                    command,
                    kind="execute",
                    status="in_progress",
                    raw_input={"command": command},
                ),
            )
            permission = await self.conn.request_permission(
                session_id=session_id,
                tool_call=update_tool_call(call_id),
                options=[
                    PermissionOption(option_id="no", name="Deny", kind="reject_once"),
                    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                ],
            )
            outcome = permission.outcome
            if getattr(outcome, "option_id", None) != "yes":
                continue  # not allowed: skip the command
            done = await asyncio.to_thread(
                subprocess.run, ["sh", "-c", command], cwd=cwd, capture_output=True, text=True
            )
            await self.conn.session_update(
                session_id,
                update_tool_call(
                    call_id,
                    status="completed" if done.returncode == 0 else "failed",
                    content=[tool_content(text_block(done.stdout + done.stderr))],
                    raw_output={"exit_code": done.returncode},
                ),
            )
        await self.conn.session_update(
            session_id, update_agent_message_text(f"ran {len(commands)} commands")
        )
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kw: Any) -> None:
        self.cancelled[session_id].set()


def _router_with_set_model(agent: Any, **kw: Any) -> Any:
    router = _build_router(agent, **kw)
    if MODEL_MODE in ("set_model", "refuse"):
        router.add_route(
            Route(method="session/set_model", func=agent.set_session_model, kind="request")
        )
    return router


_build_router = agent_connection.build_agent_router
agent_connection.build_agent_router = _router_with_set_model  # type: ignore[assignment]

if __name__ == "__main__":
    asyncio.run(run_agent(ScriptedAgent()))  # type: ignore[arg-type]
