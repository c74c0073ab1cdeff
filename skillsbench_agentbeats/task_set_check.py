"""``skillsbench-agentbeats task-set check``: the quality gate a task set passes before it is
published (Terminal-Bench's): every task loads, builds, its oracle passes and ``nop`` does not.

It runs the oracle and ``nop`` on every task through the worker engine in this process, in the
chosen environment, and prints one row per task with a verdict and its reason:

* ``ok``: the oracle earns reward 1 and ``nop`` does not.
* ``oracle fails``: the oracle's solution does not pass the task's own tests.
* ``nop passes``: doing nothing passes (the tests check too little).
* ``infra``: a trial could not be graded (the image did not build, the sandbox did not start, the
  verifier left no reward, ...).
* ``invalid``: the task folder does not load (task.toml, layout).
* ``needs docker`` / ``unsupported``: the chosen environment cannot run the task right (the
  local sandbox and a test.sh that runs ``apt-get``, say), found before anything runs; the
  summary says how many tasks the environment can run.
* ``no metadata``: everything above is fine, but ``task.toml [metadata]`` lacks ``category`` or
  ``difficulty``, which a task needs to enter a task set (the leaderboard groups by them). The
  oracle and ``nop`` still run: a plain ``run`` does not need them.

The ``task-set`` group is the task_sets component's; this module adds ``check`` to it, since the
check needs the worker (task_sets may not import it) and wiring the two is the composition root's
job. Heavy imports stay inside the command, so ``task-set digest`` stays light.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import click

from serving.output import prepare_output_file
from task_sets.cli import task_set
from worker.sandbox.settings import base_image_map_option
from worker.service.cli import environment_option, task_cache_option

REPORT_SCHEMA_VERSION: Final = "skillsbench.agentbeats.task_set_check.v1"
AGENTS: Final = ("oracle", "nop")
# Failure kinds that mean the task's sandbox never came up (the "builds" column says "no").
_NOT_BUILT: Final = frozenset(
    {"sandbox_build", "sandbox_config", "sandbox_start", "sandbox_unsupported"}
)


@dataclass
class TaskCheck:
    task_id: str
    loads: bool
    builds: bool | None = None  # None: not tried (the task did not load)
    oracle_reward: float | None = None  # None: not graded
    nop_reward: float | None = None
    verdict: str = "ok"
    reason: str = ""
    refused: bool = False  # the environment refuses it before anything runs (``reason`` says why)
    oracle_trial_id: str | None = None
    nop_trial_id: str | None = None
    missing_metadata: list[str] = field(default_factory=list)  # [metadata] keys a set needs


@task_set.command(name="check")
@click.argument(
    "tasks_dir", required=False, type=click.Path(path_type=Path, file_okay=False), default=None
)
@click.option("--task-set", "task_set_name", default=None, help="Check this task set's tasks.")
@task_cache_option()
@click.option("--task-id", "task_ids", multiple=True, help="Check these tasks (repeatable).")
@environment_option()
@base_image_map_option()
@click.option("--concurrency", type=int, default=None, help="Trials at once (default: cores).")
@click.option(
    "--jobs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("jobs/check"),
    show_default=True,
)
@click.option(
    "--json-report",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write the report as JSON here.",
)
def check(
    tasks_dir: Path | None,
    task_set_name: str | None,
    task_cache: Path | None,
    task_ids: tuple[str, ...],
    environment: str,
    base_image_map: dict[str, str],
    concurrency: int | None,
    jobs_dir: Path,
    json_report: Path | None,
) -> None:
    """Run the oracle and nop on every task of TASKS_DIR (or a task set): exit 1 unless every
    task loads, builds, passes with the oracle and fails with nop."""
    from worker.runs.catalog import check_task_folders, resolve_tasks_dir, selected_manifest
    from worker.service.cli import concurrency_or_cores

    folder = resolve_tasks_dir(tasks_dir, task_set_name, task_cache)
    if tasks_dir is None and task_set_name is not None:  # say how to get a published set's tasks
        check_task_folders(
            selected_manifest(folder, task_set_name, task_ids), folder, task_set_name
        )
    checks, manifest = _load(folder, task_set_name, task_ids, environment, base_image_map)
    if manifest is not None:
        rows = asyncio.run(
            _run(
                manifest,
                folder,
                jobs_dir,
                environment,
                concurrency_or_cores(concurrency),
                base_image_map,
            )
        )
        for item in checks:
            if item.loads and item.task_id in rows["oracle"]:
                _judge(item, rows["oracle"][item.task_id], rows["nop"][item.task_id])
                _judge_metadata(item)
    click.echo(report_table(checks, environment))
    ok = all(item.verdict == "ok" for item in checks)
    if json_report is not None:
        document = {
            "schema_version": REPORT_SCHEMA_VERSION,
            "tasks_dir": str(folder),
            "task_set": manifest["task_set"] if manifest else task_set_name,
            "environment": environment,
            "ok": ok,
            "tasks": [asdict(item) for item in checks],
        }
        prepare_output_file(json_report, "--json-report")
        json_report.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        click.echo(f"report written to {json_report}")
    if not ok:
        sys.exit(1)


def _load(
    folder: Path,
    task_set_name: str | None,
    task_ids: tuple[str, ...],
    environment: str,
    base_image_map: dict[str, str] | None = None,
) -> tuple[list[TaskCheck], dict[str, Any] | None]:
    """A check per selected task (the ones that do not load, or that the environment refuses,
    already judged), and the manifest of the tasks to run (None when there is none)."""
    from dataclasses import replace

    from task_sets.excluded import excluded_reason
    from task_sets.manifest import build_manifest, missing_metadata
    from task_sets.task import TaskError, discover_tasks, load_task
    from worker.runs.catalog import selected_manifest
    from worker.sandbox import sandbox_class
    from worker.sandbox.settings import PrebuiltImages

    found = discover_tasks(folder)
    if task_set_name is not None:
        document = selected_manifest(folder, task_set_name, task_ids)
        wanted = [entry["task_id"] for entry in document["tasks"]]
    elif task_ids:
        wanted = list(task_ids)
    else:
        wanted = [tid for tid in found if excluded_reason(tid, folder) is None]
    if not wanted:
        raise ValueError(f"{folder}: no tasks to check")
    backend = sandbox_class(environment)
    lenient = replace(PrebuiltImages.from_env(bases=base_image_map), required=False)
    checks = []
    for tid in wanted:
        try:
            if tid not in found:
                raise TaskError(f"{folder}: no task folder {tid!r} (a direct child with task.toml)")
            loaded_task = load_task(found[tid])
        except TaskError as exc:
            checks.append(TaskCheck(tid, loads=False, verdict="invalid", reason=str(exc)))
            continue
        item = TaskCheck(tid, loads=True, missing_metadata=missing_metadata(loaded_task))
        checks.append(item)
        try:  # what the sandbox refuses before anything runs: said now, nothing started
            backend.config_type.from_task(
                loaded_task, with_skills=loaded_task.skills_dir is not None, prebuilt=lenient
            )
        except ValueError as exc:
            refusal = str(exc)
            item.verdict = (
                "needs docker" if "needs the docker environment" in refusal else ("unsupported")
            )
            item.reason, item.refused = refusal, True
    loaded = [item.task_id for item in checks if item.loads and not item.refused]
    if not loaded:
        return checks, None
    if task_set_name is not None:
        document["tasks"] = [entry for entry in document["tasks"] if entry["task_id"] in loaded]
        return checks, document
    # Tasks without [metadata] still run (their verdict says what a task set would need).
    return checks, build_manifest(
        folder, "local", task_ids=loaded, require_metadata=False
    ).document()


async def _run(
    manifest: dict[str, Any],
    folder: Path,
    jobs_dir: Path,
    environment: str,
    concurrency: int,
    base_image_map: dict[str, str] | None = None,
) -> dict[str, dict[str, dict[str, Any]]]:
    """The oracle's and nop's rows (with their reasons), by agent, then by task id."""
    from skillsbench_agentbeats.progress import ProgressView
    from worker.api import EVENT_END, EVENT_ROW, RunRequest, RunTask
    from worker.runs.engine import Engine, EngineSettings
    from worker.sandbox.settings import PrebuiltImages

    engine = Engine(
        EngineSettings(
            jobs_dir=jobs_dir,
            tasks_dir=folder,
            environment=environment,
            concurrency=concurrency,
            prebuilt=PrebuiltImages.from_env(bases=base_image_map),
        )
    )
    await engine.start(resume=False)
    runs: dict[str, str] = {}
    view = ProgressView(len(AGENTS) * len(manifest["tasks"]))

    async def follow(agent: str, run_id: str) -> None:
        async for name, data in engine.events(run_id):
            if name == EVENT_ROW:
                view.row(f"{agent} {data['trial_key']}", data["row"], data.get("reason"))
            elif name == EVENT_END:
                return

    try:
        for agent in AGENTS:
            request = RunRequest(
                config={
                    "task_set": manifest["task_set"],
                    "condition": manifest.get("condition", "with_skills"),
                    "num_instances": 1,
                },
                task_set=manifest["task_set"],
                task_set_digest=manifest["task_set_digest"],
                tasks=[RunTask.model_validate(entry) for entry in manifest["tasks"]],
                agent=agent,
                manifest=manifest,
            )
            runs[agent] = (await engine.submit(request)).run_id
        view.draw()
        await asyncio.gather(*(follow(agent, run_id) for agent, run_id in runs.items()))
        done = [engine.get(run_id) for run_id in runs.values()]
    except asyncio.CancelledError:
        for run_id in runs.values():
            await engine.cancel(run_id)
        raise
    finally:
        view.close()
        await engine.close()
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for agent, record in zip(runs, done, strict=True):
        rows[agent] = {}
        for trial in record.trials.values():
            assert trial.row is not None
            current = trial.current
            rows[agent][trial.task_id] = {
                **trial.row,
                "failure": trial.failure,
                "reason": current.reason if current is not None else None,
            }
    return rows


def _judge(item: TaskCheck, oracle: dict[str, Any], nop: dict[str, Any]) -> None:
    item.oracle_trial_id, item.nop_trial_id = oracle["trial_id"], nop["trial_id"]
    item.builds = oracle["failure"] not in _NOT_BUILT or nop["failure"] not in _NOT_BUILT
    if oracle["score_eligible"]:
        item.oracle_reward = oracle["reward"]
    if nop["score_eligible"]:
        item.nop_reward = nop["reward"]
    infra = [
        f"{agent}: {row['reason'] or row['infra_failure_type']}"
        for agent, row in (("oracle", oracle), ("nop", nop))
        if not row["score_eligible"]
    ]
    if infra:
        item.verdict, item.reason = "infra", "; ".join(infra)
    elif not oracle["passed"]:
        item.verdict = "oracle fails"
        item.reason = f"oracle reward {oracle['reward']:g}: {oracle['reason'] or 'no detail'}"
        if nop["passed"]:
            item.reason += f"; nop passes too (reward {nop['reward']:g})"
    elif nop["passed"]:
        item.verdict = "nop passes"
        item.reason = f"doing nothing earns reward {nop['reward']:g}: the tests check too little"
    else:
        item.verdict, item.reason = "ok", ""


def _judge_metadata(item: TaskCheck) -> None:
    if not item.missing_metadata:
        return
    need = f"task.toml [metadata] needs {' and '.join(item.missing_metadata)} to enter a task set"
    if item.verdict == "ok":
        item.verdict, item.reason = "no metadata", need
    else:
        item.reason = f"{item.reason}; {need}"


def report_table(checks: list[TaskCheck], environment: str | None = None) -> str:
    headers = ("task", "loads", "builds", "oracle", "nop", "verdict", "reason")
    lines = [
        (
            item.task_id,
            "yes" if item.loads else "no",
            "-" if item.builds is None else "yes" if item.builds else "no",
            _reward(item.oracle_reward),
            _reward(item.nop_reward),
            item.verdict,
            item.reason,
        )
        for item in checks
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    out += [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    ]
    bad = sum(1 for item in checks if item.verdict != "ok")
    out.append(f"\n{len(checks) - bad}/{len(checks)} tasks ok" + (f", {bad} not ok" if bad else ""))
    refused = [item for item in checks if item.verdict in ("needs docker", "unsupported")]
    if refused and environment is not None:
        runnable = sum(1 for item in checks if item.loads) - len(refused)
        need_docker = sum(1 for item in refused if item.verdict == "needs docker")
        out.append(
            f"the {environment} environment can run {runnable} of {len(checks)} tasks"
            + (f"; {need_docker} need the docker environment" if need_docker else "")
            + (f"; {len(refused) - need_docker} unsupported" if len(refused) > need_docker else "")
        )
    return "\n".join(out)


def _reward(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
