"""``skillsbench-agentbeats run``: a task set through the worker engine in this process (no HTTP),
its rows written as the envelope AgentBeats publishes (through the leaderboard's normalizer).

Wiring the worker's engine to the leaderboard's normalizer is the composition root's job.

SIGINT and SIGTERM stop the run the same way: its trials are cancelled and their sandboxes
removed (mounts, cgroups, containers), the run is stored unfinished, and the command exits 130
(INT) or 143 (TERM) naming the ``run --resume RUN`` that finishes it. A second signal exits at
once; the resume (or any later ``run`` on the jobs folder) reaps what is left.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

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
    task_cache_option,
)

T = TypeVar("T")


@click.command(help="Run a task set locally through the worker engine (no HTTP).")
@click.option("--tasks-dir", type=click.Path(path_type=Path, file_okay=False), default=None)
@click.option("--task-set", default=None, help="A packaged task set name or a manifest file.")
@task_cache_option()
@click.option("--task-id", "task_ids", multiple=True, help="Run these tasks (repeatable).")
@click.option(
    "--agent", default=None, help="oracle | nop | script:FILE | a2a:URL | a manifest agent"
)
@click.option(
    "--resume",
    "resume_id",
    metavar="RUN",
    default=None,
    help="Finish the run RUN of --jobs-dir that an interrupted or killed run left unfinished "
    "(its task set, agent and settings are the stored ones).",
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
    task_cache: Path | None,
    task_ids: tuple[str, ...],
    agent: str | None,
    resume_id: str | None,
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
    from worker.runs.catalog import check_task_folders, resolve_tasks_dir, selected_manifest

    if num_instances < 1:
        raise click.BadParameter("must be at least 1", param_hint="--num-instances")
    if output is not None:
        _check_output(output)  # before any trial runs, not after all of them
    if resume_id is not None and tasks_dir is None:
        tasks_dir = _fetched_for_resume(jobs_dir, resume_id, task_cache)
    folder = resolve_tasks_dir(tasks_dir, None if resume_id else task_set, task_cache)
    resources = resource_settings(pids_limit, override_cpus, override_memory_mb)
    where = (executor, executor_options(executor, ray_address))
    settings = _Settings(
        folder, jobs_dir, environment, concurrency_or_cores(concurrency), resources,
        base_image_map, where,
    )  # fmt: skip
    if resume_id is not None:
        given = [
            name
            for name, value in (
                ("--agent", agent),
                ("--task-set", task_set),
                ("--task-id", task_ids),
                ("--condition", condition),
                ("-m/--model", model),
                ("--agent-env", agent_env),
            )
            if value
        ]
        if given:
            raise click.UsageError(
                f"--resume runs the stored run as it was asked for: drop {', '.join(given)}"
            )
        run_id, rows, reasons, record = _interruptible(_resume_local(resume_id, settings))
        request = record.request
        manifest = request.manifest or {
            "task_set": request.task_set,
            "task_set_digest": request.task_set_digest,
            "tasks": [task.model_dump(mode="json") for task in request.tasks],
        }
        _report(run_id, rows, reasons, manifest, record.agent, jobs_dir, output,
                participant_id, expect)  # fmt: skip
        return
    if not agent:
        raise click.UsageError("Missing option '--agent' (or --resume RUN)")
    manifest = selected_manifest(folder, task_set, task_ids)
    if task_set is not None:
        check_task_folders(manifest, folder, task_set)
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
    run_id, rows, reasons = _interruptible(_run_local(request, settings))
    _report(run_id, rows, reasons, manifest, agent, jobs_dir, output, participant_id, expect)


def _check_output(output: Path) -> None:
    """``--output`` must be writable before any trial runs (its folder made now, as the end
    would, under the one output rule of serving/output.py)."""
    parent = prepare_output_file(output).parent
    if not os.access(parent, os.W_OK | os.X_OK):
        raise click.BadParameter(f"its folder {parent} is not writable", param_hint="--output")
    if output.exists() and not os.access(output, os.W_OK):
        raise click.BadParameter(f"{output} is not writable", param_hint="--output")


def _interruptible(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` with SIGINT and SIGTERM cancelling it (it stops the run and says how to
    resume it); after such a signal, exit 128 + its number (130, 143) without a traceback. A
    second signal exits at once."""
    from worker.executors import ExecutorError

    caught: list[int] = []

    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def on_signal(signum: int) -> None:
            name = signal.Signals(signum).name
            if caught:
                click.echo(
                    f"\n{name} again: exiting without waiting for the cleanup (a later run "
                    "--resume, or run on this jobs folder, removes what is left)",
                    err=True,
                )
                os._exit(128 + caught[0])
            caught.append(signum)
            click.echo(
                f"\n{name}: stopping the trials and removing their sandboxes "
                f"({name} again to exit at once)",
                err=True,
            )
            task.cancel()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
        try:
            return await work
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if not caught:
            raise
        sys.exit(128 + caught[0])
    except ExecutorError as exc:
        raise click.ClickException(str(exc)) from None


def _report(
    run_id: str,
    rows: list[dict[str, Any]],
    reasons: dict[str, str],
    manifest: dict[str, Any],
    agent: str,
    jobs_dir: Path,
    output: Path | None,
    participant_id: str | None,
    expect: str | None,
) -> None:
    """The summary, the rows file and the exit code of a run that ended."""
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
        prepare_output_file(output)  # checked at the start too
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


class _Settings:
    """The engine's settings from the command line."""

    def __init__(
        self,
        tasks_dir: Path,
        jobs_dir: Path,
        environment: str,
        concurrency: int,
        resources: Any,
        base_image_map: dict[str, str],
        where: tuple[str, dict[str, str]],
    ) -> None:
        self.tasks_dir = tasks_dir
        self.jobs_dir = jobs_dir
        self.environment = environment
        self.concurrency = concurrency
        self.resources = resources
        self.base_image_map = base_image_map
        self.where = where

    def engine(self, environment: str | None = None) -> Any:
        from worker.runs.engine import Engine, EngineSettings
        from worker.sandbox.settings import PrebuiltImages

        return Engine(
            EngineSettings(
                jobs_dir=self.jobs_dir,
                tasks_dir=self.tasks_dir,
                environment=environment or self.environment,
                concurrency=self.concurrency,
                prebuilt=PrebuiltImages.from_env(bases=self.base_image_map),
                **({"resources": self.resources} if self.resources is not None else {}),
                executor=self.where[0],
                executor_options=self.where[1],
            )
        )


Result = tuple[str, list[dict[str, Any]], dict[str, str]]


async def _run_local(request: Any, settings: _Settings) -> Result:
    """The run's id, its rows, and why each trial that did not pass did not (by trial id)."""
    engine = settings.engine()
    try:
        # Reaps what dead processes left in this jobs folder (none other may be using it).
        await engine.start(resume=False, reap=True)
        record = await engine.submit(request)
        return await _follow(engine, record, settings)
    except asyncio.CancelledError:
        await _stopped(engine, settings)
        raise


async def _resume_local(
    run_id: str, settings: _Settings
) -> tuple[str, list[dict[str, Any]], dict[str, str], Any]:
    """Finish a stored run (``--resume``): the result of :func:`_run_local` and its record."""
    from worker.runs.engine import RunBusy, RunNotFound
    from worker.runs.store import RUNS_DIRNAME, read_run_document

    folder = settings.jobs_dir / RUNS_DIRNAME / run_id
    try:
        stored = await asyncio.to_thread(read_run_document, folder)
        environment = str(stored.get("worker_meta", {}).get("environment") or settings.environment)
    except (OSError, ValueError):
        raise click.BadParameter(
            f"no run {run_id!r} in {settings.jobs_dir / RUNS_DIRNAME} (see trials list "
            f"{settings.jobs_dir})",
            param_hint="--resume",
        ) from None
    _check_tasks(stored, settings.tasks_dir)
    engine = settings.engine(environment)  # the run's own sandbox backend
    try:
        await engine.start(resume=False, reap=True)
        try:
            record = await engine.resume(run_id)
        except RunNotFound:
            raise click.BadParameter(f"no run {run_id!r}", param_hint="--resume") from None
        except RunBusy as exc:
            raise click.ClickException(f"{exc}: wait for it, or stop it first") from None
        if record.terminal:
            click.echo(f"run {run_id} had already ended ({record.status})", err=True)
            await engine.close()
            return (*_result(record), record)
        return (*(await _follow(engine, record, settings, resumed=True)), record)
    except asyncio.CancelledError:
        await _stopped(engine, settings)
        raise


def _fetched_for_resume(jobs_dir: Path, run_id: str, task_cache: Path | None) -> Path | None:
    """The fetched tasks of a stored run's task set (None: not fetched, or no such run: the
    resume itself says so)."""
    from task_sets.task_cache import fetched_tasks_dir
    from worker.runs.catalog import TASKS_DIR_VAR
    from worker.runs.store import RUNS_DIRNAME, read_run_document

    if os.environ.get(TASKS_DIR_VAR):
        return None
    try:
        request = read_run_document(jobs_dir / RUNS_DIRNAME / run_id).get("request") or {}
    except (OSError, ValueError):
        return None
    name, digest = request.get("task_set"), request.get("task_set_digest")
    if not isinstance(name, str) or not isinstance(digest, str):
        return None
    return fetched_tasks_dir(name, digest, task_cache)


def _check_tasks(stored: dict[str, Any], tasks_dir: Path) -> None:
    """Each task of a stored run must still have its folder (else its trials could not run)."""
    tasks = (stored.get("request") or {}).get("tasks") or []
    missing = [
        str(task.get("task_id"))
        for task in tasks
        if isinstance(task, dict) and not (tasks_dir / str(task.get("task_id"))).is_dir()
    ]
    if missing:
        raise click.BadParameter(
            f"the run's tasks {', '.join(missing[:5])} have no folder in {tasks_dir} "
            "(give the --tasks-dir the run was started with)",
            param_hint="--resume",
        )


async def _follow(
    engine: Any, record: Any, settings: _Settings, *, resumed: bool = False
) -> Result:
    """Show the run's progress until it ends; its result."""
    from skillsbench_agentbeats.progress import ProgressView
    from worker.api import EVENT_END, EVENT_ROW, EVENT_STATUS

    warning = record.worker_meta.get("resource_limits", {}).get("warning")
    if warning:  # once, at the run's start
        click.echo(f"warning: {warning}", err=True)
    done = sum(1 for trial in record.trials.values() if trial.state == "finished")
    view = ProgressView(len(record.trials), done=done)
    tasks = len(record.request.tasks)
    instances = len(record.trials) // tasks if tasks else 0
    view.say(
        ("resuming" if resumed else "starting")
        + f" run {record.run_id}: {len(record.trials)} trials ({tasks} tasks x {instances}"
        + f"{f', {done} already finished' if done else ''}), concurrency "
        + f"{settings.concurrency}, environment {engine.settings.environment}; folder "
        + f"{settings.jobs_dir / 'runs' / record.run_id}"
    )
    view.draw()
    try:
        async for name, data in engine.events(record.run_id, keepalive_sec=1.0):
            if name == EVENT_ROW:
                if resumed and done and data["progress"]["finished"] <= done:
                    continue  # finished before this process: replayed, already counted
                view.row(str(data["trial_key"]), data["row"], data.get("reason"))
            elif name == EVENT_END:
                break
            elif name != EVENT_STATUS:
                view.tick(_activity(engine, record.run_id))
    finally:
        view.close()
    await engine.close()  # nothing left to stop; disconnects an executor (ray)
    return _result(engine.get(record.run_id))


def _result(finished: Any) -> Result:
    reasons = {
        trial.row["trial_id"]: trial.current.reason
        for trial in finished.trials.values()
        if trial.row is not None and trial.current is not None and trial.current.reason
    }
    return finished.run_id, finished.rows(), reasons


def _activity(engine: Any, run_id: str) -> Any:
    """What the run does now, from its record: running trials and their phases, trials
    waiting for a retry, and a pause for a full jobs folder."""
    import time

    from skillsbench_agentbeats.progress import Activity

    run = engine.get(run_id)
    now = datetime.now().astimezone()
    activity = Activity()
    for trial in run.trials.values():
        current = trial.current
        if trial.state == "running" and current is not None:
            try:
                since = datetime.fromisoformat(current.started_at)
            except ValueError:
                continue
            activity.running.append((trial.key, (now - since).total_seconds()))
        elif trial.state == "queued" and current is not None and current.outcome == "retried":
            activity.retrying.append((trial.key, current.failure or "a failure"))
    activity.running.sort(key=lambda item: -item[1])
    activity.phases = {key: told.phase for key, told in run.shown_phases().items()}
    full = engine.store.full_since
    if full is not None:
        activity.paused_sec = time.monotonic() - full
    return activity


async def _stopped(engine: Any, settings: _Settings) -> None:
    """After SIGINT/SIGTERM: stop the trials (their sandboxes removed), store the runs
    unfinished, and say how each is finished."""
    runs = await engine.stop("interrupted: the run command got a signal")
    for run in runs:
        done = sum(1 for trial in run.trials.values() if trial.state == "finished")
        click.echo(
            f"run {run.run_id} stopped with {done} of {len(run.trials)} trials finished; "
            f"finish it with: skillsbench-agentbeats run --resume {run.run_id} "
            f"--jobs-dir {settings.jobs_dir}",
            err=True,
        )
