"""``skillsbench-agentbeats run``: a task set through the worker engine in this process (no HTTP),
its rows written as the envelope AgentBeats publishes (through the leaderboard's normalizer).

Wiring the worker's engine to the leaderboard's normalizer is the composition root's job.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from leaderboard.rows import BUILTIN_AGENT_TRANSPORTS
from serving.invocation import command_prefix
from serving.output import prepare_output_file
from worker.sandbox.settings import base_image_map_option
from worker.service.cli import (
    concurrency_or_cores,
    environment_option,
    executor_option,
    executor_options,
    resource_options,
    resource_settings,
)


@click.command(help="Run a task set locally through the worker engine (no HTTP).")
@click.option("--tasks-dir", type=click.Path(path_type=Path, file_okay=False), default=None)
@click.option("--task-set", default=None, help="A packaged task set name or a manifest file.")
@click.option("--task-id", "task_ids", multiple=True, help="Run these tasks (repeatable).")
@click.option(
    "--agent", required=True, help="oracle | nop | script:FILE | a2a:URL | a manifest agent"
)
@environment_option()
@base_image_map_option()
@click.option("--concurrency", type=int, default=None, help="Trials at once (default: cores).")
@executor_option()
@click.option(
    "--jobs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("jobs/local"),
    show_default=True,
)
@click.option("--condition", type=click.Choice(["with_skills", "without_skills"]), default=None)
@click.option("--num-instances", type=int, default=1, show_default=True)
@click.option(
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the result envelope (public rows) as JSON.",
)
@click.option(
    "--participant-id",
    default=None,
    help="AgentBeats UUID to attribute the rows to in --output (default: the a2a URL, "
    "else the agent spec, which marks the file as a local run, not a publishable one).",
)
@click.option(
    "--expect",
    type=click.Choice(["passed", "failed"]),
    default=None,
    help="Exit 1 unless every trial ended this way (an infrastructure error is neither).",
)
@click.option("-m", "--model", default=None, help="Model for manifest agents (any litellm route).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Per-trial token cap.")
@click.option(
    "--max-cost-usd",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Per-trial cost cap (needs a priced model).",
)
@click.option(
    "--usage-tracking",
    type=click.Choice(["auto", "required", "off"]),
    default="auto",
    show_default=True,
    help="required: a trial without trusted usage is an error.",
)
@click.option(
    "--agent-env",
    "agent_env",
    multiple=True,
    metavar="NAME=VALUE",
    help="Extra variable for the agent's process (repeatable).",
)
@resource_options
def run(
    tasks_dir: Path | None,
    task_set: str | None,
    task_ids: tuple[str, ...],
    agent: str,
    environment: str,
    base_image_map: dict[str, str],
    concurrency: int | None,
    executor: str,
    ray_address: str | None,
    jobs_dir: Path,
    condition: str | None,
    num_instances: int,
    output: Path | None,
    participant_id: str | None,
    expect: str | None,
    model: str | None,
    max_tokens: int | None,
    max_cost_usd: float | None,
    usage_tracking: str,
    agent_env: tuple[str, ...],
    pids_limit: int,
    override_cpus: float | None,
    override_memory_mb: int | None,
) -> None:
    from worker.api import RunRequest, RunTask, UsageSettings
    from worker.runs.catalog import resolve_tasks_dir, selected_manifest

    if num_instances < 1:
        raise click.BadParameter("must be at least 1", param_hint="--num-instances")
    folder = resolve_tasks_dir(tasks_dir)
    manifest = selected_manifest(folder, task_set, task_ids)
    config = {
        "task_set": manifest["task_set"],
        "condition": condition or manifest.get("condition", "with_skills"),
        "num_instances": num_instances,
    }
    request = RunRequest(
        config=config,
        task_set=manifest["task_set"],
        task_set_digest=manifest["task_set_digest"],
        tasks=[RunTask.model_validate(entry) for entry in manifest["tasks"]],
        agent=agent,
        manifest=manifest,
        usage=UsageSettings(
            model=model,
            max_tokens=max_tokens,
            max_cost_usd=max_cost_usd,
            usage_tracking=usage_tracking,
            agent_env=_agent_env(agent_env),
        ),
    )
    from worker.agents.registry import resolve_agent
    from worker.usage.trial import check_model

    resolved = resolve_agent(agent)
    check_model(resolved, model)
    resolved.check_ready(request.usage.agent_env if request.usage else {})  # before any trial
    resources = resource_settings(pids_limit, override_cpus, override_memory_mb)
    from worker.executors import ExecutorError

    where = (executor, executor_options(executor, ray_address))
    try:
        run_id, rows, reasons = asyncio.run(
            _run_local(
                request,
                folder,
                jobs_dir,
                environment,
                concurrency_or_cores(concurrency),
                resources,
                base_image_map,
                where,
            )
        )
    except ExecutorError as exc:
        raise click.ClickException(str(exc)) from None
    from skillsbench_agentbeats.progress import resources_lines, summary_table

    click.echo(summary_table(rows, reasons))
    from worker.usage.summary import cost_line, load_results

    results = load_results(jobs_dir, [row["trial_id"] for row in rows])
    for line in resources_lines(results):
        click.echo(line)
    click.echo(cost_line(results))
    click.echo(
        f"Run folder: {jobs_dir / 'runs' / run_id} (one folder per trial under trials/)\n"
        f"next: {command_prefix()} trials show TRIAL_ID_OR_TASK --jobs-dir {jobs_dir} "
        f"(or trials list {jobs_dir}; trials view TRIAL writes an HTML transcript)"
    )
    if output is not None:
        document = _output_envelope(rows, manifest, agent, participant_id)
        prepare_output_file(output)
        output.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        click.echo(f"rows written to {output}")
        kind = agent.split(":", 1)[0]
        if kind in BUILTIN_AGENT_TRANSPORTS:
            click.echo(
                f"(rows of the built-in agent {kind!r} are a reference run: leaderboard aggregate "
                "refuses them)"
            )
        else:
            click.echo(
                f"next: {command_prefix()} leaderboard aggregate {output}"
                + ("" if participant_id else " --agent UUID")
                + " --output results/NAME.json (a submittable file; then leaderboard validate)"
            )
    infra = [r["task_id"] for r in rows if not r["score_eligible"]]
    if rows and len(infra) == len(rows):
        click.echo("every trial was an infrastructure error: nothing was graded", err=True)
        sys.exit(1)
    if expect is not None:
        wanted = expect == "passed"
        wrong = [r["task_id"] for r in rows if r["score_eligible"] and r["passed"] != wanted]
        if infra:  # neither passed nor failed: never what --expect asks for
            click.echo(f"infrastructure errors (not graded): {', '.join(infra)}", err=True)
        if wrong:
            click.echo(f"expected every trial {expect}, but not: {', '.join(wrong)}", err=True)
        if infra or wrong:
            sys.exit(1)


def _output_envelope(
    rows: list[dict[str, Any]], manifest: dict[str, Any], agent: str, participant_id: str | None
) -> dict[str, Any]:
    """The envelope shape AgentBeats publishes; rows always go through the public normalizer."""
    from leaderboard.normalize import RowContext, build_envelope, normalize_rows

    context = RowContext.from_manifest(manifest)
    attribution = participant_id or (agent[len("a2a:") :] if agent.startswith("a2a:") else None)
    if attribution is not None:
        return build_envelope({"agent": attribution}, rows, context).public_dict()
    # A built-in agent has no AgentBeats identity: keep the spec, so the file reads as a local run.
    return {
        "status": "completed",
        "participants": {"agent": agent},
        "results": normalize_rows(rows, context),
    }


def _agent_env(pairs: tuple[str, ...]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE", param_hint="--agent-env")
        env[name.strip()] = value
    return env


async def _run_local(
    request: object,
    tasks_dir: Path,
    jobs_dir: Path,
    environment: str,
    concurrency: int,
    resources: Any = None,
    base_image_map: dict[str, str] | None = None,
    where: tuple[str, dict[str, str]] = ("inprocess", {}),
) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
    """The run's id, its rows, and why each trial that did not pass did not (by trial id)."""
    from skillsbench_agentbeats.progress import ProgressView
    from worker.api import EVENT_END, EVENT_ROW, RunRequest
    from worker.runs.engine import Engine, EngineSettings

    assert isinstance(request, RunRequest)
    from worker.sandbox.settings import PrebuiltImages

    engine = Engine(
        EngineSettings(
            jobs_dir=jobs_dir,
            tasks_dir=tasks_dir,
            environment=environment,
            concurrency=concurrency,
            prebuilt=PrebuiltImages.from_env(bases=base_image_map),
            **({"resources": resources} if resources is not None else {}),
            executor=where[0],
            executor_options=where[1],
        )
    )
    await engine.start(resume=False)
    record = await engine.submit(request)
    warning = record.worker_meta.get("resource_limits", {}).get("warning")
    if warning:  # once, at the run's start
        click.echo(f"warning: {warning}", err=True)
    view = ProgressView(len(record.trials))
    view.draw()
    try:
        async for name, data in engine.events(record.run_id):
            if name == EVENT_ROW:
                view.row(str(data["trial_key"]), data["row"], data.get("reason"))
            elif name == EVENT_END:
                break
    except asyncio.CancelledError:
        view.close()
        await engine.cancel(record.run_id)
        raise
    view.close()
    await engine.close()  # nothing left to stop; disconnects an executor (ray)
    finished = engine.get(record.run_id)
    reasons = {
        trial.row["trial_id"]: trial.current.reason
        for trial in finished.trials.values()
        if trial.row is not None and trial.current is not None and trial.current.reason
    }
    return record.run_id, finished.rows(), reasons
