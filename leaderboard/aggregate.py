"""Shard results files → one submittable results file, as the leaderboard repository's own
aggregation step does (research/agentbeats.md §5.2–5.4).

Inputs may be any mix of the shapes our tools and the gateway write: a gateway shard export
(``{status, results: [envelope]}``), a bare envelope (``assess --output``, ``run --output``) or an
already published file. The output is the published shape,
``{status, participants: {agent: UUID[, green: UUID]}, results: [envelope per shard]}``, and it is
checked with the leaderboard CI's validator (plus our row contract) before it is written.

The rules a published file must keep, refused here with a message naming the files:

* every row belongs to one agent, named by an AgentBeats UUID (a URL such as Amber's shared proxy
  address ``http://127.0.0.1:8080/agent`` names no agent);
* one task set (name and digest);
* no shard twice: a trial id, or a task id in two different shards (shard k of n holds the tasks at
  positions ``i % n == k``, so two shards never share a task);
* no missing shard when the expected count is known; with ``allow_partial`` the file is written
  with status ``partial`` instead, which the leaderboard ignores, as the published pipeline does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from leaderboard.results_files import parse_results_file
from leaderboard.rows import AGENTBEATS_UUID_PATTERN
from leaderboard.validate import validate_results
from serving.output import prepare_output_file

# Where a scenario names the agent under test (the published aggregation's order).
SCENARIO_AGENT_KEYS = ("baseline_agent", "agent", "agent_under_test")


class AggregateError(ValueError):
    """An input that cannot become part of a submittable file; the message says why and how."""


@dataclass(frozen=True)
class Shard:
    """One shard's envelope and where it came from."""

    source: str  # "FILE" or "FILE results[i]"
    status: str
    agent: str | None  # participants.agent as the envelope gives it (UUID, URL or None)
    rows: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Aggregate:
    document: dict[str, Any]
    shards: int
    rows: int
    notes: tuple[str, ...] = field(default=())

    @property
    def status(self) -> str:
        return str(self.document["status"])


def is_agentbeats_id(value: object) -> bool:
    return isinstance(value, str) and AGENTBEATS_UUID_PATTERN.match(value.strip()) is not None


def read_shards(path: Path) -> list[Shard]:
    """The shard envelopes of one results file of any shape."""
    try:
        data, shape = parse_results_file(path)
    except ValueError as exc:
        raise AggregateError(str(exc)) from None
    status = data.get("status")
    file_status = status if isinstance(status, str) else "completed"
    if shape == "envelope":
        return [Shard(str(path), file_status, _agent_of(data), tuple(data["results"]))]
    envelopes = data["results"]
    if not envelopes:  # a failed gateway task exports no results: a failed shard
        return [Shard(str(path), "failed", None, ())]
    shards = []
    for index, envelope in enumerate(envelopes):
        own = envelope.get("status")
        # A shard counts as completed only when both the export and its envelope say so.
        shard_status = own if isinstance(own, str) and file_status == "completed" else file_status
        source = str(path) if len(envelopes) == 1 else f"{path} results[{index}]"
        shards.append(
            Shard(source, shard_status, _agent_of(envelope), tuple(envelope.get("results") or ()))
        )
    if shape == "published":
        top = _agent_of(data)
        shards = [Shard(s.source, s.status, top or s.agent, s.rows) for s in shards]
    return shards


def agent_ids_from_scenario(path: Path) -> dict[str, str]:
    """``{agent, green?}`` from a scenario's ``metadata.agentbeats_ids`` (json5), as published."""
    try:
        scenario = json5.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AggregateError(f"{path}: cannot read the scenario ({exc})") from None
    ids = (
        (scenario.get("metadata") or {}).get("agentbeats_ids")
        if isinstance(scenario, dict)
        else None
    )
    if not isinstance(ids, Mapping):
        raise AggregateError(f"{path}: no metadata.agentbeats_ids in the scenario")
    out: dict[str, str] = {}
    for key in SCENARIO_AGENT_KEYS:
        if is_agentbeats_id(ids.get(key)):
            out["agent"] = str(ids[key]).strip()
            break
    else:
        raise AggregateError(
            f"{path}: metadata.agentbeats_ids has no AgentBeats UUID under "
            + " / ".join(SCENARIO_AGENT_KEYS)
        )
    if is_agentbeats_id(ids.get("green")):
        out["green"] = str(ids["green"]).strip()
    return out


def aggregate(
    paths: Sequence[Path],
    *,
    agent: str | None = None,
    green: str | None = None,
    num_shards: int | None = None,
    allow_partial: bool = False,
) -> Aggregate:
    """The published document for these shard files; AggregateError names every refusal."""
    if not paths:
        raise AggregateError("no shard files given")
    if agent is not None and not is_agentbeats_id(agent):
        raise AggregateError(f"--agent {agent!r} is not an AgentBeats UUID")
    if green is not None and not is_agentbeats_id(green):
        raise AggregateError(f"--green {green!r} is not an AgentBeats UUID")
    if num_shards is not None and num_shards < 1:
        raise AggregateError(f"--num-shards must be at least 1, not {num_shards}")
    shards = [shard for path in paths for shard in read_shards(path)]
    agent_id = agent or _agent_from_shards(shards)
    _check_one_task_set(shards)
    _check_no_shard_twice(shards)

    notes: list[str] = []
    completed = [s for s in shards if s.status == "completed" and s.rows]
    problems = [s for s in shards if s not in completed]
    for shard in problems:
        notes.append(f"{shard.source}: shard status {shard.status!r} with {len(shard.rows)} row(s)")
    missing = 0 if num_shards is None else num_shards - len(shards)
    if missing < 0:
        raise AggregateError(f"{len(shards)} shards given but --num-shards is {num_shards}")
    if missing:
        notes.append(f"{missing} of {num_shards} shard(s) missing")
    if (problems or missing) and not allow_partial:
        raise AggregateError(
            "not every shard completed: "
            + "; ".join(notes)
            + " (re-run the failed shards, or pass --allow-partial to write a 'partial' file, "
            "which the leaderboard ignores)"
        )
    status = "completed" if not problems and not missing else "partial" if completed else "failed"
    participants = {"agent": agent_id}
    if green is not None:
        participants = {"green": green, **participants}
    document = {
        "status": status,
        "participants": participants,
        # Rows are kept as they are; the envelope names the agent by its id, like the file.
        "results": [
            {"status": s.status, "participants": {"agent": agent_id}, "results": list(s.rows)}
            for s in shards
            if s.rows
        ],
    }
    violations = validate_results(document, contract=True)
    if violations:
        shown = "; ".join(str(v) for v in violations[:5])
        more = f" (and {len(violations) - 5} more)" if len(violations) > 5 else ""
        raise AggregateError(f"the aggregate would not validate: {shown}{more}")
    rows = sum(len(s.rows) for s in shards)
    return Aggregate(document, len(shards), rows, tuple(notes))


def write_aggregate(result: Aggregate, output: Path, *, force: bool = False) -> None:
    """Write atomically; never replace a different existing file unless ``force``."""
    text = json.dumps(result.document, indent=2) + "\n"
    if output.exists() and not force and output.read_text(encoding="utf-8") != text:
        raise AggregateError(f"{output} exists and differs (pass --force to replace it)")
    prepare_output_file(output)
    partial = output.with_name(f".{output.name}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(output)


def _agent_of(data: Mapping[str, Any]) -> str | None:
    participants = data.get("participants")
    if isinstance(participants, Mapping):
        agent = participants.get("agent")
        if isinstance(agent, str) and agent.strip():
            return agent.strip()
    return None


def _agent_from_shards(shards: Sequence[Shard]) -> str:
    named = [s.agent for s in shards if s.agent]
    ids = sorted({a for a in named if is_agentbeats_id(a)})
    others = sorted({a for a in named if not is_agentbeats_id(a)})
    if len(ids) > 1:
        raise AggregateError(f"the shards name different agents: {', '.join(ids)}")
    if ids and not others and all(s.agent for s in shards if s.rows):
        return ids[0]
    naming = f" (they name {', '.join(others)})" if others else ""
    raise AggregateError(
        "the shards do not name the agent by its AgentBeats id"
        + naming
        + ": pass --agent UUID or --scenario FILE (its metadata.agentbeats_ids)"
    )


def _check_one_task_set(shards: Sequence[Shard]) -> None:
    seen: dict[tuple[object, object], str] = {}
    for shard in shards:
        for row in shard.rows:
            key = (row.get("task_set"), row.get("task_set_digest"))
            seen.setdefault(key, shard.source)
    if len(seen) > 1:
        listed = "; ".join(
            f"{name} {digest} in {source}" for (name, digest), source in seen.items()
        )
        raise AggregateError(f"the shards mix task sets: {listed}")


def _check_no_shard_twice(shards: Sequence[Shard]) -> None:
    trials: dict[object, str] = {}
    tasks: dict[object, str] = {}
    for shard in shards:
        for row in shard.rows:
            trial = row.get("trial_id")
            if trial is not None and trial in trials:
                raise AggregateError(
                    f"trial {trial} is in {trials[trial]} and in {shard.source}: a shard given twice"
                )
            trials[trial] = shard.source
        for task in {row.get("task_id") for row in shard.rows}:
            if task in tasks:
                raise AggregateError(
                    f"task {task} is in {tasks[task]} and in {shard.source}: a shard given twice "
                    "(two shards of one run never share a task)"
                )
            tasks[task] = shard.source
