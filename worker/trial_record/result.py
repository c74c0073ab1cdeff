"""A trial's record, ``result.json``: one model for every writer and every reader.

Writers (the trial lifecycle, the Ray executor) build a :class:`TrialResult` with keyword
arguments and write :meth:`TrialResult.document`: the keys they set, in the order declared here
(ours, then BenchFlow's, then Harbor's, then the executor's), with their values as given, so the
file's bytes are what ``json.dumps`` of the same dict gave. A record the Ray executor writes for an attempt that
brought nothing back sets only a few keys. Readers go through :meth:`TrialResult.read`: a missing
or non-object file is ``None``, every key is optional (a record from an older worker, a short
one), and a key this model does not know is kept (``extra="allow"``).

The nested sections stay plain JSON objects: ``verifier`` in particular gains evidence keys over
time, and the file keeps them in the order they were recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from worker.core.files import write_atomic

SCHEMA_VERSION: Final = "skillsbench.agentbeats.trial_result.v1"

Number = int | float  # kept as given: an int reward stays 1, not 1.0


class TrialResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    run_id: str | None = None
    # Harbor's task id object (``{"path": <task id>}``, worker/trial_record/harbor.py); a plain
    # string in records written before it: read the id with :attr:`task`.
    task_id: str | dict[str, Any] | None = None
    trial_id: str | None = None
    trial_key: str | None = None
    instance: int | None = None
    attempt: int | None = None
    agent: str | None = None  # the agent spec (``kind`` or ``kind:<arg>``)
    agent_kind: str | None = None
    environment: str | None = None  # the sandbox backend
    condition: str | None = None
    reward: Number | None = None  # the public row's reward
    verifier_reward: Number | None = None  # what the verifier wrote, if anything
    reward_source: str | None = None
    passed: bool | None = None
    score_eligible: bool | None = None
    failure: str | None = None  # a FailureKind value
    retried: bool | None = None
    infra_failure_type: str | None = None
    error: str | None = None
    reason: str | None = None
    agent_result: dict[str, Any] | None = None  # status, message, tool calls, usage fields
    usage_tracking: dict[str, Any] | None = None
    verifier: dict[str, Any] | None = None  # exit code, removed files, tamper evidence, ...
    time_used: Number | None = None
    timing: dict[str, Any] | None = None
    output_caps: dict[str, Any] | None = None
    resources: dict[str, Any] | None = None
    started_at: str | None = None
    finished_at: str | None = None
    # BenchFlow's keys (worker/trial_record/benchflow.py), so its tools read our jobs folders.
    task_name: str | None = None
    rollout_name: str | None = None
    rewards: dict[str, Any] | None = None
    agent_name: str | None = None
    model: str | None = None
    skill_mode: str | None = None
    n_tool_calls: int | None = None
    n_skill_invocations: int | None = None
    n_prompts: int | None = None
    final_metrics: dict[str, Any] | None = None
    verifier_error: str | None = None
    error_category: str | None = None
    verifier_error_category: str | None = None
    trajectory_source: str | None = None
    partial_trajectory: bool | None = None
    sandbox_id: str | None = None
    # Harbor's keys (worker/trial_record/harbor.py), so its models and viewer read our trials.
    id: str | None = None
    trial_name: str | None = None
    trial_uri: str | None = None
    source: str | None = None
    task_checksum: str | None = None
    config: dict[str, Any] | None = None
    agent_info: dict[str, Any] | None = None
    verifier_result: dict[str, Any] | None = None
    exception_info: dict[str, Any] | None = None
    # Which executor ran the attempt, when not in process (Ray: the node, the archive report).
    executor: dict[str, Any] | None = None

    @property
    def task(self) -> str | None:
        """The task's id, from whichever key the record has it in."""
        if isinstance(self.task_id, str):
            return self.task_id
        if self.task_name is not None:
            return self.task_name
        path = self.task_id.get("path") if self.task_id else None
        return path if isinstance(path, str) else None

    def document(self) -> dict[str, Any]:
        """The keys set (``schema_version`` always), in declared order, then unknown keys kept
        from a file read; values as given (no conversion)."""
        doc = {
            name: getattr(self, name)
            for name in type(self).model_fields
            if name == "schema_version" or name in self.model_fields_set
        }
        doc.update(self.model_extra or {})
        return doc

    def encode(self) -> bytes:
        return json.dumps(self.document(), indent=2, default=str).encode()

    def write(self, path: Path) -> None:
        # Not fsynced: the run document is the record of truth, and a trial it does not list as
        # finished is re-run after a crash.
        write_atomic(path, self.encode(), durable=False)

    @classmethod
    def read(cls, path: Path) -> TrialResult | None:
        """The record at ``path``; ``None`` when there is none (or it is not a JSON object).
        Raises ``ValueError`` for a file that is not JSON or does not fit the model."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            value = json.loads(text)
        except ValueError:
            raise ValueError(f"{path}: not valid JSON") from None
        if not isinstance(value, dict):
            return None
        return cls.model_validate(value)
