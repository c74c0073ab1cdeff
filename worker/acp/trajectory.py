"""ACP ``session/update`` notifications as trajectory events (one JSON object per line).

The shape follows BenchFlow's ``acp_trajectory.jsonl``: a ``type`` plus the update's fields in
snake_case, so tool calls are counted the same way. The trial's recorder adds the timestamp.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_TYPES = {
    "tool_call": "tool_call",
    "tool_call_update": "tool_call_update",
    "agent_message_chunk": "agent_message",
    "agent_thought_chunk": "agent_thought",
    "user_message_chunk": "user_message",
    "plan": "plan",
    "usage_update": "usage_update",
}


def update_event(update: BaseModel) -> dict[str, Any]:
    """One trajectory event for one ``session/update`` payload."""
    data = update.model_dump(mode="json", exclude_none=True)
    kind = str(data.pop("session_update", "unknown"))
    event: dict[str, Any] = {"type": _TYPES.get(kind, kind)}
    content = data.pop("content", None)
    if kind.endswith("_chunk") and isinstance(content, dict):
        event["text"] = content.get("text", "")
        if content.get("type", "text") != "text":
            event["content"] = content
    elif content is not None:
        event["content"] = content
    event.update(data)
    return event


def lifecycle_event(kind: str, **fields: Any) -> dict[str, Any]:
    """Events the client itself adds (prompt sent, cancel sent, timeout) so a reader sees why a
    turn ended."""
    return {"type": kind, **fields}
