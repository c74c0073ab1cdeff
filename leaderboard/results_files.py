"""Results files: finding them, telling their shape apart, and rewriting the other shapes into
the published one so the leaderboard queries read them all.

Three shapes are in use (research/agentbeats.md §5.2):

- ``published``: ``{status, participants: {agent: UUID}, results: [envelope, …]}`` (the
  leaderboard repository's ``results/*.json``);
- ``gateway_export``: ``{status, results: [envelope, …]}`` (the AgentBeats gateway's ``GET /``);
- ``envelope``: ``{status, participants, results: [row, …]}`` (what the green agent returns).
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from leaderboard.rows import AGENTBEATS_UUID_PATTERN

Shape = Literal["published", "gateway_export", "envelope"]


@dataclass(frozen=True)
class ResultsFile:
    """One input file, its shape, and (for the other shapes) its published-shape documents."""

    path: Path
    shape: Shape
    documents: tuple[dict[str, Any], ...] = ()


def expand_results_paths(patterns: Iterable[str]) -> list[Path]:
    """Files named by globs, paths or folders (a folder means its ``*.json``); sorted, unique."""
    found: dict[str, Path] = {}
    given = list(patterns)
    if not given:
        raise ValueError("no results files given (use --results 'results/*.json')")
    for pattern in given:
        path = Path(pattern)
        if path.is_dir():
            matches = sorted(glob.glob(os.path.join(glob.escape(str(path)), "*.json")))
        elif glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern, recursive=True))
        elif path.is_file():
            matches = [pattern]
        else:
            raise ValueError(f"results file not found: {pattern}")
        files = [m for m in matches if Path(m).is_file()]
        if not files:
            raise ValueError(f"no results files match {pattern!r}")
        for match in files:
            found.setdefault(os.path.abspath(match), Path(match))
    return sorted(found.values(), key=str)


def confined_results_paths(patterns: Iterable[str]) -> list[Path]:
    """As :func:`expand_results_paths`, but a file a folder or a glob matched is kept only when it
    resolves (symlinks followed) inside that folder (a glob's: its part before the first
    wildcard): what serves the files given (``view --results``) never reaches past them. A file
    named outright is kept as named."""
    kept: dict[Path, Path] = {}
    for pattern in patterns:
        base = _base_folder(pattern)
        for path in expand_results_paths([pattern]):
            resolved = path.resolve()
            if base is None or resolved.is_relative_to(base):
                kept.setdefault(resolved, path)
    return sorted(kept.values(), key=str)


def _base_folder(pattern: str) -> Path | None:
    if Path(pattern).is_dir():
        return Path(pattern).resolve()
    if not glob.has_magic(pattern):
        return None
    parts = Path(pattern).parts
    plain = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    return Path(*parts[:plain]).resolve() if plain else Path.cwd().resolve()


def detect_shape(data: Any) -> Shape:
    """The shape of one parsed results file; ValueError naming what is wrong."""
    if not isinstance(data, Mapping):
        raise ValueError(f"top level is {_kind(data)}, not an object")
    items = data.get("results")
    if not isinstance(items, list):
        raise ValueError("no 'results' list at the top level")
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"results[{index}] is {_kind(item)}, not an object")
    row_like = ["task_id" in item for item in items]
    if any(row_like) and not all(row_like):
        raise ValueError("'results' mixes rows (with task_id) and envelopes")
    if row_like and all(row_like):
        return "envelope"
    for index, item in enumerate(items):
        if not isinstance(item.get("results"), list):
            raise ValueError(f"results[{index}] has neither task_id nor a 'results' list")
    participants = data.get("participants")
    if isinstance(participants, Mapping) and participants.get("agent"):
        return "published"
    return "gateway_export"


def parse_results_file(path: Path) -> tuple[dict[str, Any], Shape]:
    """One file's JSON and its shape; ValueError naming the file and what is wrong."""
    try:
        data = json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ValueError(f"{path}: not a results file: JSON nested too deeply to read") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        shape = detect_shape(data)
    except ValueError as exc:
        raise ValueError(f"{path}: not a results file: {exc}") from None
    return data, shape


def read_results_file(path: Path, participant: str | None = None) -> ResultsFile:
    """Parse and classify one file; other shapes come with their published-shape rewrite.

    ``participant`` attributes files that carry no top-level participant (gateway exports and
    bare envelopes); published files keep their own.
    """
    data, shape = parse_results_file(path)
    if shape == "published":
        _require_agent_id(path, _agent_of(data))
        return ResultsFile(path, shape)
    status = data.get("status", "completed")
    if shape == "envelope":
        agent = participant or _agent_of(data)
        _require_agent_id(path, agent)
        assert agent is not None
        envelope = {**data, "participants": {"agent": agent}}
        doc = {"status": status, "participants": {"agent": agent}, "results": [envelope]}
        return ResultsFile(path, shape, (doc,))
    # A gateway export: one published document per attributed agent, envelopes in order.
    by_agent: dict[str, list[Any]] = {}
    for index, envelope in enumerate(data["results"]):
        agent = participant or _agent_of(envelope)
        _require_agent_id(path, agent, f"results[{index}]")
        assert agent is not None
        by_agent.setdefault(agent, []).append(envelope)
    docs = tuple(
        {"status": status, "participants": {"agent": agent}, "results": envelopes}
        for agent, envelopes in by_agent.items()
    )
    return ResultsFile(path, shape, docs)


def _require_agent_id(path: Path, agent: str | None, where: str = "") -> None:
    """Rows count for an agent only under its AgentBeats id: under Amber every agent is reached at
    the same proxy URL, so a URL would merge different agents' runs into one leaderboard row."""
    if agent is not None and AGENTBEATS_UUID_PATTERN.match(agent):
        return
    at = f" {where}" if where else ""
    named = f"names the agent as {agent!r}, not" if agent else "names no agent by"
    raise ValueError(
        f"{path}{at}: {named} its AgentBeats id, so its rows cannot be told from other agents'"
        f"; pass --participant UUID, or make a submittable file: skillsbench-agentbeats"
        f" leaderboard aggregate {path} --agent UUID --output results/NAME.json"
    )


def _agent_of(data: Mapping[str, Any]) -> str | None:
    participants = data.get("participants")
    if isinstance(participants, Mapping):
        agent = participants.get("agent")
        if isinstance(agent, str) and agent.strip():
            return agent.strip()
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"
