"""Human-readable progress text that can never be mistaken for a result.

The AgentBeats gateway treats every TextPart whose text parses as JSON as a result, so every
status text goes through :func:`plain_text`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def plain_text(text: str) -> str:
    """``text``, changed if needed so that ``json.loads`` fails on it."""
    text = text.strip() or "Working."
    try:
        json.loads(text)
    except ValueError:
        return text
    return f"Note: {text}"


def row_summary(row: Mapping[str, Any], finished: int, total: int) -> str:
    task_id = row.get("task_id", "?")
    if not row.get("score_eligible", False):
        outcome = f"not scored ({row.get('infra_failure_type') or 'unknown failure'})"
    elif row.get("passed"):
        outcome = f"passed (reward {float(row.get('reward') or 0):.2f})"
    else:
        outcome = f"failed (reward {float(row.get('reward') or 0):.2f})"
    return plain_text(f"Trial {finished} of {total} finished: task {task_id} {outcome}.")


def final_summary(rows: Sequence[Mapping[str, Any]], end_state: str) -> str:
    scored = [r for r in rows if r.get("score_eligible")]
    passed = sum(1 for r in scored if r.get("passed"))
    unscored = len(rows) - len(scored)
    text = (
        f"Assessment finished (worker run {end_state}): {passed} of {len(scored)} scored "
        f"trials passed, {unscored} not scored."
    )
    return plain_text(text)
