"""One ACP session with one agent process: handshake, the task prompt, watchdogs, cancellation.

The agent may run anywhere (inside the sandbox or on the worker host); it is reached through the
process's stdio. ``session/cancel`` is only a notification, so after sending it the agent gets a
short grace to end its prompt before the caller kills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from acp import PROTOCOL_VERSION, Client, RequestError, connect_to_agent, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from worker.acp.client import SandboxClient
from worker.acp.trajectory import lifecycle_event
from worker.sandbox.base import SandboxProcess

SessionStatus = Literal[
    "completed",
    "timeout",
    "idle_timeout",
    "cancelled",
    "launch_failed",
    "crashed",
    "protocol_error",
]
HANDSHAKE_TIMEOUT_SEC = 60.0
CLIENT_INFO = Implementation(name="skillsbench-agentbeats", version="0.1.0")


@dataclass(frozen=True)
class SessionConfig:
    cwd: str
    prompt: str
    timeout_sec: float
    idle_timeout_sec: float | None = 600.0
    cancel_grace_sec: float = 5.0
    # Offer fs/* and terminal/* (served in the sandbox) to an agent running outside it.
    serve_sandbox_tools: bool = False
    # The run's model as the agent takes it over ACP (None: none is sent), see select_model.
    model_id: str | None = None


@dataclass
class SessionResult:
    status: SessionStatus
    stop_reason: str | None = None
    message: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    n_tool_calls: int = 0
    # How the model was sent and whether the agent took it (None: no model was sent).
    model_selection: dict[str, Any] | None = None
    # What the agent said it is in its initialize answer ({name, version}), when it said.
    agent_info: dict[str, Any] | None = None


def client_capabilities(serve_sandbox_tools: bool) -> ClientCapabilities:
    # All-default capabilities are omitted from the wire; an outside agent must see `true`s.
    if not serve_sandbox_tools:
        return ClientCapabilities()
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
    )


async def run_session(
    process: SandboxProcess, client: SandboxClient, config: SessionConfig
) -> SessionResult:
    """Drive the agent through one prompt; never raises for agent misbehaviour."""
    conn = connect_to_agent(cast(Client, client), process.stdin, process.stdout)
    try:
        try:
            handshake = HANDSHAKE_TIMEOUT_SEC  # the agent's time starts with its prompt
            initialized = await asyncio.wait_for(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=client_capabilities(config.serve_sandbox_tools),
                    client_info=CLIENT_INFO,
                ),
                handshake,
            )
            session = await asyncio.wait_for(
                conn.new_session(cwd=config.cwd, mcp_servers=[]), handshake
            )
        except Exception as exc:  # closed pipe, timeout, error answer, unreadable answer
            return SessionResult("launch_failed", message=f"ACP handshake failed: {_describe(exc)}")
        info = initialized.agent_info
        agent_info = None if info is None else {"name": info.name, "version": info.version}
        selection = None
        if config.model_id is not None:
            selection = await select_model(conn, session, config.model_id)
            client.record(lifecycle_event("set_model", **selection))
            if not selection["accepted"]:
                lost = selection["connection_lost"]
                return SessionResult(
                    "crashed" if lost else "protocol_error",
                    message=(
                        f"agent exited at {selection['method']}: {selection['error']}"
                        if lost
                        else _refusal_message(selection)
                    ),
                    model_selection=selection,
                    agent_info=agent_info,
                )
        client.last_activity = time.monotonic()
        deadline = client.last_activity + config.timeout_sec
        prompt = asyncio.create_task(
            conn.prompt(session_id=session.session_id, prompt=[text_block(config.prompt)])
        )
        try:
            tripped = await _watch(prompt, client, config, deadline)
        except asyncio.CancelledError:
            client.record(lifecycle_event("cancel_sent", reason="cancelled"))
            await asyncio.shield(_cancel(conn, session.session_id, prompt, config.cancel_grace_sec))
            raise
        if tripped is not None:
            client.record(lifecycle_event("cancel_sent", reason=tripped))
            await _cancel(conn, session.session_id, prompt, config.cancel_grace_sec)
            return SessionResult(
                tripped,
                message=_trip_message(tripped, config),
                n_tool_calls=len(client.tool_call_ids),
                model_selection=selection,
                agent_info=agent_info,
            )
        try:
            response = prompt.result()
        except (ConnectionError, OSError) as exc:
            return SessionResult(
                "crashed",
                message=f"agent exited mid-prompt: {_describe(exc)}",
                n_tool_calls=len(client.tool_call_ids),
                model_selection=selection,
                agent_info=agent_info,
            )
        except Exception as exc:  # an error answer, or one that does not validate
            return SessionResult(
                "protocol_error",
                message=f"session/prompt failed: {_describe(exc)}",
                n_tool_calls=len(client.tool_call_ids),
                model_selection=selection,
                agent_info=agent_info,
            )
        stop = str(response.stop_reason)
        usage = (
            response.usage.model_dump(mode="json", exclude_none=True) if response.usage else None
        )
        client.record(lifecycle_event("prompt_end", stop_reason=stop, usage=usage))
        return SessionResult(
            "cancelled" if stop == "cancelled" else "completed",
            stop_reason=stop,
            meta=dict(response.field_meta or {}),
            n_tool_calls=len(client.tool_call_ids),
            model_selection=selection,
            agent_info=agent_info,
        )
    finally:
        await client.terminals.close_all()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.close(), 5)


SET_MODEL_METHOD = "session/set_model"
SET_CONFIG_OPTION_METHOD = "session/set_config_option"
MODEL_CONFIG_ID = "model"


async def select_model(conn: Any, session: Any, model_id: str) -> dict[str, Any]:
    """Send the run's model as BenchFlow does: through the session's ``model`` config option
    when ``session/new`` advertised one, else ``session/set_model`` (``{sessionId, modelId}``;
    the SDK no longer models that method, so it goes out as a plain request). Returns what was
    sent and whether the agent accepted it; never raises for the agent's answer."""
    options = getattr(session, "config_options", None) or []
    by_option = any(getattr(o, "id", None) == MODEL_CONFIG_ID for o in options)
    method = SET_CONFIG_OPTION_METHOD if by_option else SET_MODEL_METHOD
    selection: dict[str, Any] = {"method": method, "model_id": model_id, "accepted": False}
    try:
        if by_option:
            await asyncio.wait_for(
                conn.set_config_option(
                    config_id=MODEL_CONFIG_ID, session_id=session.session_id, value=model_id
                ),
                HANDSHAKE_TIMEOUT_SEC,
            )
        else:
            # ClientSideConnection has no set_model; its JSON-RPC connection sends any method.
            await asyncio.wait_for(
                conn._conn.send_request(
                    SET_MODEL_METHOD, {"sessionId": session.session_id, "modelId": model_id}
                ),
                HANDSHAKE_TIMEOUT_SEC,
            )
    except Exception as exc:  # an error answer, a timeout, a closed pipe
        selection["error"] = (
            _describe(exc)
            if not isinstance(exc, TimeoutError)
            else (f"no answer within {HANDSHAKE_TIMEOUT_SEC:g} s")
        )
        selection["method_not_found"] = isinstance(exc, RequestError) and exc.code == -32601
        # The agent went away (a closed pipe) rather than answering: not a refusal.
        lost = isinstance(exc, ConnectionError | OSError) and not isinstance(exc, TimeoutError)
        selection["connection_lost"] = lost
        return selection
    selection["accepted"] = True
    return selection


def _refusal_message(selection: dict[str, Any]) -> str:
    text = (
        f"agent refused model {selection['model_id']!r} ({selection['method']}): "
        f"{selection.get('error') or 'no detail'}"
    )
    if selection.get("method_not_found"):
        text += (
            "; an agent that takes its model from its launch environment declares "
            "supports_acp_set_model = false in its manifest"
        )
    return text


async def _watch(
    prompt: asyncio.Task[Any], client: SandboxClient, config: SessionConfig, deadline: float
) -> SessionStatus | None:
    """Wait for the prompt; return why it must be cancelled, or None when it ended by itself."""
    idle = config.idle_timeout_sec
    poll = max(0.05, min(1.0, (idle or config.timeout_sec) / 4))
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout"
        done, _ = await asyncio.wait({prompt}, timeout=min(poll, remaining))
        if done:
            return None
        now = time.monotonic()
        if idle and not client.pending_tools and now - client.last_activity > idle:
            return "idle_timeout"


async def _cancel(conn: Any, session_id: str, prompt: asyncio.Task[Any], grace: float) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(conn.cancel(session_id=session_id), 1)
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(asyncio.shield(prompt), grace)
    if not prompt.done():
        prompt.cancel()
        with contextlib.suppress(BaseException):
            await prompt


def _trip_message(status: SessionStatus, config: SessionConfig) -> str:
    if status == "timeout":
        return f"agent did not finish within {config.timeout_sec:g} s"
    return f"agent reported nothing for {config.idle_timeout_sec:g} s"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        return f"{exc} {exc.data}" if getattr(exc, "data", None) else str(exc)
    return str(exc) or type(exc).__name__
