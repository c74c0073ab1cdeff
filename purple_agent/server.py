"""A2A plumbing shared by the purple agents: card, turn executor, Starlette app, uvicorn run.

Each incoming message is one *turn*: the executor opens a Task in the message's context, asks the
agent for a :class:`Reply`, and closes the Task ``completed`` with one artifact (a TextPart and,
when the agent acts, the ``skillsbench-shell/v1`` action as a DataPart) or ``failed`` with a text
status message. The server speaks A2A 1.0 and, for the AgentBeats ecosystem, 0.3.
"""

from __future__ import annotations

import abc
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import click
import uvicorn
from a2a.helpers import (
    get_data_parts,
    get_text_parts,
    new_data_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

from serving.listen import listening_socket
from serving.urls import advertised_url
from worker.bridge.protocol import Action

log = logging.getLogger("purple_agent")

DEFAULT_PORT = 9010


@dataclass(frozen=True)
class Turn:
    """One incoming user message, reduced to what an agent needs."""

    context_id: str
    task_id: str
    text: str
    data: list[Any]


@dataclass(frozen=True)
class Reply:
    """What an agent answers to a turn. ``failed`` replies end the A2A task ``failed``."""

    text: str
    action: Action | None = None
    failed: bool = False
    extra_data: list[dict[str, Any]] = field(default_factory=list)


class TurnAgent(abc.ABC):
    """A purple agent: one reply per turn; conversation state is the agent's own business."""

    @abc.abstractmethod
    async def respond(self, turn: Turn) -> Reply: ...

    async def cancel(self, context_id: str) -> None:
        """Forget or stop the work of one conversation (A2A ``CancelTask``)."""
        return None


class TurnExecutor(AgentExecutor):
    """Adapts a :class:`TurnAgent` to the a2a-sdk executor contract (Task first, then updates)."""

    def __init__(self, agent: TurnAgent, redact: Callable[[Any], Any] | None = None) -> None:
        self._agent = agent
        self._redact = redact or (lambda value: value)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.message is None:
            raise ValueError("request without a message")
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        parts = list(context.message.parts)
        turn = Turn(
            context_id=task.context_id,
            task_id=task.id,
            text="\n".join(get_text_parts(parts)),
            data=get_data_parts(parts),
        )
        try:
            reply = await self._agent.respond(turn)
        except Exception as exc:  # an agent bug must still end the task with a clear state
            log.exception("agent failed on context %s", task.context_id)
            reply = Reply(text=f"participant error: {type(exc).__name__}", failed=True)
        text = self._redact(reply.text)
        if reply.failed:
            await updater.failed(
                new_text_message(text, context_id=task.context_id, task_id=task.id)
            )
            return
        out = [new_text_part(text)]
        if reply.action is not None:
            out.append(new_data_part(self._redact(reply.action.to_data())))
        out.extend(new_data_part(self._redact(d)) for d in reply.extra_data)
        await updater.add_artifact(out, name="reply", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.context_id:
            await self._agent.cancel(context.context_id)
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def public_url(host: str, port: int, card_url: str | None) -> str:
    """The URL peers should use: ``--card-url`` if given (refused with a ValueError when it is
    no reachable http(s) URL), else this host and port; bound to a wildcard address, this
    machine's address on its network (``serving.urls``), never ``127.0.0.1``, which a peer
    in another container would reach itself by."""
    return advertised_url(host, port, card_url)


def build_card(
    *, name: str, description: str, url: str, skills: Sequence[AgentSkill], version: str = "0.1.0"
) -> AgentCard:
    """A card with JSON-RPC interfaces for A2A 1.0 and 0.3 (0.3 clients need the latter)."""
    return AgentCard(
        name=name,
        description=description,
        version=version,
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url),
            AgentInterface(protocol_binding="JSONRPC", protocol_version="0.3", url=url),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=list(skills),
    )


def build_app(
    card: AgentCard, agent: TurnAgent, redact: Callable[[Any], Any] | None = None
) -> Starlette:
    """The A2A app; ``redact`` is applied to every outgoing reply text and data object."""
    handler = DefaultRequestHandler(
        agent_executor=TurnExecutor(agent, redact),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    return Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        ]
    )


def serve(app: Starlette, host: str, port: int) -> None:
    """Run until stopped; uvicorn logs through the root handler (see ``redact.install_logging``).
    The port is bound first: one taken is one line (``OSError``), not a traceback."""
    sock = listening_socket(host, port)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level="info")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def server_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--host --port --card-url``, the options every AgentBeats component takes."""
    func = click.option(
        "--card-url",
        default=None,
        help="URL advertised in the agent card (default: http://HOST:PORT/; bound to 0.0.0.0, "
        "this machine's address on its network).",
    )(func)
    func = click.option(
        "--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True
    )(func)
    func = click.option("--host", default="127.0.0.1", show_default=True)(func)
    return func


def run_standalone(command: click.Command) -> None:
    """``python -m`` entry: bad input or configuration is one line on stderr, never a traceback."""
    try:
        command.main(standalone_mode=False)
    except click.ClickException as exc:  # the product CLI's style: one line, exit code 2
        text = " ".join(exc.format_message().split())
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            text += f" (see '{exc.ctx.command_path} --help')"
        click.echo(f"error: {text}", err=True)
        sys.exit(2)
    except (ValueError, OSError) as exc:
        click.echo(f"error: {' '.join(str(exc).split())}", err=True)
        sys.exit(2)
    except (KeyboardInterrupt, click.exceptions.Abort):
        sys.exit(130)
