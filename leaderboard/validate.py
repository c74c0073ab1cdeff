"""The results-file check the leaderboard repository's CI runs on ``results/*.json``.

Only the published shape passes: ``{status, participants: {agent: UUID}, results: [shard
envelope with a non-empty rows list, …]}``. Each violation carries its JSON path so every
problem is reported, not only the first. ``contract=True`` adds our own full row contract
(approved keys, invariants, redaction) on top of what the CI requires.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from leaderboard.findings import child, json_path
from leaderboard.rows import AGENTBEATS_UUID_PATTERN, PublicRow, is_builtin_transport

FILE_STATUSES = ("completed", "partial", "failed")
TOP_LEVEL_KEYS = ("status", "participants", "results")
_NULLABLE_STRINGS = ("infra_failure_type", "category", "difficulty")


@dataclass(frozen=True)
class Violation:
    path: str  # JSON path (findings.json_path), e.g. $.results[0].results[3].reward
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def validate_results_file(path: Path, *, contract: bool = False) -> list[Violation]:
    try:
        data = json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        return [Violation("$", f"not JSON ({exc.msg} at line {exc.lineno})")]
    except RecursionError:
        return [Violation("$", "JSON nested too deeply to read")]
    except OSError as exc:
        return [Violation("$", f"cannot read ({exc.strerror})")]
    return validate_results(data, contract=contract)


def validate_results(data: Any, *, contract: bool = False) -> list[Violation]:
    out: list[Violation] = []
    if not isinstance(data, Mapping):
        return [Violation("$", "must be an object")]
    if data.get("status") not in FILE_STATUSES:
        out.append(Violation(json_path("status"), f"must be one of {', '.join(FILE_STATUSES)}"))
    participants = data.get("participants")
    if not isinstance(participants, Mapping):
        out.append(Violation(json_path("participants"), "must be an object with the agent's UUID"))
    else:
        agent = participants.get("agent")
        if not isinstance(agent, str) or not AGENTBEATS_UUID_PATTERN.match(agent.strip()):
            out.append(Violation(json_path("participants", "agent"), "must be an AgentBeats UUID"))
    if contract:
        out += [
            Violation(json_path(key), "is not an approved top-level key")
            for key in data
            if key not in TOP_LEVEL_KEYS
        ]
    shards = data.get("results")
    if not isinstance(shards, list) or not shards:
        out.append(Violation(json_path("results"), "must be a non-empty list of shard results"))
        return out
    for i, shard in enumerate(shards):
        where = json_path("results", i)
        if not isinstance(shard, Mapping):
            out.append(Violation(where, "must be an object"))
            continue
        if "task_id" in shard:
            out.append(
                Violation(
                    where,
                    "uses the legacy direct-row shape; wrap rows under " + child(where, "results"),
                )
            )
            continue
        rows = shard.get("results")
        if not isinstance(rows, list) or not rows:
            out.append(Violation(child(where, "results"), "must be a non-empty list of task rows"))
            continue
        for j, row in enumerate(rows):
            out += _row_violations(child(where, "results", j), row, contract)
    return out


def _row_violations(where: str, row: Any, contract: bool) -> list[Violation]:
    if not isinstance(row, Mapping):
        return [Violation(where, "must be an object")]
    out: list[Violation] = []
    task_id = row.get("task_id")
    if not isinstance(task_id, str) or not task_id.strip():
        out.append(Violation(child(where, "task_id"), "must be a non-empty string"))
    for key in ("score_eligible", "passed"):
        if not isinstance(row.get(key), bool):
            out.append(Violation(child(where, key), "must be a boolean"))
    if not _is_number(row.get("reward")):
        out.append(Violation(child(where, "reward"), "must be a number"))
    if "time_used" not in row:
        out.append(Violation(child(where, "time_used"), "is missing (a number or null)"))
    elif row["time_used"] is not None and not _is_number(row["time_used"]):
        out.append(Violation(child(where, "time_used"), "must be a number or null"))
    for key in _NULLABLE_STRINGS:
        if key not in row:
            out.append(Violation(child(where, key), "is missing (a string or null)"))
        elif row[key] is not None and not isinstance(row[key], str):
            out.append(Violation(child(where, key), "must be a string or null"))
    transport = row.get("agent_transport")
    if contract and isinstance(transport, str) and is_builtin_transport(transport):
        out.append(
            Violation(
                child(where, "agent_transport"),
                f"{transport!r} is one of the harness's built-in agents (oracle, nop, script:), "
                "a reference run, not a participant: its rows never go on a leaderboard",
            )
        )
        return out
    if contract and not out:
        try:
            PublicRow.model_validate(row)
        except ValidationError as exc:
            for error in exc.errors():
                loc = [part if isinstance(part, int) else str(part) for part in error["loc"]]
                out.append(Violation(child(where, *loc), error["msg"]))
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
