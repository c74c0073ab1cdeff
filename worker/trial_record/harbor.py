"""Harbor's keys and layout, so Harbor's models and viewer read our jobs folders.

Harbor 0.25 (PyPI ``harbor``) lays a job out as ``<jobs>/<job>/<trial>/``: ``harbor view JOBS``
takes every folder of ``JOBS`` for a job (its ``config.json`` a ``JobConfig``, its optional
``result.json`` a ``JobResult``) and every folder of a job holding a ``config.json`` or a
``result.json`` for a trial, whose ``result.json`` must validate as Harbor's ``TrialResult``
(``harbor/models/trial/result.py``; unknown keys are ignored). Ours is
``<jobs>/runs/<run_id>/trials/<trial_id>/``, so:

* ``harbor view <jobs>/runs`` is pointed at the runs: each run folder is a job, with a
  ``config.json`` (:func:`job_config`) and, per trial, a relative link
  ``<run_id>/<trial_id> -> trials/<trial_id>`` (:func:`link_trial`); the trial folders stay where
  every reader of ours finds them, and the link resolves inside the run folder, as Harbor's
  viewer requires of a trial's files. Walkers that do not follow links to folders (BenchFlow's
  ``rglob``, ours) see each trial once.
* ``harbor view <jobs>`` finds the runs too, through a relative link ``<jobs>/<run_id> ->
  runs/<run_id>`` per run (without one, Harbor cannot even tell the folder holds jobs). It also
  lists ``runs`` and ``private-proof`` as jobs without trials: Harbor takes every folder of the
  folder it is given for a job (hidden ones too) and has no way to be told otherwise, and both
  must stay folders (every reader of ours and the proof's settings name them).
* No job-level ``result.json``: BenchFlow's result walk takes a ``result.json`` below another one
  for an artifact of it, so one in the run folder would hide every trial from
  ``bench eval metrics``. Harbor's viewer lists a job without it (no totals on the jobs page).
* A trial's ``result.json`` gets :func:`trial_fields`. ``task_id`` becomes Harbor's task id object
  (``{"path": <task id>}``, a ``LocalTaskId`` whose name is the task id, as Harbor records a task
  given by name); the id itself stays in ``task_name`` (BenchFlow's) and ``config.json``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from worker.core.failures import FailureKind
from worker.core.files import write_atomic
from worker.trial_record.result import TrialResult

log = logging.getLogger(__name__)

JOB_CONFIG_FILE: Final = "config.json"  # in the run folder: Harbor's JobConfig
TRIALS_DIRNAME: Final = "trials"
# Harbor's environment types that are ours too (``harbor.models.environment_type``).
_HARBOR_ENVIRONMENTS: Final = frozenset({"docker"})


def _environment(name: str) -> dict[str, str]:
    """Harbor's ``EnvironmentConfig`` of our sandbox backend ``name``: its own type where Harbor
    has one; else named by ``import_path`` (Harbor takes an environment with neither for docker;
    a reader never imports it)."""
    if name in _HARBOR_ENVIRONMENTS:
        return {"type": name}
    return {"import_path": f"skillsbench-agentbeats:{name}"}


_ID_NAMESPACE: Final = uuid.UUID("7d1f6a52-3c1e-4f0b-9a8e-5b2d9c4e6f10")


def trial_uuid(run_id: str, trial_id: str) -> str:
    """Harbor's ``id``: a UUID, the same every time for the same trial."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{run_id}/{trial_id}"))


def _model_info(model: str | None) -> dict[str, str | None] | None:
    if not model:
        return None
    provider, _, name = model.rpartition("/")
    return {"name": name, "provider": provider or None}


def _agent_version(agent_result: Mapping[str, Any]) -> str:
    details = agent_result.get("details")
    info = details.get("agent_info") if isinstance(details, Mapping) else None
    version = info.get("version") if isinstance(info, Mapping) else None
    return version if isinstance(version, str) else ""


def trial_fields(
    *,
    run_id: str,
    task_id: str,
    trial_id: str,
    trial_dir: Path,
    task_set: str,
    task_digest: str | None,
    agent_name: str,
    model: str | None,
    environment: str,
    rewards: dict[str, Any] | None,
    failure: FailureKind | None,
    error: str | None,
    finished_at: str,
    agent_result: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The keys Harbor's ``TrialResult`` requires (or reads) and ours lacks, with its meaning.

    ``rewards`` is BenchFlow's (``{"reward": x}``, ``None`` for an infrastructure failure), so
    Harbor's ``verifier_result.rewards`` says the same; a trial that is not scored carries its
    failure as ``exception_info``, which Harbor counts as an errored trial."""
    model_info = _model_info(model)
    return {
        "id": trial_uuid(run_id, trial_id),
        "task_id": {"path": task_id},
        "trial_name": trial_id,
        "trial_uri": trial_dir.absolute().as_uri(),
        "source": task_set,
        "task_checksum": task_digest or "",
        "config": {
            "task": {"path": task_id, "source": task_set},
            "trial_name": trial_id,
            "trials_dir": str(trial_dir.parent),
            "agent": {
                "name": agent_name,
                "model_name": model,
            },
            "environment": _environment(environment),
        },
        "agent_info": {
            "name": agent_name,
            "version": _agent_version(agent_result or {}),
            "model_info": model_info,
        },
        "verifier_result": None if rewards is None else {"rewards": rewards},
        "exception_info": None
        if rewards is not None or failure is None
        else {
            "exception_type": failure.value,
            "exception_message": error or failure.value,
            "exception_traceback": "",
            "occurred_at": finished_at,
        },
    }


def relocate(record: TrialResult, trial_dir: Path) -> None:
    """``record``'s folder keys (``trial_uri``, ``config.trials_dir``) set to ``trial_dir``: the
    Ray executor's trial ran in a node's folder and is brought back to the run's."""
    if record.trial_uri is not None:
        record.trial_uri = trial_dir.absolute().as_uri()
    if record.config is not None and "trials_dir" in record.config:
        record.config = {**record.config, "trials_dir": str(trial_dir.parent)}


def job_config(*, run_id: str, runs_dir: Path, agent_name: str, environment: str) -> dict[str, Any]:
    """The run folder's ``config.json``: Harbor's ``JobConfig`` of the run (its job name, the
    agent), so ``harbor view`` takes the runs folder for jobs and shows who ran."""
    return {
        "job_name": run_id,
        "jobs_dir": str(runs_dir),
        "agents": [{"name": agent_name}],
        "environment": _environment(environment),
    }


def link_trial(run_dir: Path, trial_id: str, config: Mapping[str, Any]) -> None:
    """``<run>/<trial_id> -> trials/<trial_id>``, the jobs folder's ``<run_id> -> runs/<run_id>``
    and (the first time) the run's job ``config.json``, where Harbor's viewer looks for jobs
    and their trials. Best effort: a jobs folder that takes no link loses
    Harbor's view, not the trial (logged)."""
    link = run_dir / trial_id
    try:
        if not (run_dir / JOB_CONFIG_FILE).exists():
            write_atomic(
                run_dir / JOB_CONFIG_FILE, json.dumps(config, indent=2).encode(), durable=False
            )
        _link(run_dir.parent.parent / run_dir.name, f"{run_dir.parent.name}/{run_dir.name}")
        _link(link, f"{TRIALS_DIRNAME}/{trial_id}")
    except OSError as exc:
        log.warning("no Harbor link for trial %s in %s: %s", trial_id, run_dir, exc)


def _link(link: Path, target: str) -> None:
    """A relative link to a folder, unless ``link`` exists (a link made before, or a name of
    the operator's: never replaced)."""
    with contextlib.suppress(FileExistsError):
        os.symlink(target, link, target_is_directory=True)
