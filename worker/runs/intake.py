"""A request's way in: the checks before a run is accepted (admission's rules, its tasks known,
no image build where none may be, the agent resolvable and ready) and the new run's record with
its worker metadata."""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import Any

from worker.agents.base import Agent
from worker.agents.registry import resolve_agent
from worker.api import RunRequest
from worker.runs.admission import check_request
from worker.runs.catalog import TaskCatalog
from worker.runs.meta import worker_meta
from worker.runs.records import RunRecord, TrialRecord, trial_key
from worker.runs.settings import EngineSettings
from worker.sandbox.base import SandboxError, sandbox_class
from worker.sandbox.resources import unenforced_line
from worker.sandbox.settings import build_refusal
from worker.trial_record.trajectory import utc_now

log = logging.getLogger(__name__)


class Intake:
    def __init__(self, settings: EngineSettings, catalog: TaskCatalog) -> None:
        self.settings = settings
        self.catalog = catalog

    def prepare(self, request: RunRequest) -> Agent:
        """Check a request before accepting it: UnknownTask, or ValueError naming the problem
        (:class:`~worker.runs.admission.Rejected` with its field for the rules its rows will meet)."""
        check_request(request)
        for task in request.tasks:
            self.catalog.get(task.task_id)  # loads (and caches) the task, or raises UnknownTask
        if not self.settings.prebuilt.builds:
            self._refuse_builds(request)
        spec = request.agent
        if spec is None:
            if "agent" not in request.participants:
                raise ValueError("agent: no agent given and no participants.agent to bridge to")
            spec = "a2a"
        try:
            agent = resolve_agent(spec)
            # e.g. a manifest's requires_env unset: refused here, before any trial starts.
            agent.check_ready(request.usage.agent_env if request.usage else {})
        except ValueError as exc:
            raise ValueError(f"agent: {exc}") from None
        return agent

    def _refuse_builds(self, request: RunRequest) -> None:
        """Where no task image may be built (``SKILLSBENCH_WORKER_BUILDS=never``, as under Amber):
        ValueError naming every task whose sandbox would need a build, before the run starts."""
        backend = sandbox_class(self.settings.environment)
        lenient = replace(self.settings.prebuilt, required=False)
        configs = []
        for run_task in request.tasks:
            task = self.catalog.get(run_task.task_id)
            with_skills = request.condition != "without_skills" and task.skills_dir is not None
            configs.append(
                backend.config_type.from_task(task, with_skills=with_skills, prebuilt=lenient)
            )
        try:
            missing = backend.unbuilt_images(configs)
        except SandboxError as exc:
            raise ValueError(f"cannot tell whether the task images exist: {exc}") from None
        if missing:
            raise ValueError(build_refusal(missing))

    def new_run(self, request: RunRequest) -> RunRecord:
        """The checked request's run: a queued trial per task and instance (CPU and disk work:
        call it off the event loop)."""
        agent = self.prepare(request)
        now = utc_now()
        run_id = f"run-{uuid.uuid4().hex[:16]}"
        trials: dict[str, TrialRecord] = {}
        for instance in range(request.num_instances):
            for task in request.tasks:
                key = trial_key(task.task_id, instance)
                trials[key] = TrialRecord(key=key, task_id=task.task_id, instance=instance)
        run = RunRecord(
            run_id=run_id,
            created_at=now,
            updated_at=now,
            request=request,
            agent=agent.spec,
            trials=trials,
            worker_meta=worker_meta(
                request,
                environment=self.settings.environment,
                concurrency=self.settings.concurrency,
                agent=agent.spec,
                env=self.settings.env,
                resource_limits=self._resource_limits(run_id),
                base_image_map=self.settings.prebuilt.bases,
            ),
        )
        return run

    def _resource_limits(self, run_id: str) -> dict[str, Any]:
        """The run's resource settings and how each limit is enforced here; a limit that cannot
        be is said once, at the run's start (logged, and kept as ``warning`` for ``run``)."""
        environment = self.settings.environment
        mechanisms = sandbox_class(environment).limit_mechanisms()
        warning = unenforced_line(environment, mechanisms)
        if warning:
            log.warning("run %s: %s", run_id, warning)
        return {
            **self.settings.resources.as_dict(),
            "enforced": mechanisms,
            "warning": warning,
            "changed": {},
        }
