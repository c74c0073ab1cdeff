"""Human-readable progress text that can never be mistaken for a result.

The AgentBeats gateway treats every TextPart whose text parses as JSON as a result, so every
status text goes through :func:`plain_text`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from green_agent.adapters.base import WorkerHealth
from worker.api import TrialPhase


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


def heartbeat(
    health: WorkerHealth, *, started: bool, finished: int, total: int, elapsed: float
) -> str:
    """The periodic status: the worker's trouble first (it is why nothing happens), else what
    the assessment waits for."""
    if health.problem is not None and health.since is not None:
        quiet = time.monotonic() - health.since
        text = (
            f"{health.problem[0].upper()}{health.problem[1:]} for {quiet:.0f} s; retrying for up "
            f"to {health.retry_sec or 0:g} s before the assessment fails."
        )
        if started:
            text += f" {finished} of {total} trial(s) finished after {elapsed:.0f} s."
        return plain_text(text)
    if not started:
        return plain_text(f"Waiting for the worker to accept the run ({elapsed:.0f} s).")
    if health.phases:  # what each trial does (its count alone could be older than them)
        return plain_text(
            f"Still running: {finished} of {total} trial(s) finished after {elapsed:.0f} s; "
            f"now {doing(health.phases)}."
        )
    running = "" if health.running is None else f", {health.running} running"  # an older worker
    return plain_text(
        f"Still running: {finished} of {total} trial(s) finished{running} after {elapsed:.0f} s "
        "(a running trial is the participant at work in its sandbox, then the verifier)."
    )


PHASES_SHOWN = 3  # trials named in one heartbeat (then "and N more")


def doing(phases: Mapping[str, TrialPhase], now: datetime | None = None) -> str:
    """What the trials do, longest in their phase first: ``t#0 verifying for 12 s, ...``."""
    now = now or datetime.now(UTC)
    lasted = sorted(
        ((key, told.phase.replace("_", " "), _seconds_since(told.since, now))
         for key, told in phases.items()),
        key=lambda item: -item[2],
    )  # fmt: skip
    named = [f"{key} {phase} for {secs:.0f} s" for key, phase, secs in lasted[:PHASES_SHOWN]]
    more = len(lasted) - PHASES_SHOWN
    return ", ".join(named) + (f" and {more} more" if more > 0 else "")


def _seconds_since(since: str, now: datetime) -> float:
    """Seconds from the worker's ``since`` to ``now`` (0 when unreadable or ahead of our clock)."""
    try:
        then = datetime.fromisoformat(since.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds())
