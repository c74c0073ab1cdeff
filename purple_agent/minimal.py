"""The ``minimal`` harness: the reference purple agent — a model, one ``shell`` tool, a budget.

How it plays ``skillsbench-shell/v1``:

* Turn 1 brings the instruction and the sandbox context. The agent starts a chat with the model.
* Whenever the model calls ``shell``, the agent replies with an ``exec`` action; the bridge runs
  the command in the task sandbox and sends the ``action_result`` back in the same A2A context,
  which becomes the tool message the model sees next.
* When the model answers without a tool call, or the budget (turns, time, tokens) is spent, the
  agent replies ``finish``.
* Every reply carries a ``usage`` DataPart: the model calls since the previous reply, with
  litellm's token counts and cost (``None`` where litellm cannot price the model).

State lives in memory, one :class:`Conversation` per A2A context. litellm routes the model
(``provider/model``; ``SKILLSBENCH_AGENT_BASE_URL`` becomes ``api_base``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from purple_agent.config import AgentConfig
from purple_agent.server import Reply, Turn, TurnAgent
from purple_agent.usage_report import UsageSinceReply
from worker.bridge.protocol import (
    ActionResult,
    ExecAction,
    FinishAction,
    ShellContext,
    find_action_result,
    find_context,
)

log = logging.getLogger("purple_agent.minimal")

MAX_TOOL_OUTPUT_CHARS = 16_000  # per stream, what the model sees of a command's output
DEADLINE_MARGIN_SEC = 5.0  # finish this long before the deadline so the finish itself arrives

SHELL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "shell",
        "description": "Run a bash command in the task's working directory and return its output.",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command to run."},
                "timeout_sec": {"type": "number", "description": "Seconds before it is killed."},
            },
            "required": ["command"],
        },
    },
}

SYSTEM_PROMPT = """You solve a task inside a Linux sandbox. Your working directory is {workspace}.
{skills}Use the `shell` tool to inspect files, run programs and write your results. Work step by
step and check your work. When the task is done, reply with a short summary and no tool call."""


@dataclass
class Conversation:
    """One trial: the chat so far, tool calls waiting to be run, and what the budget allows."""

    messages: list[dict[str, Any]]
    deadline: float
    max_turns: int
    pending: list[dict[str, Any]] = field(default_factory=list)  # tool calls not yet answered
    waiting_for: str | None = None  # id of the tool call whose exec is out
    turns: int = 0
    tokens: int = 0
    usage: UsageSinceReply = field(default_factory=UsageSinceReply)  # since the last reply


class MinimalAgent(TurnAgent):
    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._conversations: dict[str, Conversation] = {}
        self._litellm: Any = None
        self._import_lock = threading.Lock()

    async def respond(self, turn: Turn) -> Reply:
        context = find_context(turn.data)
        conv = self._start(turn, context) if context else self._conversations.get(turn.context_id)
        if conv is None:
            return Reply(
                text="I take tasks in the skillsbench-shell/v1 protocol: send the task context first.",
                failed=True,
            )
        if context is None:
            self._record_result(conv, find_action_result(turn.data))
        reply = await self._next(conv)
        if not reply.failed:
            reply = replace(reply, extra_data=[*reply.extra_data, conv.usage.take()])
        if isinstance(reply.action, FinishAction) or reply.failed:
            self._conversations.pop(turn.context_id, None)
        return reply

    async def cancel(self, context_id: str) -> None:
        self._conversations.pop(context_id, None)

    def _start(self, turn: Turn, context: ShellContext) -> Conversation:
        skills = (
            f"Skills that may help are in {context.skills_dir}.\n" if context.skills_dir else ""
        )
        budget = self._config.timeout_sec
        if context.limits.deadline_sec is not None:
            budget = min(budget, context.limits.deadline_sec)
        max_turns = self._config.max_turns
        if context.limits.max_turns is not None:  # keep one turn for the finish
            max_turns = min(max_turns, context.limits.max_turns - 1)
        conv = Conversation(
            messages=[
                {
                    "role": "system",
                    "content": SYSTEM_PROMPT.format(workspace=context.workspace, skills=skills),
                },
                {"role": "user", "content": turn.text or f"Solve task {context.task_id}."},
            ],
            deadline=time.monotonic() + budget - DEADLINE_MARGIN_SEC,
            max_turns=max_turns,
        )
        self._conversations[turn.context_id] = conv
        log.info("context %s: task %s started", turn.context_id, context.task_id)
        return conv

    def _record_result(self, conv: Conversation, result: ActionResult | None) -> None:
        if conv.waiting_for is None:
            return
        conv.messages.append(
            {"role": "tool", "tool_call_id": conv.waiting_for, "content": _tool_text(result)}
        )
        conv.waiting_for = None

    async def _next(self, conv: Conversation) -> Reply:
        """The next action: a queued tool call, else a new model step, else finish."""
        if not conv.pending:
            if (why := self._budget_spent(conv)) is not None:
                return _finish(f"Stopped: {why}.")
            try:
                message = await self._complete(conv)
            except Exception as exc:
                log.warning("model call failed: %s", exc)
                return Reply(text=f"model call failed: {_provider_error(exc)}", failed=True)
            conv.messages.append(message)
            conv.pending = list(message.get("tool_calls") or [])
            if not conv.pending:
                return _finish(message.get("content") or "Done.")
        if (why := self._budget_spent(conv)) is not None:
            return _finish(f"Stopped: {why}.")
        call = conv.pending.pop(0)
        conv.waiting_for = call["id"]
        conv.turns += 1
        try:
            if call["function"].get("name") != "shell":
                raise ValueError("unknown tool")
            args = json.loads(call["function"].get("arguments") or "{}")
            command = str(args["command"])
            timeout = float(args.get("timeout_sec") or 60)
        except (ValueError, KeyError, TypeError):
            # answer the bad call without running anything, then ask the model again
            conv.messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": 'error: call the `shell` tool with JSON like {"command": "ls"}',
                }
            )
            conv.waiting_for = None
            return await self._next(conv)
        timeout = max(1.0, min(timeout, conv.deadline - time.monotonic()))
        log.info("exec (turn %d): %s", conv.turns, command)
        return Reply(text=f"$ {command}", action=ExecAction(command=command, timeout_sec=timeout))

    def _budget_spent(self, conv: Conversation) -> str | None:
        if conv.turns >= conv.max_turns:
            return f"turn budget of {conv.max_turns} commands spent"
        if time.monotonic() >= conv.deadline:
            return "time budget spent"
        if conv.tokens >= self._config.max_tokens:
            return f"token budget of {self._config.max_tokens} spent"
        return None

    async def _complete(self, conv: Conversation) -> dict[str, Any]:
        litellm = self._litellm or await asyncio.to_thread(self._import_litellm)
        response = await litellm.acompletion(
            model=self._config.litellm_model,
            messages=conv.messages,
            tools=[SHELL_TOOL],
            api_base=self._config.base_url,
            api_key=self._config.api_key.get_secret_value() if self._config.api_key else None,
            timeout=max(1.0, conv.deadline - time.monotonic()),
        )
        usage = getattr(response, "usage", None)
        conv.tokens += int(getattr(usage, "total_tokens", 0) or 0)
        n_in = _count(getattr(usage, "prompt_tokens", None))
        n_out = _count(getattr(usage, "completion_tokens", None))
        if not n_in and not n_out:  # litellm says 0 and 0 when the provider sent no usage
            n_in = n_out = None
        conv.usage.add(
            getattr(response, "model", None) or self._config.litellm_model,
            n_in,
            n_out,
            _cost(litellm, response) if n_in is not None else None,
        )
        message = response.choices[0].message
        out: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": tc.function.name, "arguments": tc.function.arguments},
                }
                for tc in message.tool_calls
            ]
        return out

    def load_model_library(self) -> float:
        """Import litellm now (seconds it took): at start-up, not in a trial's first turn."""
        started = time.monotonic()
        self._import_litellm()
        return time.monotonic() - started

    def load_model_library_in_background(self) -> threading.Thread:
        """Start the import beside the server, so the card is served at once; a turn that comes
        before it is done waits for it (the import lock) instead of importing a second time."""

        def load() -> None:
            log.info("model library loaded in %.1f s", self.load_model_library())

        thread = threading.Thread(target=load, name="load-litellm", daemon=True)
        thread.start()
        return thread

    def _import_litellm(self) -> Any:
        """Import litellm once: it is slow to import and must not fetch its cost map."""
        with self._import_lock:
            return self._import_litellm_locked()

    def _import_litellm_locked(self) -> Any:
        if self._litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
                logger = logging.getLogger(name)
                logger.handlers.clear()  # let records reach the redacting root handler
                logger.propagate = True
            self._litellm = litellm
        return self._litellm


MAX_ERROR_CHARS = 300


def _count(value: Any) -> int | None:
    """A token count the provider gave; ``None`` when it gave none (unknown, never 0)."""
    return int(value) if isinstance(value, int | float) and value >= 0 else None


def _cost(litellm: Any, response: Any) -> float | None:
    """litellm's price of one call; ``None`` for a model it cannot price."""
    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:  # litellm raises for models missing from its cost map
        return None
    return float(cost) if isinstance(cost, int | float) and cost >= 0 else None


def _provider_error(exc: BaseException) -> str:
    """The provider's own words (e.g. ``APIConnectionError: Connection error.``), one line,
    clipped; replies are redacted on the way out, so a key quoted here never leaves."""
    name = type(exc).__name__
    text = " ".join(str(exc).split()).removeprefix("litellm.")
    while text.startswith(f"{name}: "):  # litellm repeats the class name
        text = text[len(name) + 2 :]
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 1] + "…"
    return f"{name}: {text}" if text else name


def _finish(message: str) -> Reply:
    return Reply(text=message, action=FinishAction(message=message))


def _tool_text(result: ActionResult | None) -> str:
    if result is None:
        return "error: no action_result came back"
    if result.error:
        return f"error: {result.error}"
    parts = [f"exit code: {result.exit_code}"]
    if result.stdout:
        parts.append("stdout:\n" + _clip(result.stdout))
    if result.stderr:
        parts.append("stderr:\n" + _clip(result.stderr))
    if result.truncated:
        parts.append("(output truncated)")
    return "\n".join(parts)


def _clip(text: str) -> str:
    if len(text) <= MAX_TOOL_OUTPUT_CHARS:
        return text
    half = MAX_TOOL_OUTPUT_CHARS // 2
    return f"{text[:half]}\n… [{len(text) - MAX_TOOL_OUTPUT_CHARS} chars cut] …\n{text[-half:]}"
