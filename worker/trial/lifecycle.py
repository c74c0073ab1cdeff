"""One trial, start to finish: sandbox up → instruction placed → agent → agent killed → checked
for tampering → workspace hardened → tests copied in → verifier → reward → sandbox torn down.

``run_trial`` never raises for a failure of the trial itself: every failure becomes a
:class:`~worker.failures.FailureKind` in the outcome (the failure table decides what it means).
Cancellation propagates after the sandbox is stopped and ``result.json`` says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import itertools
import json
import logging
import posixpath
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from task_sets.task import Task
from worker.agents.base import Agent, AgentContext, AgentOutcome
from worker.api import RunRequest, RunTask
from worker.core.capped import CopyBudget
from worker.core.digests import content_digest
from worker.core.failures import FailureKind, SandboxEnd, plain_text, sandbox_ended, semantics
from worker.core.files import disk_full, has_space, write_atomic
from worker.core.limits import OutputCaps
from worker.sandbox.archive import remove_quietly
from worker.sandbox.base import (
    AGENT_LOGS_DIR,
    INSTRUCTION_PATH,
    SOLUTION_DIR,
    VERIFIER_LOGS_DIR,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxLimitExceeded,
    SandboxSpec,
    SandboxTampered,
    SandboxUnsupported,
    limit_exceeded,
    sandbox_class,
)
from worker.sandbox.failures import FirstStarts, failure_kind_of
from worker.sandbox.resources import HostCapacity, ResourceSettings, fit
from worker.sandbox.settings import ParticipantProxies, PrebuiltImages
from worker.trial import progress
from worker.trial.artifacts import collect, lay, run_collect_hooks
from worker.trial.regrade import (
    IMAGE_MODULES_SCRIPT,
    TEST_TIME_MODULES_SCRIPT,
    Capture,
    ImageFacts,
    apply,
    capture,
    fresh_sandbox,
    image_facts,
    install_interpreters,
)
from worker.trial.tests_report import ctrf_report_name
from worker.trial.verifier import (
    TEST_COMMAND,
    RewardError,
    harden,
    harden_and_test,
    kill_agent_processes,
    read_reward,
    snapshot_plantables,
    survivors,
    verdict_seen,
)
from worker.trial.work_product import (
    Ground,
    References,
    builds_node_project,
    builds_project,
    exclude_test_time_shadows,
    file_names,
    image_input_dirs,
    image_python_paths,
    input_dirs,
    installed_modules,
    module_paths,
    names_of_tests,
    node_script_folders,
    pycache_isolated,
    references,
    skill_places,
    start_folders,
    verifier_outputs,
)
from worker.trial_record import harbor
from worker.trial_record.benchflow import benchflow_fields
from worker.trial_record.paths import (
    ARTIFACTS_DIR,
    CONFIG_FILE,
    RESULT_FILE,
    TIMING_FILE,
    VERIFIER_STDOUT_FILE,
)
from worker.trial_record.public_row import build_row
from worker.trial_record.result import TrialResult
from worker.trial_record.trajectory import TrajectoryRecorder, utc_now
from worker.usage.trial import TrialUsage

log = logging.getLogger(__name__)

AGENT_GRACE_SEC = 10.0  # backstop over the agent's own timeout handling
STOP_TIMEOUT_SEC = 60.0
ABORT_WAIT_SEC = 15.0  # how long an aborted body or agent may take to unwind
SETUP_BUDGET_SEC = 300.0  # sandbox start + placement + teardown, on top of the task's budgets
TAMPER_EVIDENCE_MAX = 100  # changed paths kept in result.json (all of them are counted)
REGRADE_SETUP_SEC = 120.0  # a fresh sandbox's start and the work product laid on it


@dataclass(frozen=True)
class TrialPlan:
    run_id: str
    key: str
    instance: int
    attempt: int
    trial_id: str
    trial_dir: Path
    task: Task
    run_task: RunTask
    request: RunRequest
    agent: Agent
    environment: str
    prebuilt: PrebuiltImages | None = None
    owner: str = ""  # the worker's identity (SandboxSpec.owner)
    proxies: ParticipantProxies = field(default_factory=ParticipantProxies)
    caps: OutputCaps = field(default_factory=OutputCaps)
    first_starts: FirstStarts | None = None  # the run's: a broken image is built once per run
    resources: ResourceSettings = field(default_factory=ResourceSettings)  # process cap, overrides

    @property
    def with_skills(self) -> bool:
        return self.request.condition != "without_skills"

    def deadline_sec(self) -> float:
        """Hard wall-clock budget of the whole trial (beyond it: worker_timeout)."""
        cfg = self.task.config
        separate = self.task.separate_verifier()
        return (
            cfg.agent.timeout_sec
            + AGENT_GRACE_SEC
            + cfg.verifier.timeout_sec
            + cfg.environment.build_timeout_sec
            + SETUP_BUDGET_SEC
            # a pass graded again on a fresh sandbox (worker/trial/regrade.py), or a separate
            # verifier's own sandbox (its image may need a build)
            + cfg.verifier.timeout_sec
            + REGRADE_SETUP_SEC
            + (separate.config.environment.build_timeout_sec if separate is not None else 0.0)
        )


@dataclass
class TrialOutcome:
    """What the engine records of an attempt; the rest is in the trial's result.json."""

    failure: FailureKind | None
    error: str | None
    row: dict[str, Any]
    reason: str | None = None  # why the trial did not pass, in one line (None when it passed)
    # How the trial's cpus/memory differ from the task's (capped to the host, overridden).
    resource_changes: list[dict[str, Any]] = field(default_factory=list)


# The phases of the timing told to the engine as they start (worker/trial/progress.py); the
# sandbox's start tells its two steps itself.
_TOLD: Final = {
    "agent_setup": "agent_setup",
    "agent_execution": "agent_running",
    "verifier": "verifying",
    "regrade": "regrading",
    "teardown": "tearing_down",
}


class _Phases:
    """Wall time per phase, in seconds (and each phase told to the engine as it starts)."""

    def __init__(self) -> None:
        self.timing: dict[str, float] = {}
        self.spans: list[tuple[str, int, int]] = []  # (phase, start ns, end ns), for the trace

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        told = _TOLD.get(name)
        if told is not None:
            progress.tell(told)
        start = time.monotonic()
        start_ns = time.time_ns()
        try:
            yield
        finally:
            self.timing[name] = round(self.timing.get(name, 0.0) + time.monotonic() - start, 3)
            self.spans.append((name, start_ns, time.time_ns()))


class _Failed(Exception):
    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Tampered(_Failed):
    """The tamper look found changes to what the verifier runs (:class:`SandboxTampered`)."""

    def __init__(self, message: str, evidence: list[dict[str, str]]) -> None:
        super().__init__(FailureKind.VERIFIER_TAMPERED, message)
        self.evidence = evidence


def build_prompt(task: Task, skills_dir: str | None) -> str:
    prefix = task.config.agent.prompt_prefix
    prompt = (f"{prefix.rstrip()}\n\n" if prefix else "") + task.instruction.rstrip() + "\n"
    if skills_dir:
        prompt += (
            f"\nSkills for this task are available in {skills_dir}: each skill is a folder with a "
            "SKILL.md that explains when and how to use it.\n"
        )
    return prompt


@dataclass
class _TrialState:
    """What a trial has so far; shared between its body and the supervisor that may abort it."""

    started_at: str
    skills_dir: str | None
    usage: TrialUsage  # model access, caps, usage records and the trace (worker/usage)
    phases: _Phases = field(default_factory=_Phases)
    sandbox: Sandbox | None = None
    agent_outcome: AgentOutcome | None = None
    removed_files: list[str] = field(default_factory=list)
    verifier: dict[str, Any] = field(default_factory=dict)
    stopped: bool = False
    record: TrajectoryRecorder | None = None
    logs_budget: CopyBudget | None = None
    # What the sandbox was given (worker/sandbox/resources.py), how each limit was enforced, and
    # how often what ran hit them.
    resources: dict[str, Any] = field(default_factory=dict)
    spec: SandboxSpec | None = None  # the sandbox's, for a fresh one to grade a pass again
    image: ImageFacts = field(default_factory=ImageFacts)
    capture: Capture | None = None  # the agent's work product (worker/trial/regrade.py)
    verifier_env: dict[str, str] = field(default_factory=dict)
    # Set when the agent's sandbox was not graded (its tampering all left out of the work
    # product): the image plus the work product alone decides, or the row stays tampered.
    tampered: _Tampered | None = None
    # Why the agent's sandbox gave no reward to keep (tampering, a verifier that ran past its
    # timeout there): the image plus the work product alone decides.
    fresh_only: str | None = None
    regrade_source: str | None = None  # the reward file the regrade's reward came from
    # The regrade's verifier ran past its time or wrote no reward (then, graded on the image
    # plus the work product only, the task's verifier is at fault as much as the agent).
    regrade_failure: FailureKind | None = None
    # A separate verifier's sandbox: what differs from the agent's spec (its config, network,
    # env), for regrade.fresh_sandbox (worker/trial/artifacts.py).
    separate_spec: dict[str, Any] | None = None


async def run_trial(plan: TrialPlan) -> TrialOutcome:
    """Run one trial attempt; the outcome carries the row, result.json is written.

    The body runs as its own task under a supervisor that owns the hard deadline and
    cancellation: on either it stops the sandbox first (which kills whatever the body is
    waiting on) and only then cancels the body, so an abort never waits on a stuck process.

    A jobs folder that is full when the trial writes its own records ends the attempt as
    ``jobs_disk_full`` (infrastructure: the scheduler tries it again once space returns), with
    result.json when it could still be written.
    """
    try:
        return await _supervise(plan)
    except OSError as exc:
        if not await _jobs_disk_full(plan, exc):
            raise
        return _disk_full_outcome(plan, exc)


async def _jobs_disk_full(plan: TrialPlan, exc: BaseException) -> bool:
    """Whether ``exc`` came of a full disk and the jobs folder is full now (not a sandbox's own
    storage, which is the agent's to fill)."""
    if not disk_full(exc):
        return False
    try:
        return not await asyncio.to_thread(has_space, plan.trial_dir.parents[1])
    except OSError:
        return True  # cannot even look: the disk said it was full


def _disk_full_message(exc: BaseException) -> str:
    return f"the worker's jobs folder is full ({exc}); tried again once space returns"


def _disk_full_outcome(plan: TrialPlan, exc: BaseException) -> TrialOutcome:
    """The outcome of an attempt whose records could not be written (no result.json)."""
    error = plain_text(_disk_full_message(exc))
    row = build_row(
        plan.request,
        plan.run_task,
        trial_id=plan.trial_id,
        agent_transport=plan.agent.kind,
        reward=None,
        failure=FailureKind.JOBS_DISK_FULL,
        time_used=None,
    )
    reason = _one_line(f"{FailureKind.JOBS_DISK_FULL.value}: {error}")
    return TrialOutcome(failure=FailureKind.JOBS_DISK_FULL, error=error, row=row, reason=reason)


async def _supervise(plan: TrialPlan) -> TrialOutcome:
    trial_dir = plan.trial_dir
    for sub in ("agent", "verifier", "trajectory"):
        (trial_dir / sub).mkdir(parents=True, exist_ok=True)
    task = plan.task
    skills_dir = task.skills_sandbox_dir if plan.with_skills and task.skills_dir else None
    usage = TrialUsage(plan.agent, plan.request.usage, plan.trial_id, plan.environment)
    state = _TrialState(started_at=utc_now(), skills_dir=skills_dir, usage=usage)
    _write_json(
        trial_dir / CONFIG_FILE,
        {**_config_doc(plan, skills_dir, state.started_at), **usage.config_fields()},
    )
    body = asyncio.create_task(_trial_body(plan, state), name=f"trial body {plan.trial_id}")
    try:
        done, _ = await asyncio.wait({body}, timeout=plan.deadline_sec())
    except asyncio.CancelledError:
        await _abort(body, state)
        try:
            _finish(plan, state, None, None, FailureKind.WORKER_CANCELLED, "the run was cancelled")
        except OSError as exc:  # the cancel goes on: its result.json is best effort
            log.warning("result.json of cancelled trial %s not written: %s", plan.trial_id, exc)
        raise
    if not done:
        await _abort(body, state)
        outcome = _finish(
            plan,
            state,
            None,
            None,
            FailureKind.WORKER_TIMEOUT,
            f"trial exceeded its hard deadline of {plan.deadline_sec():.0f}s",
        )
        await state.usage.export_trace()  # the trials most worth a look reach the collector too
        return outcome
    return body.result()


async def _abort(body: asyncio.Task[TrialOutcome], state: _TrialState) -> None:
    body.cancel()
    if state.sandbox is not None:
        with state.phases.phase("teardown"):
            await _stop(state.sandbox, state)
    await asyncio.wait({body}, timeout=ABORT_WAIT_SEC)


async def _trial_body(plan: TrialPlan, state: _TrialState) -> TrialOutcome:
    task = plan.task
    cfg = task.config
    skills_dir = state.skills_dir
    phases = state.phases
    record = TrajectoryRecorder(plan.trial_dir, plan.caps)
    state.record = record
    reward: float | None = None
    reward_source: str | None = None
    failure: FailureKind | None = None
    error: str | None = None
    try:
        backend = sandbox_class(plan.environment)
        try:
            config = backend.config_type.from_task(
                task, with_skills=skills_dir is not None, prebuilt=plan.prebuilt
            )
        except ValueError as exc:
            raise _Failed(FailureKind.SANDBOX_UNSUPPORTED, str(exc)) from None
        try:
            capacity = await backend.host_capacity()
        except SandboxError as exc:
            raise _Failed(failure_kind_of(exc), str(exc)) from None
        # Requests above the host are capped, the operator's overrides applied: recorded.
        fitted = fit(config.cpus, config.memory_mb, plan.resources, capacity)
        config = dataclasses.replace(config, cpus=fitted.cpus, memory_mb=fitted.memory_mb)
        state.resources = {**fitted.as_dict(), "enforced": backend.limit_mechanisms()}
        prompt = build_prompt(task, skills_dir)
        spec = SandboxSpec(
            config=config,
            run_id=plan.run_id,
            trial_id=plan.trial_id,
            state_dir=plan.trial_dir / "sandbox",
            internet=cfg.environment.internet or state.usage.needs_host_network(),
            env=dict(cfg.environment.env),
            files=_task_files(plan, prompt),
            owner=plan.owner,
            pids_limit=fitted.pids_limit,
        )
        state.spec = spec
        if (verifier_task := task.separate_verifier()) is not None:
            state.separate_spec = _separate_spec(plan, backend, verifier_task, capacity)
        with phases.phase("environment_setup"):
            try:

                async def start_sandbox() -> None:
                    progress.tell("building")
                    await backend.task_init(spec)
                    progress.tell("starting_sandbox")
                    state.sandbox = backend(spec)
                    await state.sandbox.start()

                progress.tell("building")  # or waiting for another trial's build of it
                if plan.first_starts is not None:
                    await plan.first_starts.start(task.task_id, start_sandbox)
                else:
                    await start_sandbox()
                sandbox = state.sandbox
                assert sandbox is not None
            except SandboxError as exc:  # the failure table says which are worth another try
                raise _Failed(failure_kind_of(exc), str(exc)) from None
            except OSError as exc:  # talking to the engine failed (a timeout, a reset): transient
                raise _Failed(FailureKind.SANDBOX_START, f"{type(exc).__name__}: {exc}") from None
        with phases.phase("agent_setup"):
            snapshot = await _infra(_snapshot(plan, sandbox, skills_dir))
            state.image = await _image_facts(plan, sandbox)
        state.agent_outcome = agent_outcome = await _run_agent(
            plan, sandbox, prompt, skills_dir, record, phases, state.usage, state
        )
        # Whatever the agent's command returned (a kill from outside ends it with 137 like an
        # agent that kills itself): a sandbox that ended under it is not the agent's result.
        await _still_running(sandbox, state, f"the agent's run ({_agent_summary(agent_outcome)})")
        if agent_outcome.failure in (FailureKind.OOM, FailureKind.PIDS_LIMIT):
            # The agent died of its limits: like any limit hit, the verifier does not run.
            raise _Failed(agent_outcome.failure, agent_outcome.message or "limit hit")
        if (
            agent_outcome.failure is not None
            and not semantics(agent_outcome.failure).score_eligible
        ):
            if agent_outcome.failure in _PARTICIPANT_FAILURES:
                # The row is not scored, but the verifier still grades what the agent left, so
                # the private record shows how far the participant got before it failed.
                with phases.phase("verifier"):
                    try:
                        reward, reward_source = await _grade(
                            plan, sandbox, snapshot, state, agent_outcome
                        )
                    except _Failed as exc:
                        state.verifier["error_after_participant_failure"] = str(exc)
            raise _Failed(agent_outcome.failure, agent_outcome.message or "agent failed")
        with phases.phase("verifier"):
            reward, reward_source = await _grade(plan, sandbox, snapshot, state, agent_outcome)
        if state.fresh_only is not None:
            with phases.phase("regrade"):
                reward = await _regrade(plan, state, snapshot, None)
            if not reward and state.tampered is not None:
                raise state.tampered
            if state.regrade_failure is not None:
                # It failed the same way on the image plus the work product. If the verifier
                # ends and writes a reward on the image alone, the work product made it hang
                # (graded code that never returns): a fail, scored. If not, it is the task's
                # verifier (one that never writes a reward, or hangs whatever it grades).
                with phases.phase("regrade"):
                    bare = await _verifier_ends_on_the_image(plan, state, snapshot)
                if not bare:
                    raise _Failed(
                        state.regrade_failure, f"{state.fresh_only}, and again on a fresh sandbox"
                    )
                regrade_doc = state.verifier.setdefault("regrade", {})
                regrade_doc.setdefault("notes", []).append(
                    f"{state.regrade_failure.value} on the image plus the work product, while "
                    "the verifier ends with a reward on the image alone: the work product's "
                    "doing, scored 0"
                )
                regrade_doc["reward"] = reward = 0.0
            reward_source = state.regrade_source
        elif reward and state.capture is not None and state.capture.candidates:
            await _test_time_shadows(state)
            with phases.phase("regrade"):
                await _image_shadows(plan, state, snapshot)
        if reward and state.fresh_only is None and state.capture is not None:
            # Every pass, not only those that left something out: what the agent's sandbox
            # still held besides its files (a process it took over, PID 1 on docker, that no
            # kill reaches and that rewrote the answer or the reward under the verifier) is not
            # in a fresh sandbox. Not part of the verifier's time (the row's time_used).
            with phases.phase("regrade"):
                reward = await _regrade(plan, state, snapshot, reward)
        if agent_outcome.status == "timeout":
            failure = FailureKind.AGENT_TIMEOUT
        elif agent_outcome.failure is FailureKind.USAGE_LIMIT:
            failure, error = FailureKind.USAGE_LIMIT, agent_outcome.message
    except _Failed as exc:
        failure, error = exc.kind, str(exc)
        # An infrastructure failure that came of the jobs folder filling up is the disk's.
        if not semantics(exc.kind).score_eligible and await _jobs_disk_full(plan, exc):
            failure, error = FailureKind.JOBS_DISK_FULL, _disk_full_message(exc)
    except Exception as exc:
        if await _jobs_disk_full(plan, exc):
            failure, error = FailureKind.JOBS_DISK_FULL, _disk_full_message(exc)
        else:  # a bug in the worker, not the agent's fault
            log.exception("trial %s crashed", plan.trial_id)
            failure, error = FailureKind.WORKER_ERROR, f"{type(exc).__name__}: {exc}"
    finally:
        if state.sandbox is not None and not state.stopped:
            with phases.phase("teardown"):
                await _stop(state.sandbox, state)
        if state.capture is not None and state.capture.archive is not None:
            # The work product's tar is read by a regrade only (which removes it); a trial that
            # failed, scored 0 or needed none must not keep up to the storage cap of it.
            remove_quietly(state.capture.archive)
    outcome = _finish(plan, state, reward, reward_source, failure, error)
    await state.usage.export_trace()
    return outcome


_PARTICIPANT_FAILURES = frozenset(
    {
        FailureKind.PARTICIPANT_COMMUNICATION,
        FailureKind.PARTICIPANT_TIMEOUT,
        FailureKind.PARTICIPANT_ERROR,
    }
)


async def _infra(awaitable: Awaitable[str]) -> str:
    """Sandbox errors between start and verifier mean the sandbox went away under us."""
    try:
        return await awaitable
    except SandboxUnsupported as exc:
        raise _Failed(FailureKind.SANDBOX_UNSUPPORTED, str(exc)) from None
    except SandboxError as exc:
        raise _Failed(FailureKind.SANDBOX_LOST, str(exc)) from None


# Plantable-file snapshots of fresh sandboxes: identical for every trial of a task in one
# environment, so taken once per (environment, task image, skills dir) and reused.
_SNAPSHOTS: dict[tuple[str, str, str | None], str] = {}


def _image_key(plan: TrialPlan) -> tuple[str, str]:
    """What a fresh sandbox of the task is made of: the backend, task.toml and the build
    context (by content, so a task edited under a running worker is looked at again)."""
    task = plan.task
    return (plan.environment, content_digest(task.path / "task.toml", task.environment_dir))


def _verifier_key(plan: TrialPlan) -> tuple[str, str, str]:
    """The image and the tests the verifier runs on it."""
    return (*_image_key(plan), content_digest(plan.task.tests_dir))


def _task_files(plan: TrialPlan, prompt: str) -> dict[str, Path]:
    """What the sandbox starts with: the instruction (and for the oracle the solution). Skills
    are the backend's to place (``SandboxSpec.with_skills``: baked into the image or bound)."""
    staged = plan.trial_dir / "sandbox-input"
    staged.mkdir(parents=True, exist_ok=True)
    (staged / "instruction.md").write_text(prompt, encoding="utf-8")
    files = {INSTRUCTION_PATH: staged / "instruction.md"}
    if plan.agent.needs_solution and plan.task.solution_dir is not None:
        files[SOLUTION_DIR] = plan.task.solution_dir
    return files


async def _snapshot(plan: TrialPlan, sandbox: Sandbox, skills_dir: str | None) -> str:
    """The plantable files of the fresh sandbox (what hardening keeps)."""
    key = (*_image_key(plan), skills_dir)
    if key not in _SNAPSHOTS:
        _SNAPSHOTS[key] = await snapshot_plantables(sandbox, skills_dir)
    return _SNAPSHOTS[key]


# The image's PATH and Python module names (worker/trial/work_product.py's rules), once per task.
_IMAGE_FACTS: dict[tuple[str, str], ImageFacts] = {}


async def _image_facts(plan: TrialPlan, sandbox: Sandbox) -> ImageFacts:
    key = _image_key(plan)
    if key not in _IMAGE_FACTS:
        try:
            result = await sandbox.exec(
                ["/bin/sh", "-c", IMAGE_MODULES_SCRIPT], user="0:0", timeout_sec=120
            )
        except SandboxError:
            return ImageFacts()  # not cached: the next trial looks again
        if result.exit_code != 0 or result.timed_out:
            return ImageFacts()
        _IMAGE_FACTS[key] = image_facts(result.stdout)
    return _IMAGE_FACTS[key]


@dataclass(frozen=True)
class _TestsFacts:
    """What a task's tests/ tells the work product rule (read once per task folder)."""

    extra_starts: tuple[str, ...]
    module_paths: tuple[str, ...]
    pycache_isolated: bool
    builds_project: bool
    builds_node_project: bool
    installed_modules: frozenset[str]
    input_dirs: tuple[str, ...]
    report: str | None  # the pytest report test.sh asks for under /logs/verifier
    test_names: frozenset[str]
    test_files: frozenset[str]  # every file name of tests/
    skill_places: frozenset[str]  # the skill folders the tests name
    named: References  # what the tests name (worker/trial/work_product.py, unnamed-module)
    node_scripts: tuple[str, ...]  # folders of the tests' scripts test.sh runs with node
    script: str  # test.sh itself


_TESTS_FACTS: dict[str, _TestsFacts] = {}


def _tests_facts(task: Task) -> _TestsFacts:
    key = content_digest(task.tests_dir)
    if key not in _TESTS_FACTS:
        script = ""
        with contextlib.suppress(OSError):
            script = (task.tests_dir / "test.sh").read_text(encoding="utf-8", errors="replace")
        names: list[str] = []
        files: list[str] = []
        with contextlib.suppress(OSError):
            for found in itertools.islice(task.tests_dir.rglob("*"), 10_000):
                names.append(found.name)
                if found.is_file():
                    files.append(found.name)
        sources: list[str] = []
        with contextlib.suppress(OSError):
            for module in sorted(task.tests_dir.rglob("*.py"))[:200]:
                with contextlib.suppress(OSError):
                    sources.append(module.read_text(encoding="utf-8", errors="replace")[:1_000_000])
        named = references(script)
        places = skill_places(script)
        with contextlib.suppress(OSError):
            budget = 32_000_000
            for path in sorted(itertools.islice(task.tests_dir.rglob("*"), 10_000)):
                if budget <= 0:
                    break
                with contextlib.suppress(OSError):
                    if path.is_file() and not path.is_symlink():
                        with path.open("rb") as handle:
                            data = handle.read(min(budget, 4_000_000))
                        budget -= len(data)
                        text = data.decode("utf-8", "replace")
                        named = named | references(text, path.name)
                        places |= skill_places(text)
        _TESTS_FACTS[key] = _TestsFacts(
            extra_starts=start_folders(script),
            module_paths=module_paths(script, sources, task.config.verifier.env, file_names(files)),
            pycache_isolated=pycache_isolated(script, task.config.verifier.env),
            builds_project=builds_project(script),
            builds_node_project=builds_node_project(script),
            installed_modules=installed_modules(script),
            input_dirs=input_dirs(script, task.config.verifier.env),
            report=ctrf_report_name(script),
            test_names=names_of_tests(names),
            test_files=file_names(files),
            skill_places=places,
            named=named,
            node_scripts=node_script_folders(script, file_names(files)),
            script=script,
        )
    return _TESTS_FACTS[key]


def _ground(plan: TrialPlan, sandbox: Sandbox, state: _TrialState) -> Ground:
    """What the work product rule needs to know of this trial (worker/trial/work_product.py)."""
    facts = _tests_facts(plan.task)
    return Ground(
        workdir=sandbox.workdir,
        skills_dir=state.skills_dir,
        declared=tuple(plan.task.config.verifier.work_product),
        # relative ones (`cd scripts`, `python3 tools/check.py`) from where test.sh starts
        extra_starts=tuple(
            posixpath.normpath(posixpath.join(sandbox.workdir, f)) for f in facts.extra_starts
        ),
        module_paths=tuple(
            posixpath.normpath(posixpath.join(sandbox.workdir, f))
            for f in (*facts.module_paths, *image_python_paths(state.image.env))
        ),
        pycache_isolated=facts.pycache_isolated,
        builds_project=facts.builds_project,
        builds_node_project=facts.builds_node_project,
        image_modules=state.image.modules,
        **({"path_dirs": state.image.path_dirs} if state.image.path_dirs else {}),
        installed_modules=facts.installed_modules,
        input_dirs=tuple(
            sorted({*facts.input_dirs, *image_input_dirs(state.image.env, sandbox.workdir)})
        ),
        test_names=facts.test_names,
        test_files=facts.test_files,
        skill_places=facts.skill_places,
        named=facts.named,
        node_dirs=_node_dirs(state.image.script_dirs, facts.node_scripts, sandbox.workdir),
        verifier_outputs=verifier_outputs(facts.script, sandbox.workdir),
    )


def _node_dirs(
    image: tuple[str, ...] | None, tests: tuple[str, ...], workdir: str
) -> tuple[str, ...] | None:
    if image is None:
        return None  # the image had too many script folders to list: every folder counts
    joined = (posixpath.normpath(posixpath.join(workdir, f)) for f in tests)
    return tuple(sorted({*image, *joined}))


async def _run_agent(
    plan: TrialPlan,
    sandbox: Sandbox,
    prompt: str,
    skills_dir: str | None,
    record: TrajectoryRecorder,
    phases: _Phases,
    usage: TrialUsage,
    state: _TrialState,
) -> AgentOutcome:
    timeout = plan.task.config.agent.timeout_sec
    env = {"SKILLSBENCH_SKILLS_DIR": skills_dir} if skills_dir else {}
    participant = plan.request.participants.get("agent")
    participant_url, participant_sandbox_url = plan.proxies.resolve(
        "agent",
        participant.url if participant else None,
        participant.sandbox_url if participant else None,
    )
    ctx = AgentContext(
        sandbox=sandbox,
        task=plan.task,
        prompt=prompt,
        trial_dir=plan.trial_dir,
        timeout_sec=timeout,
        record=record,
        env=env,
        participant_url=participant_url,
        participant_sandbox_url=participant_sandbox_url,
        skills_dir=skills_dir,
        caps=plan.caps,
    )
    record({"type": "user_message", "text": prompt})
    with phases.phase("agent_execution"):
        agent_task = asyncio.create_task(
            usage.run_agent(plan.agent.run, ctx), name=f"agent {plan.trial_id}"
        )
        try:
            done, _ = await asyncio.wait({agent_task}, timeout=timeout + AGENT_GRACE_SEC)
        except asyncio.CancelledError:
            agent_task.cancel()
            raise
        if done:
            try:
                outcome = agent_task.result()
            except SandboxError as exc:
                kind = (
                    FailureKind.SANDBOX_UNSUPPORTED
                    if isinstance(exc, SandboxUnsupported)
                    else FailureKind.SANDBOX_LOST
                )
                outcome = AgentOutcome(status="failed", failure=kind, message=str(exc))
        else:
            # The agent ignored its deadline: kill what it runs (unblocks it), then cancel it.
            record(
                {"type": "agent_timeout", "reason": "wall_clock_timeout", "timeout_sec": timeout}
            )
            agent_task.cancel()
            with contextlib.suppress(SandboxError):
                await asyncio.wait_for(kill_agent_processes(sandbox), ABORT_WAIT_SEC)
            await asyncio.wait({agent_task}, timeout=ABORT_WAIT_SEC)
            outcome = AgentOutcome(status="timeout", message=f"agent ran past {timeout:.0f}s")
    if outcome.failure is not None and not semantics(outcome.failure).score_eligible:
        # An infrastructure failure may be the agent's own doing: a process the kernel killed at
        # the memory limit (an agent that died of it), forks refused at the process cap, or the
        # sandbox ending under the agent.
        exceeded = await _limits_hit(sandbox, state)
        if exceeded is not None:
            outcome.failure, outcome.message = FailureKind(exceeded.kind), str(exceeded)
        else:
            outcome.failure = await _sandbox_failure(sandbox, outcome.failure)
    outcome.n_tool_calls = max(outcome.n_tool_calls, record.n_tool_calls)
    return outcome


def _verifier_env(task: Task) -> dict[str, str]:
    # Python reads and writes its bytecode caches under a fresh folder the agent cannot have
    # seen, not in the __pycache__ folders where it could plant a compiled module.
    return {
        "PYTHONPYCACHEPREFIX": f"/tmp/skillsbench-pycache-{secrets.token_hex(8)}",
        **task.config.verifier.env,
    }


async def _grade(
    plan: TrialPlan,
    sandbox: Sandbox,
    snapshot: str,
    state: _TrialState,
    agent_outcome: AgentOutcome,
) -> tuple[float | None, str | None]:
    """The verifier in the agent's sandbox, or in a sandbox of its own (Harbor's separate
    verifier: ``state.separate_spec``)."""
    if state.separate_spec is not None:
        return await _verify_separately(plan, sandbox, state, agent_outcome)
    return await _verify(plan, sandbox, snapshot, state, agent_outcome)


def _separate_spec(
    plan: TrialPlan, backend: type[Sandbox], verifier_task: Task, capacity: HostCapacity
) -> dict[str, Any]:
    """The separate verifier's sandbox as changes to the agent's spec: its image (or build
    context), resources, network and env; nothing placed in it but the artifacts."""
    try:
        config = backend.config_type.verifier_config(verifier_task, plan.prebuilt)
    except ValueError as exc:  # from_task refused it already; here for a backend that did not
        raise _Failed(FailureKind.SANDBOX_UNSUPPORTED, str(exc)) from None
    fitted = fit(config.cpus, config.memory_mb, plan.resources, capacity)
    environment = verifier_task.config.environment
    return {
        "config": dataclasses.replace(config, cpus=fitted.cpus, memory_mb=fitted.memory_mb),
        "internet": environment.internet,
        "env": dict(environment.env),
        "pids_limit": fitted.pids_limit,
        "files": {},
    }


async def _verify_separately(
    plan: TrialPlan, sandbox: Sandbox, state: _TrialState, agent_outcome: AgentOutcome
) -> tuple[float | None, str | None]:
    """Harbor's separate verifier, on the regrade's machinery: the collect hooks and the
    artifacts taken from the agent's sandbox (worker/trial/artifacts.py), which is then
    stopped; a fresh sandbox of the verifier's image (regrade.fresh_sandbox) with the artifacts
    laid at their paths; the same hardened verifier there. No regrade follows: nothing of the
    agent's sandbox but its artifacts reaches this one."""
    task = plan.task
    doc: dict[str, Any] = {"mode": "separate"}
    state.verifier["separate"] = doc
    try:
        if task.config.verifier.collect:
            doc["collect"] = await run_collect_hooks(sandbox, task.config.verifier.collect)
        await kill_agent_processes(sandbox)
        if exceeded := await _limits_hit(sandbox, state):
            raise _Failed(FailureKind(exceeded.kind), str(exceeded))
        found = await collect(
            sandbox,
            task.config.artifact_entries,
            plan.trial_dir / ARTIFACTS_DIR,
            plan.caps.sandbox_bytes,
        )
        caps = plan.caps
        state.logs_budget = CopyBudget(caps.log_file_bytes, caps.logs_bytes, caps.logs_files)
        with contextlib.suppress(Exception):
            await sandbox.download(
                AGENT_LOGS_DIR, plan.trial_dir / "agent" / "logs", budget=state.logs_budget
            )
    except SandboxError as exc:
        kind = await _sandbox_failure(sandbox, FailureKind.VERIFIER_INFRA)
        raise _Failed(kind, f"taking the artifacts from the agent's sandbox: {exc}") from None
    doc["artifacts"] = [artifact.source for artifact, _ in found.paths]
    await _stop(sandbox, state)
    assert state.spec is not None and state.separate_spec is not None
    try:
        fresh = await fresh_sandbox(
            sandbox_class(plan.environment),
            state.spec,
            plan.trial_dir,
            role="separate-verifier",
            **state.separate_spec,
        )
    except SandboxError as exc:
        kind = failure_kind_of(exc)
        if kind is FailureKind.SANDBOX_START:
            kind = FailureKind.VERIFIER_INFRA
        raise _Failed(kind, f"the separate verifier's sandbox: {exc}") from None
    state.sandbox, state.stopped = fresh, False  # an abort stops this one now
    verifier_env = state.verifier_env = _verifier_env(task)
    host_dir = plan.trial_dir / "verifier"
    try:
        try:
            # What hardening keeps: the verifier image's own files, before any artifact.
            snapshot = await snapshot_plantables(fresh, None)
            notes = await lay(fresh, found)
            await fresh.trust_current_changes()  # the artifacts are laid by the harness
        except SandboxError as exc:
            raise _Failed(FailureKind.VERIFIER_INFRA, f"laying the artifacts: {exc}") from None
        if notes or found.notes:
            doc["notes"] = [*found.notes, *notes]
        result = await _run_verifier(plan, fresh, snapshot, state, verifier_env, host_dir)
    finally:
        await _stop(fresh, state)
    state.verifier.update(_exec_evidence(result))
    if result.timed_out:
        raise _Failed(
            FailureKind.VERIFIER_TIMEOUT,
            f"tests/test.sh ran past [verifier].timeout_sec={task.config.verifier.timeout_sec:.0f} "
            "in the separate verifier's sandbox",
        )
    if not verdict_seen(result.stdout):
        state.verifier["tampering"] = [_SHELL_KILLED]
        state.verifier["n_tampered_paths"] = 1
        raise _Failed(FailureKind.VERIFIER_TAMPERED, _SHELL_KILLED["reason"])
    try:
        reward = read_reward(host_dir, found.reward_names(), report=_tests_facts(plan.task).report)
    except RewardError as exc:
        if agent_outcome.status == "timeout":
            return 0.0, None  # the agent ran out of time and left nothing gradeable: a fail
        raise _Failed(FailureKind.VERIFIER_NO_REWARD, str(exc)) from None
    if reward.notes:
        state.verifier["reward_notes"] = list(reward.notes)
    return reward.value, reward.source


async def _verify(
    plan: TrialPlan,
    sandbox: Sandbox,
    snapshot: str,
    state: _TrialState,
    agent_outcome: AgentOutcome,
) -> tuple[float | None, str | None]:
    task = plan.task
    verifier_env = state.verifier_env = _verifier_env(task)
    ground = _ground(plan, sandbox, state)
    archive = plan.trial_dir / "regrade" / "work-product.tar"

    async def take_work_product() -> None:
        # After the kill and the tamper look, before tests/ is uploaded: nothing runs.
        # Always written (a nop's is empty): a verifier that hangs in the agent's sandbox is
        # graded again on the work product as it was before the verifier ran.
        state.capture = await capture(
            sandbox, ground, archive, plan.caps.sandbox_bytes, always_export=True
        )

    # The agent's processes die first (harden's first step); nothing it left can see tests/
    # or write a reward. A backend that can tell whether the agent changed what the verifier
    # runs (an interpreter, a shell, a library, a start-up hook) looks right after the kill
    # (SandboxTampered): then the verifier does not run in the agent's sandbox at all.
    host_dir = plan.trial_dir / "verifier"
    try:
        result = await _run_verifier(
            plan, sandbox, snapshot, state, verifier_env, host_dir, after_gate=take_work_product
        )
    except _Tampered as exc:
        await _grade_without_tampering(sandbox, ground, archive, plan, state, exc)
        return None, None
    state.verifier.update(_exec_evidence(result))
    found = state.capture
    influenced = found.reward_names if found is not None else frozenset()
    if found is not None:
        state.verifier["work_product"] = found.evidence()
    if result.timed_out:
        ran_past = (
            f"tests/test.sh ran past [verifier].timeout_sec={task.config.verifier.timeout_sec:.0f}"
        )
        if found is not None and found.archive is not None and agent_outcome.status != "timeout":
            # What hung it may be the agent's (a FIFO for an answer, a module that never
            # returns): graded on the image plus the work product instead, with twice the time,
            # where a hang again scores 0. Never an unscored row the agent could hide a fail in.
            state.fresh_only = f"{ran_past} in the agent's sandbox"
            return None, None
        raise _Failed(FailureKind.VERIFIER_TIMEOUT, ran_past)
    if not verdict_seen(result.stdout):
        # Something killed the verifier's own shell before it stopped the rest: whatever ran
        # on may have written the reward files since. Graded code's doing, not the harness's.
        state.verifier["tampering"] = [_SHELL_KILLED]
        state.verifier["n_tampered_paths"] = 1
        raise _Failed(FailureKind.VERIFIER_TAMPERED, _SHELL_KILLED["reason"])
    try:
        reward = read_reward(host_dir, influenced, report=_tests_facts(plan.task).report)
    except RewardError as exc:
        if agent_outcome.status == "timeout":
            return 0.0, None  # the agent ran out of time and left nothing gradeable: a fail
        if found is not None and found.archive is not None:
            # Something the agent left may have emptied or broken the reward files (a process
            # it took over, PID 1 on docker): the image plus the work product decides, scored.
            state.fresh_only = f"no reward in the agent's sandbox ({exc})"
            return None, None
        raise _Failed(FailureKind.VERIFIER_NO_REWARD, str(exc)) from None
    if reward.notes:
        state.verifier["reward_notes"] = list(reward.notes)
    return reward.value, reward.source


_LOGS_BROKEN: Final = {
    "path": VERIFIER_LOGS_DIR,
    "change": "replaced",
    "reason": "the verifier's logs folder was made unreadable while tests/test.sh ran (replaced "
    "by a file or a link, or holding paths too long to store): no reward can be trusted",
}
_UNSTORABLE_ERRNOS: Final = frozenset(
    {errno.ENAMETOOLONG, errno.EISDIR, errno.ENOTDIR, errno.ELOOP, errno.EEXIST}
)


def _logs_made_unreadable(exc: BaseException) -> bool:
    """Whether downloading /logs/verifier failed because of what is in it (not the host's or
    the engine's trouble: a full disk, a lost sandbox)."""
    if isinstance(exc, OSError) and not isinstance(exc, SandboxError):
        return exc.errno in _UNSTORABLE_ERRNOS
    text = str(exc)
    return any(
        mark in text
        for mark in (
            "is a symbolic link; not followed",
            "is a symbolic link inside the sandbox; not followed",
            "is not a regular file or folder",
            "File name too long",
            "Is a directory",
            "Not a directory",
        )
    )


_SHELL_KILLED: Final = {
    "path": "(the verifier's shell)",
    "change": "killed",
    "reason": "the verifier's own shell was killed before tests/test.sh's end was recorded, so "
    "the reward files may have been written after the verifier decided",
}


def _exec_evidence(result: ExecResult) -> dict[str, Any]:
    doc: dict[str, Any] = {"exit_code": result.exit_code, "timed_out": result.timed_out}
    if left := survivors(result.stdout):
        # Killed the moment tests/test.sh exited, before any reward file was read.
        doc["survivors"] = left
    return doc


async def _run_verifier(
    plan: TrialPlan,
    sandbox: Sandbox,
    snapshot: str,
    state: _TrialState,
    verifier_env: dict[str, str],
    host_dir: Path,
    *,
    after_gate: Callable[[], Awaitable[None]] | None = None,
    timeout_sec: float | None = None,
) -> ExecResult:
    """Harden, run tests/test.sh, bring its logs to ``host_dir``; failures as :class:`_Failed`."""
    task = plan.task
    verifier_cfg = task.config.verifier
    timeout = verifier_cfg.timeout_sec if timeout_sec is None else timeout_sec
    try:
        if verifier_cfg.user in (None, "root"):
            state.removed_files, result = await harden_and_test(
                sandbox,
                snapshot,
                state.skills_dir,
                task.tests_dir,
                env=verifier_env,
                timeout_sec=timeout,
                after_gate=after_gate,
            )
        else:
            state.removed_files = await harden(
                sandbox, snapshot, state.skills_dir, task.tests_dir, after_gate=after_gate
            )
            result = await sandbox.exec(
                list(TEST_COMMAND),
                cwd=sandbox.workdir,
                env=verifier_env,
                user=verifier_cfg.user,
                timeout_sec=timeout,
            )
        # A verifier killed with its sandbox says nothing of the work (no verdict, 137).
        await _still_running(sandbox, state, f"the verifier (exit {result.exit_code})")
        # One budget for both (the caps are per trial), the verifier's first: the agent's logs
        # are best effort and must not crowd out the reward.
        caps = plan.caps
        if state.logs_budget is None:
            state.logs_budget = CopyBudget(caps.log_file_bytes, caps.logs_bytes, caps.logs_files)
        budget = state.logs_budget
        try:
            await sandbox.download(VERIFIER_LOGS_DIR, host_dir, budget=budget)
        except (OSError, SandboxError) as exc:
            if not _logs_made_unreadable(exc):
                raise
            # The harness made /logs/verifier a plain folder before test.sh: what made it a
            # file, a link, or a tree no host can store ran during the verifier (graded code).
            state.verifier["tampering"] = [{**_LOGS_BROKEN, "detail": str(exc)[:300]}]
            state.verifier["n_tampered_paths"] = 1
            raise _Failed(FailureKind.VERIFIER_TAMPERED, _LOGS_BROKEN["reason"]) from None
        if after_gate is not None:  # the agent's sandbox, not a regrade's
            with contextlib.suppress(Exception):
                await sandbox.download(
                    AGENT_LOGS_DIR, plan.trial_dir / "agent" / "logs", budget=budget
                )
    except SandboxLimitExceeded as exc:
        state.resources["events"] = exc.events
        raise _Failed(FailureKind(exc.kind), str(exc)) from None
    except SandboxTampered as exc:
        state.verifier["tampering"] = exc.evidence[:TAMPER_EVIDENCE_MAX]
        state.verifier["n_tampered_paths"] = len(exc.evidence)
        raise _Tampered(str(exc), exc.evidence) from None
    except SandboxUnsupported as exc:  # e.g. a [verifier].user this backend cannot switch to
        raise _Failed(FailureKind.SANDBOX_UNSUPPORTED, str(exc)) from None
    except SandboxError as exc:
        exceeded = await _limits_hit(sandbox, state)  # e.g. no exec starts: all slots taken
        if exceeded is not None:
            raise _Failed(FailureKind(exceeded.kind), str(exceeded)) from None
        kind = await _sandbox_failure(sandbox, FailureKind.VERIFIER_INFRA)
        raise _Failed(kind, f"verifier could not run: {exc}") from None
    return result


async def _grade_without_tampering(
    sandbox: Sandbox,
    ground: Ground,
    archive: Path,
    plan: TrialPlan,
    state: _TrialState,
    tampered: _Tampered,
) -> None:
    """After the tamper look found changes: when the work product rule leaves every one of them
    out (an upgraded system package, a replaced interpreter: all ``system`` or ``home-config``),
    the image plus the work product is graded instead of the agent's sandbox, so a legitimate
    agent whose installs touched the system keeps its reward and a tamperer gains nothing (the
    image's files are graded). Any change the work product would carry keeps the row tampered."""
    try:
        found = await capture(sandbox, ground, archive, plan.caps.sandbox_bytes, always_export=True)
    except SandboxError as exc:
        raise _Failed(
            FailureKind.VERIFIER_INFRA, f"listing the agent's work product: {exc}"
        ) from None
    if found is None:  # a backend that cannot list its changes: nothing to grade apart
        raise tampered
    state.capture = found
    state.verifier["work_product"] = found.evidence()
    applied = {change.path for change in found.product.applied}
    carried = [item for item in tampered.evidence if item.get("path") in applied]
    if carried:
        raise tampered
    state.tampered = tampered
    state.fresh_only = (
        "the agent changed what the verifier runs (verifier.tampering), all of it left out of "
        "the work product"
    )


async def _test_time_shadows(state: _TrialState) -> None:
    """A pass whose work product holds modules: which of them test.sh's installs made shadows
    (a dependency of what it installed, under a name nothing knew before), looked at in the
    agent's sandbox right after its verifier (every process of it killed)."""
    found, sandbox = state.capture, state.sandbox
    assert found is not None
    if sandbox is None or state.stopped:
        return
    if await _exclude_shadows(sandbox, found):
        state.verifier["work_product"] = found.evidence()


# What the verifier's Python can import once test.sh ran on the image alone, per task: listed
# where no code of an agent ran (the agent's own module, imported by the tests, can delete the
# library it shadows, and its metadata, before any look in its sandbox).
_IMAGE_TEST_TIME: dict[tuple[str, str, str], list[str]] = {}


async def _image_shadows(plan: TrialPlan, state: _TrialState, snapshot: str) -> None:
    """A pass whose work product still holds modules where the verifier imports: which of them
    shadow what test.sh installs on the image alone (red team 3, shadow-lib-hide: a module
    named like a library's import name, tinyyaml of tiny-yaml-reader, that deletes it)."""
    found = state.capture
    assert found is not None
    applied = {c.path for c in found.product.applied}
    remaining = {e: v for e, v in found.candidates.items() if e in applied}
    if not remaining:
        return
    listing = await _image_test_time_modules(plan, state, snapshot)
    if listing and exclude_test_time_shadows(found.product, remaining, listing):
        state.verifier["work_product"] = found.evidence()


# One look per task at a time, per event loop: the trials of a task that pass at once (k trials
# of it in a run) wait for the first one's look instead of each running the verifier again.
_IMAGE_TEST_TIME_LOCKS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, str, str], asyncio.Lock]
] = weakref.WeakKeyDictionary()


async def _image_test_time_modules(
    plan: TrialPlan, state: _TrialState, snapshot: str
) -> list[str] | None:
    """:data:`TEST_TIME_MODULES_SCRIPT`'s lines on a fresh sandbox of the image after its
    verifier ran there (once per task); None when it could not be had."""
    key = _verifier_key(plan)
    if key in _IMAGE_TEST_TIME:
        return _IMAGE_TEST_TIME[key]
    locks = _IMAGE_TEST_TIME_LOCKS.setdefault(asyncio.get_running_loop(), {})
    async with locks.setdefault(key, asyncio.Lock()):
        if key in _IMAGE_TEST_TIME:  # another trial of the task looked while this one waited
            return _IMAGE_TEST_TIME[key]
        return await _list_image_test_time_modules(plan, state, snapshot, key)


async def _list_image_test_time_modules(
    plan: TrialPlan, state: _TrialState, snapshot: str, key: tuple[str, str, str]
) -> list[str] | None:
    assert state.spec is not None
    if state.sandbox is not None:
        await _stop(state.sandbox, state)  # the agent's: its look is done, its logs are in
    backend = sandbox_class(plan.environment)
    kept_verifier, kept_removed = dict(state.verifier), state.removed_files
    try:
        fresh = await fresh_sandbox(backend, state.spec, plan.trial_dir, role="image-listing")
    except SandboxError:
        return None
    state.sandbox, state.stopped = fresh, False
    try:
        await _run_verifier(
            plan,
            fresh,
            snapshot,
            state,
            state.verifier_env,
            plan.trial_dir / "image-listing" / "verifier",
            timeout_sec=plan.task.config.verifier.timeout_sec,
        )
        result = await fresh.exec(
            ["/bin/sh", "-c", TEST_TIME_MODULES_SCRIPT], user="0:0", timeout_sec=300
        )
    except (_Failed, _Tampered, SandboxError):
        return None
    finally:
        state.verifier, state.removed_files = kept_verifier, kept_removed
        await _stop(fresh, state)
    listing = result.stdout.splitlines()
    _IMAGE_TEST_TIME[key] = listing
    return listing


async def _exclude_shadows(sandbox: Sandbox, found: Capture) -> list[str]:
    """List what the verifier's Python could import in ``sandbox`` right after its verifier ran,
    and move the work product's modules that now shadow one of those out of it; the entries
    moved."""
    try:
        result = await sandbox.exec(
            ["/bin/sh", "-c", TEST_TIME_MODULES_SCRIPT], user="0:0", timeout_sec=300
        )
    except SandboxError as exc:
        raise _Failed(
            FailureKind.VERIFIER_INFRA, f"listing the verifier's modules: {exc}"
        ) from None
    return exclude_test_time_shadows(found.product, found.candidates, result.stdout.splitlines())


async def _regrade(
    plan: TrialPlan,
    state: _TrialState,
    snapshot: str,
    first: float | None,
) -> float:
    """Grade the pass again on a fresh sandbox of the image with only the work product laid on
    it (worker/trial/regrade.py); the lower reward counts, the difference is recorded. With
    ``first`` None the agent's sandbox was not graded (tampering): this grade alone decides."""
    found = state.capture
    assert found is not None and state.spec is not None
    doc: dict[str, Any] = {"reward_in_agent_sandbox": first}
    if first is None:
        doc["why"] = f"{state.fresh_only}: graded on the image plus the work product only"
    state.verifier["regrade"] = doc
    if found.report is not None and found.report.over_budget:
        doc.update(reward=0.0, notes=["the work product is larger than the sandbox's storage cap"])
        return 0.0
    if state.sandbox is not None:
        await _stop(state.sandbox, state)  # its logs are in; its resources go to the next one
    backend = sandbox_class(plan.environment)
    try:
        fresh = await fresh_sandbox(backend, state.spec, plan.trial_dir)
    except SandboxError as exc:
        raise _Failed(FailureKind.VERIFIER_INFRA, f"regrade sandbox: {exc}") from None
    state.sandbox, state.stopped = fresh, False  # an abort stops this one now
    notes: list[str] = []
    reward = 0.0
    try:
        try:
            if found.interpreters:
                notes += await install_interpreters(
                    fresh, found.interpreters, dict(state.verifier_env)
                )
            notes += await apply(fresh, found)
            if "work_product" in state.verifier:  # what the laying left out, too
                state.verifier["work_product"] = found.evidence()
        except SandboxError as exc:
            await _still_running(fresh, state, "the regrade's laying of the work product")
            # The work product is the agent's (its size, its names): a fresh sandbox that
            # started but would not take it gives no pass, never an unscored row.
            notes.append(f"the work product could not be laid on a fresh sandbox: {exc}")
            doc.update(reward=0.0, notes=notes)
            return 0.0
        host_dir = plan.trial_dir / "regrade" / "verifier"
        kept_removed = state.removed_files
        try:
            result = await _run_verifier(
                plan,
                fresh,
                snapshot,
                state,
                state.verifier_env,
                host_dir,
                timeout_sec=plan.task.config.verifier.timeout_sec * REGRADE_TIMEOUT_FACTOR,
            )
        except _Failed as exc:
            if semantics(exc.kind).score_eligible:  # the work product's doing: no pass
                notes.append(f"{exc.kind.value}: {exc}")
                result = None
            else:
                raise
        finally:
            state.removed_files = kept_removed
        if result is not None:
            doc.update(_exec_evidence(result))
            if not result.timed_out and not verdict_seen(result.stdout):
                notes.append(_SHELL_KILLED["reason"])
            elif result.timed_out:
                state.regrade_failure = FailureKind.VERIFIER_TIMEOUT
                notes.append(
                    f"tests/test.sh ran past {REGRADE_TIMEOUT_FACTOR:g}x its timeout on the image "
                    "plus the work product"
                )
            else:
                try:
                    again = read_reward(
                        host_dir, found.reward_names, report=_tests_facts(plan.task).report
                    )
                    reward, state.regrade_source = again.value, again.source
                    notes += again.notes
                except RewardError as exc:
                    state.regrade_failure = FailureKind.VERIFIER_NO_REWARD
                    notes.append(f"no reward on the image plus the work product: {exc}")
                # No agent's sandbox was graded to look in: the fresh one is looked at. A hit
                # leaves nothing to grade the pass on (the work product is gone): no pass.
                if (
                    reward
                    and first is None
                    and found.candidates
                    and (hit := await _exclude_shadows(fresh, found))
                ):
                    notes.append(
                        "the work product's modules shadow what tests/test.sh installed: "
                        + ", ".join(sorted(hit)[:10])
                    )
                    reward = 0.0
    except SandboxError as exc:
        raise _Failed(FailureKind.VERIFIER_INFRA, f"regrade: {exc}") from None
    finally:
        await _stop(fresh, state)
    doc["reward"] = reward
    if notes:
        doc["notes"] = notes
    return reward if first is None else min(first, reward)


async def _verifier_ends_on_the_image(plan: TrialPlan, state: _TrialState, snapshot: str) -> bool:
    """Whether the task's verifier, on a fresh sandbox of the image with nothing of the agent's,
    ends within its timeout and leaves a reward (whatever it is)."""
    assert state.spec is not None
    if state.sandbox is not None:
        await _stop(state.sandbox, state)
    backend = sandbox_class(plan.environment)
    kept_verifier, kept_removed = dict(state.verifier), state.removed_files
    try:
        fresh = await fresh_sandbox(backend, state.spec, plan.trial_dir)
    except SandboxError:
        return False
    state.sandbox, state.stopped = fresh, False
    host_dir = plan.trial_dir / "image-only" / "verifier"
    try:
        result = await _run_verifier(
            plan,
            fresh,
            snapshot,
            state,
            state.verifier_env,
            host_dir,
            timeout_sec=plan.task.config.verifier.timeout_sec,
        )
        if result.timed_out or not verdict_seen(result.stdout):
            return False
        read_reward(host_dir)
        return True
    except (_Failed, _Tampered, RewardError, SandboxError):
        return False
    finally:
        state.verifier, state.removed_files = kept_verifier, kept_removed
        await _stop(fresh, state)


# The fresh sandbox lacks what the agent's installs left for the verifier's own (caches, an
# "already satisfied" test runner): its test.sh may need longer to install them again. A
# verifier that still runs past this counts 0 there (the work product's doing, never unscored).
REGRADE_TIMEOUT_FACTOR: Final = 2.0


async def _limits_hit(sandbox: Sandbox, state: _TrialState) -> SandboxLimitExceeded | None:
    """Whether what ran in the sandbox hit its limits (asked after an infrastructure failure:
    then it was the agent's doing); None when none was hit or the backend cannot tell."""
    try:
        events = await asyncio.wait_for(sandbox.limit_events(), ABORT_WAIT_SEC)
    except (SandboxError, TimeoutError):
        return None
    if events is not None:
        state.resources["events"] = events
    return limit_exceeded(events)


def _agent_summary(outcome: AgentOutcome) -> str:
    """The agent's outcome in a few words: its status, its command's exit code, its message."""
    exit_code = (outcome.details or {}).get("exit_code")
    text = f"agent {outcome.status}"
    if isinstance(exit_code, int):
        text += f", exit {exit_code}"
    if outcome.message:
        text += f": {outcome.message}"
    return text


async def _still_running(sandbox: Sandbox, state: _TrialState, during: str) -> None:
    """:class:`_Failed` when the sandbox ended during ``during``, whatever its command returned:
    a limit hit there is the agent's (``oom``...), else the failure table's rule on who ended it
    (from outside: ``sandbox_lost``, retried and not scored). Nothing while it runs, or when the
    backend cannot tell."""
    try:
        end = await asyncio.wait_for(sandbox.ended(), ABORT_WAIT_SEC)
    except (SandboxError, TimeoutError):
        return  # what comes next fails and is judged then
    if end is None:
        return
    exceeded = await _limits_hit(sandbox, state)
    if exceeded is not None:
        raise _Failed(FailureKind(exceeded.kind), str(exceeded))
    kind = sandbox_ended(end, FailureKind.SANDBOX_LOST)
    who = "from inside (by what ran in it)" if end is SandboxEnd.INSIDE else "from outside"
    raise _Failed(kind, f"the sandbox was ended {who} during {during}")


async def _sandbox_failure(sandbox: Sandbox, infra: FailureKind) -> FailureKind:
    """The failure kind of a SandboxError while the sandbox should run: the failure table's
    rule on who ended it, ``infra`` while it runs or when that cannot be told."""
    try:
        end = await asyncio.wait_for(sandbox.ended(), ABORT_WAIT_SEC)
    except (SandboxError, TimeoutError):
        end = None
    return sandbox_ended(end, infra)


async def _stop(sandbox: Sandbox, state: _TrialState) -> None:
    """Stop the sandbox once, even while the trial is being cancelled."""
    if state.stopped:
        return
    state.stopped = True
    stop = asyncio.ensure_future(asyncio.wait_for(sandbox.stop(), STOP_TIMEOUT_SEC))
    try:
        await asyncio.shield(stop)
    except asyncio.CancelledError:
        await asyncio.wait([stop])
        raise
    except Exception as exc:
        log.warning("sandbox stop failed for %s: %s", sandbox.spec.trial_id, exc)


def _finish(
    plan: TrialPlan,
    state: _TrialState,
    reward: float | None,
    reward_source: str | None,
    failure: FailureKind | None,
    error: str | None,
) -> TrialOutcome:
    agent_outcome = state.agent_outcome
    usage = state.usage
    usage.read_native(plan.trial_dir)
    failure, error = usage.enforce(failure, error)
    # The one place an error text is recorded: plain text, bounded, wherever it came from.
    error = plain_text(error) if error is not None else None
    if agent_outcome is not None and agent_outcome.message is not None:
        agent_outcome.message = plain_text(agent_outcome.message)
    timing = dict(state.phases.timing)
    time_used = None
    if "agent_execution" in timing:
        time_used = round(timing["agent_execution"] + timing.get("verifier", 0.0), 3)
    timing["total"] = round(sum(v for k, v in timing.items()), 3)
    timing_doc: dict[str, float | None] = {**timing, **usage.timing(timing)}
    usage_result = usage.agent_result()
    row = build_row(
        plan.request,
        plan.run_task,
        trial_id=plan.trial_id,
        agent_transport=plan.agent.kind,
        reward=reward,
        failure=failure,
        time_used=time_used,
        usage=usage_result,
    )
    meaning = semantics(failure) if failure is not None else None
    reason = None if row["passed"] else _reason(plan, state, failure, error)
    agent_result = {
        **(
            {}
            if agent_outcome is None
            else {
                "status": agent_outcome.status,
                "message": agent_outcome.message,
                "n_tool_calls": agent_outcome.n_tool_calls,
                "details": agent_outcome.details,
            }
        ),
        **usage_result,
    }
    agent_name = getattr(plan.agent, "manifest_name", None) or plan.agent.kind
    # BenchFlow's keys, so its tools read our jobs folder (worker/trial_record/benchflow.py)
    benchflow = benchflow_fields(
        task_id=plan.task.task_id,
        trial_id=plan.trial_id,
        agent_name=agent_name,
        model=usage.model,
        with_skills=plan.with_skills,
        row=row,
        failure=failure,
        error=error,
        agent_result=agent_result,
        agent_started=agent_outcome is not None,
    )
    finished_at = utc_now()
    result = TrialResult(
        run_id=plan.run_id,
        trial_id=plan.trial_id,
        trial_key=plan.key,
        instance=plan.instance,
        attempt=plan.attempt,
        agent=plan.agent.spec,
        agent_kind=plan.agent.kind,
        environment=plan.environment,
        condition=plan.request.condition,
        reward=row["reward"],
        verifier_reward=reward,
        reward_source=reward_source,
        passed=row["passed"],
        score_eligible=row["score_eligible"],
        failure=failure.value if failure else None,
        retried=meaning.retried if meaning else False,
        infra_failure_type=row["infra_failure_type"],
        error=error,
        reason=reason,
        agent_result=agent_result,
        usage_tracking=usage.usage_tracking(),
        verifier={**state.verifier, "removed_files": state.removed_files},
        time_used=time_used,
        timing=timing_doc,
        output_caps=_caps_report(plan, state),
        resources=state.resources,
        started_at=state.started_at,
        finished_at=finished_at,
        **benchflow,
        # Harbor's keys (task_id among them), so its models and viewer read it too
        **harbor.trial_fields(
            run_id=plan.run_id,
            task_id=plan.task.task_id,
            trial_id=plan.trial_id,
            trial_dir=plan.trial_dir,
            task_set=plan.request.task_set,
            task_digest=plan.run_task.task_digest,
            agent_name=benchflow["agent_name"],
            model=usage.model,
            environment=plan.environment,
            rewards=benchflow["rewards"],
            failure=failure,
            error=error,
            finished_at=finished_at,
            agent_result=agent_result,
        ),
    )
    usage.trace(plan.trial_dir, plan.task.task_id, state.phases.spans, error)
    _write_json(plan.trial_dir / TIMING_FILE, timing_doc)
    result.write(plan.trial_dir / RESULT_FILE)
    return TrialOutcome(
        failure=failure,
        error=error,
        row=row,
        reason=reason,
        resource_changes=list(state.resources.get("changes") or []),
    )


REASON_LINES = 3  # the verifier's last lines in a failed trial's reason
REASON_CHARS = 300


def _reason(
    plan: TrialPlan, state: _TrialState, failure: FailureKind | None, error: str | None
) -> str:
    """Why a trial did not pass, in one line: the failure, or for a scored fail the agent's
    exit code and the verifier's exit code and last lines."""
    if failure is not None and not semantics(failure).score_eligible:
        return _one_line(f"{failure.value}: {error or 'no detail'}")
    parts = []
    outcome = state.agent_outcome
    if failure is not None:
        parts.append(f"{failure.value}: {error}" if error else failure.value)
    elif outcome is not None:
        exit_code = (outcome.details or {}).get("exit_code")
        agent = f"agent {outcome.status}"
        if isinstance(exit_code, int):
            agent += f" (exit {exit_code})"
        parts.append(agent)
    regrade = state.verifier.get("regrade")
    first = regrade.get("reward_in_agent_sandbox") if isinstance(regrade, dict) else None
    if isinstance(regrade, dict) and first is None:
        parts.append(
            "not graded in the agent's sandbox; on the image plus its work product: reward "
            f"{regrade.get('reward')}"
        )
    elif isinstance(regrade, dict) and regrade.get("reward", 1.0) < first:
        left = (state.verifier.get("work_product") or {}).get("excluded") or []
        # what made the difference first: a folder marked only by its entries says nothing
        left = sorted(left, key=lambda item: item.get("rule") == "benign")
        named = ", ".join(f"{item['path']} ({item['rule']})" for item in left[:3])
        parts.append(
            "the pass did not hold on the image plus the agent's work product (reward "
            f"{regrade['reward_in_agent_sandbox']} in its sandbox, {regrade.get('reward')} there"
            + (f"; left out: {named}" if named else "")
            + ")"
        )
    if "exit_code" in state.verifier:
        parts.append(f"verifier exit {state.verifier['exit_code']}")
        tail = _last_lines(plan.trial_dir / VERIFIER_STDOUT_FILE)
        if tail:
            parts.append(tail)
    return _one_line("; ".join(parts) or "reward below 1")


def _last_lines(path: Path, lines: int = REASON_LINES) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - 4096))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [line.strip() for line in plain_text(text, 4096).splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 3] + "..."


def _caps_report(plan: TrialPlan, state: _TrialState) -> dict[str, Any]:
    """What the output caps (worker.limits) cut in this trial."""
    report: dict[str, Any] = {"limits": dataclasses.asdict(plan.caps)}
    if state.record is not None:
        file = state.record.file
        report["acp_trajectory"] = {
            "truncated": file.truncated,
            "dropped_events": file.dropped_writes,
            "dropped_bytes": file.dropped_bytes,
            "shortened_events": file.shortened_events,
        }
    if state.logs_budget is not None:
        report["logs"] = state.logs_budget.report()
    return report


def _config_doc(plan: TrialPlan, skills_dir: str | None, started_at: str) -> dict[str, Any]:
    cfg = plan.task.config
    return {
        "schema_version": "skillsbench.agentbeats.trial_config.v1",
        "run_id": plan.run_id,
        "task_id": plan.task.task_id,
        "task_digest": plan.run_task.task_digest,
        "trial_id": plan.trial_id,
        "trial_key": plan.key,
        "instance": plan.instance,
        "attempt": plan.attempt,
        "agent": plan.agent.spec,
        "environment": plan.environment,
        "condition": plan.request.condition,
        "skills_sandbox_dir": skills_dir,
        "agent_timeout_sec": cfg.agent.timeout_sec,
        "verifier_timeout_sec": cfg.verifier.timeout_sec,
        "internet": cfg.environment.internet,
        "task_set": plan.request.task_set,
        "task_set_digest": plan.request.task_set_digest,
        "started_at": started_at,
    }


def _write_json(path: Path, doc: Any) -> None:
    # Not fsynced: the run document is the record of truth, and a trial it does not list as
    # finished is re-run after a crash.
    write_atomic(path, json.dumps(doc, indent=2, default=str).encode(), durable=False)
