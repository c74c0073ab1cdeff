"""``skillsbench-agentbeats trials``: read what trials recorded.

``trials requests JOBDIR`` prints one line per model call of every trial under JOBDIR (what each
request carried: model, effort, sampling, max tokens; and how it ended); ``trials show TRIAL``
summarises one trial folder (phases, tool calls, tokens, cost, reward).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from serving.invocation import command_prefix
from serving.output import prepare_output_file
from worker.bridge.protocol import find_usage
from worker.trial_record.jsonl import json_lines
from worker.trial_record.paths import (
    A2A_TRAJECTORY_FILE,
    CONFIG_FILE,
    LLM_TRAJECTORY_FILE,
    RESULT_FILE,
    TIMING_FILE,
    TRAJECTORY_DIR,
)
from worker.trial_record.result import TrialResult
from worker.usage import participant
from worker.usage.records import cost_summary
from worker.viewer import lookup, trial_folder
from worker.viewer.lookup import DEFAULT_JOBS_DIR

REQUEST_COLUMNS = (
    "trial",
    "call",
    "purpose",
    "model",
    "answered",
    "effort",
    "temperature",
    "top_p",
    "max_tokens",
    "status",
    "finish",
)
REPORTED_COLUMNS = ("trial", "turn", "model", "calls", "input", "output", "cost_usd")
SHOWN_ACTIONS = 50
PROOF_FOLDER = "private-proof"  # worker.runs.meta's default proof folder under a jobs dir


def _show(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def effort_of(body: dict[str, Any]) -> Any:
    """Reasoning effort as the request carried it, whatever the wire format."""
    if body.get("reasoning_effort") is not None:
        return body["reasoning_effort"]
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        return reasoning["effort"]
    output_config = body.get("output_config")
    if isinstance(output_config, dict) and output_config.get("effort") is not None:
        return output_config["effort"]
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        return f"budget:{thinking.get('budget_tokens')}"
    return None


def finish_of(answer: dict[str, Any]) -> Any:
    choices = answer.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("finish_reason")
    if "stop_reason" in answer:
        return answer.get("stop_reason")
    if answer.get("object") == "response":
        details = answer.get("incomplete_details") or {}
        return (
            details.get("reason") if isinstance(details, dict) and details else answer.get("status")
        )
    error = answer.get("error")
    if isinstance(error, dict):
        return "error"
    return None


def request_row(trial: str, n: int, line: dict[str, Any]) -> tuple[str, ...]:
    request = line.get("request") or {}
    body = request.get("body") or {}
    response = line.get("response") or {}
    answer = response.get("body") or {}
    meta = line.get("metadata") or {}
    max_tokens = next(
        (
            body[k]
            for k in ("max_tokens", "max_completion_tokens", "max_output_tokens")
            if k in body
        ),
        None,
    )
    status = response.get("status_code")
    if meta.get("refused"):
        status = f"{status} refused"
    values = (
        trial,
        n,
        meta.get("call_purpose"),
        body.get("model") or meta.get("request_model"),
        answer.get("model") or meta.get("provider_model"),
        effort_of(body),
        body.get("temperature"),
        body.get("top_p"),
        max_tokens,
        status,
        finish_of(answer),
    )
    return tuple(_show(v) for v in values)


def table(rows: list[tuple[str, ...]], headers: tuple[str, ...]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(out)


def trial_folders(root: Path) -> list[Path]:
    """Trial folders under ``root`` (a jobs dir, a run, or a trial), in a stable order."""
    if (root / RESULT_FILE).exists() or (root / LLM_TRAJECTORY_FILE).exists():
        return [root]
    found = {p.parent.parent for p in root.rglob(LLM_TRAJECTORY_FILE)}
    found |= {p.parent for p in root.rglob(RESULT_FILE) if (p.parent / TRAJECTORY_DIR).is_dir()}
    # The private proof keeps a copy of each trial: count every trial once.
    return sorted(p for p in found if PROOF_FOLDER not in p.relative_to(root).parts)


@click.group(help="Inspect trials of a jobs directory.")
def trials() -> None:
    pass


@trials.command(help="One line per model call of every trial under JOBDIR.")
@click.argument("jobdir", type=click.Path(path_type=Path, file_okay=False))
def requests(jobdir: Path) -> None:
    if not jobdir.is_dir():
        raise ValueError(f"{jobdir}: no such folder")
    rows = []
    reported = []
    for folder in trial_folders(jobdir):
        path = folder / LLM_TRAJECTORY_FILE
        if path.exists():
            rows += [
                request_row(folder.name, n, line) for n, line in enumerate(json_lines(path), 1)
            ]
        reported += reported_rows(folder)
    if not rows and not reported:
        click.echo(f"no model calls recorded under {jobdir}")
        return
    if rows:
        click.echo(table(rows, REQUEST_COLUMNS))
    if reported:
        if rows:
            click.echo("")
        click.echo(
            "Usage the participant reported on its replies (participant-reported, "
            "not measured by the worker):"
        )
        click.echo(table(reported, REPORTED_COLUMNS))


def reported_rows(folder: Path) -> list[tuple[str, ...]]:
    """One line per purple reply that carried a ``usage`` object (skillsbench-shell/v1)."""
    path = folder / A2A_TRAJECTORY_FILE
    if not path.exists():
        return []
    rows = []
    for event in json_lines(path):
        payload = event.get("payload")
        if event.get("type") != "a2a_response" or not isinstance(payload, dict):
            continue
        try:
            usage = find_usage(payload.get("data") or [])
        except ValueError:
            continue  # the trial ended as a participant error; result.json says why
        if usage is not None:
            values: tuple[Any, ...] = (folder.name, event.get("turn"), usage.model, usage.calls)
            values += (usage.input_tokens, usage.output_tokens, usage.cost_usd)
            rows.append(tuple(_show(v) for v in values))
    return rows


def summary(folder: Path) -> str:
    result = TrialResult.read(folder / RESULT_FILE)
    if result is None:
        raise ValueError(f"{folder}: no {RESULT_FILE} (not a trial folder, or it has not finished)")
    timing = trial_folder.read_json(folder / TIMING_FILE)
    config = trial_folder.read_json(folder / CONFIG_FILE)
    agent_result = result.agent_result or {}
    tracking = result.usage_tracking or {}
    lines = [
        f"Trial:     {result.trial_id} (task {result.task}, attempt {result.attempt})",
        f"Agent:     {result.agent}"
        + (f", model {config.get('model')}" if config.get("model") else ""),
        f"Reward:    {_show(result.reward)} ("
        + ("passed" if result.passed else "not passed")
        + (f"; {result.failure}: {result.error}" if result.failure else "")
        + ")",
    ]
    verifier = result.verifier or {}
    tampering = verifier.get("tampering") or []
    if tampering:
        lines.append(
            f"Tampered:  {verifier.get('n_tampered_paths', len(tampering))} path(s) the "
            "verifier runs or loads were changed by the agent"
        )
        lines += [
            f"  - {item.get('change')} {item.get('path')}: {item.get('reason')}"
            for item in tampering[:20]
        ]
        if len(tampering) > 20:
            lines.append(f"  … {len(tampering) - 20} more in result.json")
        regrade = verifier.get("regrade") or {}
        if "reward_in_agent_sandbox" in regrade and regrade["reward_in_agent_sandbox"] is None:
            lines.append(
                "  all of it left out of the work product: graded on the image plus the work "
                f"product only (reward there: {_show(regrade.get('reward'))})"
            )
    resources = result.resources or {}
    given = resources.get("given") or {}
    if given:
        line = (
            f"Resources: {_show(given.get('cpus'))} CPU(s), {given.get('memory_mb')} MB, "
            f"{given.get('pids')} processes"
        )
        changes = resources.get("changes") or []
        if changes:
            line += (
                " ("
                + "; ".join(
                    f"{c.get('limit')} {_show(c.get('from'))} -> {_show(c.get('to'))}: {c.get('why')}"
                    for c in changes
                )
                + ")"
            )
        events = resources.get("events") or {}
        if events.get("oom_kills") or events.get("pids_max_hits"):
            line += (
                f"; hit: {events.get('oom_kills', 0)} OOM kill(s), "
                f"{events.get('pids_max_hits', 0)} fork(s) refused"
            )
        if events.get("storage_hits"):
            line += (
                f"; storage cap hit: {events.get('storage_used_bytes', 0)} bytes written, "
                f"cap {events.get('storage_cap_bytes', 0)}"
            )
        lines.append(line)
    phases = [
        f"{name} {timing[name]:.1f}s"
        for name in ("environment_setup", "agent_setup", "agent_execution", "verifier", "teardown")
        if isinstance(timing.get(name), int | float)
    ]
    if phases:
        lines.append("Phases:    " + ", ".join(phases))
    if (
        tracking.get("model_access") == "proxy"  # the wait is only known for calls we relay
        and timing.get("provider_wait") is not None
        and timing.get("agent_without_provider_wait") is not None
    ):
        lines.append(
            f"Agent:     {timing['provider_wait']:.1f}s waiting for the model, "
            f"{timing['agent_without_provider_wait']:.1f}s doing anything else"
        )
    transcript = trial_folder.load(folder)
    actions = transcript.actions
    lines.append(f"Tools:     {len(actions)} tool call(s)")
    for action in actions[:SHOWN_ACTIONS]:
        ended = f"exit {action.exit_code}" if action.exit_code is not None else ""
        ended += " timed out" if action.timed_out else ""
        title = " ".join(action.title.split())
        lines.append(
            f"  - [{action.status or '?'}] {_clip(title)}" + (f" ({ended})" if ended else "")
        )
        lines += [f"      | {line}" for line in trial_folder.tail(action.output).splitlines()]
    if len(actions) > SHOWN_ACTIONS:
        lines.append(f"  … {len(actions) - SHOWN_ACTIONS} more (trials view shows every one)")
    calls_model = tracking.get("model_access") != "none"
    if agent_result.get("usage_source") == participant.PARTICIPANT_REPORTED:
        lines.append("Reported:  " + participant.describe(agent_result.get("participant_usage")))
    elif agent_result.get("usage_source") not in (None, "unavailable"):
        lines.append(
            f"Tokens:    {agent_result.get('n_input_tokens'):,} in "
            f"({agent_result.get('n_cache_read_tokens') or 0:,} cache read), "
            f"{agent_result.get('n_output_tokens'):,} out, "
            f"{agent_result.get('total_tokens'):,} total "
            f"[{agent_result.get('usage_source')}]"
        )
    lines.append("Cost:      " + cost_summary(agent_result, calls_model=calls_model))
    if tracking.get("n_model_calls"):
        lines.append(
            f"Calls:     {tracking['n_model_calls']} model call(s)"
            + (
                f", {tracking['n_refused_calls']} refused"
                if tracking.get("n_refused_calls")
                else ""
            )
        )
    if tracking.get("limit_reached"):
        lines.append(f"Limit:     {tracking['limit_reached']}")
    final = transcript.final_message
    lines.append("Message:   " + ("-" if final is None else "(the agent's final message)"))
    if final is not None:
        lines += [f"      | {line}" for line in trial_folder.tail(final, 6, 600).splitlines()]
    for name, text in transcript.verifier_output.items():
        lines.append(f"Verifier:  {name} (last lines)")
        lines += [f"      | {line}" for line in trial_folder.tail(text, 8, 800).splitlines()]
    if not transcript.verifier_output:
        lines.append("Verifier:  no output recorded")
    lines.append(f"Folder:    {folder}")
    return "\n".join(lines)


def _clip(text: str, chars: int = 160) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


_JOBS_DIR_OPTION = click.option(
    "--jobs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_JOBS_DIR,
    show_default=True,
    help="Where to look for a trial named by id or task.",
)


def _trial_folder(trial: str, jobs_dir: Path) -> Path:
    """A trial folder given as a path, or named by id, id prefix, 8-hex suffix or task."""
    path = Path(trial)
    if path.is_dir():
        return path
    if "/" in trial:
        raise ValueError(f"{trial}: no such trial folder")
    return lookup.find_trial(jobs_dir, trial).folder


@trials.command(
    help="Summarise one trial: reward, phases, each action with its exit code and output tail, "
    "tokens, cost, the agent's final message and the verifier's output. TRIAL is a trial "
    "folder, a trial id (or a unique prefix, or its 8-hex suffix) or a task id (its newest trial)."
)
@click.argument("trial")
@_JOBS_DIR_OPTION
def show(trial: str, jobs_dir: Path) -> None:
    click.echo(summary(_trial_folder(trial, jobs_dir)))


@trials.command(
    help="Write one self-contained HTML transcript of a trial (instruction, every turn and "
    "action with its output, model calls and usage, verifier output, reward). TRIAL as for show."
)
@click.argument("trial")
@_JOBS_DIR_OPTION
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The HTML file (default: TRIAL_ID.html here).",
)
def view(trial: str, jobs_dir: Path, output: Path | None) -> None:
    from worker.viewer.html import render

    transcript = trial_folder.load(_trial_folder(trial, jobs_dir))
    output = prepare_output_file(
        output or Path(f"{transcript.result.get('trial_id') or 'trial'}.html"), "--output"
    )
    output.write_text(render(transcript), encoding="utf-8")
    click.echo(f"transcript written to {output}")


@trials.command(name="list", help="Runs and their trials under JOBS, newest first.")
@click.argument("jobs", type=click.Path(path_type=Path, file_okay=False), default=DEFAULT_JOBS_DIR)
@click.option("--runs", "n_runs", type=click.IntRange(min=1), default=10, show_default=True)
def list_trials(jobs: Path, n_runs: int) -> None:
    found = lookup.runs(jobs)
    if not found:
        click.echo(f"no runs under {jobs}")
        return
    click.echo(
        f"{len(found)} run(s) under {jobs}" + (f", newest {n_runs}" if len(found) > n_runs else "")
    )
    for run, entries in found[:n_runs]:
        passed = sum(1 for e in entries if e.passed)
        click.echo(
            f"\n{run.run_id}  {run.created_at}  {run.status}  agent {run.agent}  "
            f"{len(entries)} trial(s), {passed} passed  {jobs / 'runs' / run.run_id}"
        )
        rows: list[tuple[str, ...]] = [
            (
                e.trial_id,
                e.task_id,
                "-" if e.reward is None else f"{100 * e.reward:.1f}",
                e.state if e.passed is None else ("yes" if e.passed else "no"),
                e.failure or "-",
                str(e.n_attempts),
            )
            for e in entries
        ]
        if rows:
            table_text = table(
                rows, ("trial", "task", "reward (%)", "passed", "failure", "attempts")
            )
            click.echo("\n".join("  " + line for line in table_text.splitlines()))
    click.echo(f"\nnext: {command_prefix()} trials show TRIAL_ID_OR_TASK --jobs-dir {jobs}")
