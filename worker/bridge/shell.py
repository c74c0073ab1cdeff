"""The ``skillsbench-shell/v1`` conversation of one trial: context on turn 1, then one action per
purple reply, until ``finish``, a reply without an action, ``max_turns`` or the deadline."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from acp import update_agent_message_text

from worker.bridge.a2a_peer import Conversation, ParticipantFailure, Reply, data_part, text_part
from worker.bridge.actions import SandboxActions
from worker.bridge.config import BridgeConfig, Outcome
from worker.bridge.logs import BridgeLog
from worker.bridge.participant_usage import UsageTally
from worker.bridge.protocol import (
    ActionError,
    FinishAction,
    Limits,
    ShellContext,
    find_action,
    find_usage,
    result_data,
)
from worker.bridge.retries import Retry
from worker.core.failures import FailureKind

_PARTICIPANT_ENDED = ("finished", "plain_reply")  # any other end cancels the purple task


class ShellSession:
    """The ``skillsbench-shell/v1`` loop for one trial."""

    def __init__(self, config: BridgeConfig, conn: Any, session_id: str) -> None:
        self.config = config
        self.conn = conn
        self.sid = session_id
        self.turn = 0
        self.log = BridgeLog(config.trial_dir, config.task_id, config.url, config.caps)
        self.deadline = time.monotonic() + config.deadline_sec
        self.actions = SandboxActions(config, conn, session_id, self.log, self.deadline)
        self.usage = UsageTally()  # what the participant reported about its model calls
        self.outcome = Outcome("finished")

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
        outcome = self.outcome
        context = self.context().to_data()
        self.log.event("user_message", 0, {"text": instruction})
        self.log.event("sandbox_context", 0, context)
        self.log.line(f"conversation with {self.config.url} task={self.config.task_id}")
        try:
            conversation = Conversation(
                self.config.url,
                self.deadline,
                max_reply_bytes=self.config.max_reply_bytes,
                on_retry=self._retried,
            )
            async with conversation as conv:
                for advertised, used in conv.card_urls.items():
                    self.log.event("a2a_card_url", 0, {"advertised": advertised, "used": used})
                    self.log.line(
                        f"the card advertises {advertised}, which does not serve the same card:"
                        f" using {used}"
                    )
                try:
                    await self._converse(
                        conv, [text_part(instruction), data_part(context)], outcome
                    )
                except (asyncio.CancelledError, ParticipantFailure):
                    await self._cancel_participant(conv)
                    raise
                if outcome.status not in _PARTICIPANT_ENDED:
                    await self._cancel_participant(conv)
                return outcome
        except ParticipantFailure as exc:
            self.log.event("a2a_error", self.turn, {"failure": exc.kind.value, "message": str(exc)})
            self.log.line(f"error {exc.kind.value}: {exc}")
            outcome.status = "participant_failure"
            outcome.failure = exc.kind
            outcome.message = str(exc)
            return outcome

    def _retried(self, retry: Retry) -> None:
        """A transient failure the conversation retries: logged, and counted in the outcome."""
        self.outcome.add_retry(retry.to_data())
        self.log.event("a2a_retry", self.turn, retry.to_data())
        self.log.line(
            f"retry: {retry.method} try {retry.attempt} failed ({retry.reason});"
            f" again in {retry.delay_sec:.1f} s"
        )

    async def _cancel_participant(self, conv: Conversation) -> None:
        """The bridge stops before the participant did: tell it (never blocks for long)."""
        said = await conv.cancel_open_task()
        if said is not None:
            self.log.event("a2a_cancel", self.turn, {"result": said})
            self.log.line(f"cancel sent: {said}")

    async def _converse(self, conv: Conversation, parts: list[Any], outcome: Outcome) -> None:
        """Turns until the conversation ends; ``outcome`` says how."""
        while True:
            self.turn += 1
            self.actions.turn = self.turn
            outcome.turns = self.turn
            message = conv.message(parts)
            self.log.event("a2a_request", self.turn, {"context_id": conv.context_id})
            reply = await conv.send(message)
            self._log_reply(reply)
            self._count_usage(reply)
            try:
                action = find_action(reply.data)
            except ActionError as exc:
                result: dict[str, Any] = {"error": f"invalid action: {exc}"}
            else:
                if action is None:
                    await self._say(" ".join(reply.texts))
                    outcome.status = "plain_reply"
                    return
                if isinstance(action, FinishAction):
                    await self._say(action.message or "")
                    await self.actions.materialize(action.files, outcome)
                    return
                result = await self.actions.perform(action)
            if self.turn >= self.config.max_turns:
                outcome.status = "max_turns"
                outcome.message = f"stopped after {self.turn} turns"
                return
            if time.monotonic() >= self.deadline:
                outcome.status = "deadline"
                outcome.message = "time ran out while the bridge was acting"
                return
            parts = [text_part(_summary(result)), data_part(result_data(self.turn, result))]

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

    def _count_usage(self, reply: Reply) -> None:
        """Add the reply's ``usage`` object to the trial's sum; a malformed one is a participant
        error (a malformed reply), named by its field."""
        try:
            usage = find_usage(reply.data)
        except ValueError as exc:
            raise ParticipantFailure(FailureKind.PARTICIPANT_ERROR, str(exc)) from exc
        self.usage.add(usage)
        if usage is not None:
            reported = ", ".join(f"{k}={v}" for k, v in usage.to_data().items() if v is not None)
            self.log.line(f"turn {self.turn}: usage reported by the participant: {reported}")

    async def _say(self, text: str) -> None:
        if text.strip():
            await self.conn.session_update(self.sid, update_agent_message_text(text))


def _summary(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"{result.get('action', 'action')} refused: {result['error']}"
    if result.get("action") == "exec":
        return f"exec finished: exit code {result['exit_code']}" + (
            " (timed out)" if result["timed_out"] else ""
        )
    return f"{result.get('action')} done: {result.get('path')}"
