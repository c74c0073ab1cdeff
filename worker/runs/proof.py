"""The private proof bundle of a run (``skillsbench.agentbeats.private_proof.v1``).

Per run: ``<proof dir>/<run_id>/proof.json`` plus, per trial, its ``result.json`` (stored as
``trial_result.json``, so no tool walking a jobs folder for ``result.json`` files takes it for
a trial), the trajectories
and the verifier's reward (or an ``infra_failure.json`` when the trial has none; a trial that never
started, e.g. a queued trial of a cancelled run, has its infra failure inline in its ref in
``proof.json`` instead, with ``rollout_dir`` null). Those files are
hard links to the trial's own files when the proof dir is on the jobs dir's filesystem (no second
copy of the same bytes on the worker's disk), copies otherwise; ``copied_artifacts`` records each
one's sha256 and size, so a later change to the trial's files cannot pass for the proven ones.
The worker payload points at it with ``_private_proof_refs`` / ``_private_proof_manifest``;
those keys are worker-private and never reach public rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Final

from worker.core.files import write_atomic
from worker.core.json_text import encode_document
from worker.runs.meta import ProofSettings, manifest_of
from worker.runs.records import AttemptRecord, RunRecord, TrialRecord
from worker.trial_record.paths import (
    A2A_TRAJECTORY_FILE,
    ACP_TRAJECTORY_FILE,
    CONFIG_FILE,
    RESULT_FILE,
    TIMING_FILE,
)
from worker.trial_record.trajectory import utc_now

PROOF_SCHEMA_VERSION: Final = "skillsbench.agentbeats.private_proof.v1"
INFRA_FAILURE_SCHEMA_VERSION: Final = "skillsbench.agentbeats.infra_failure.v1"
# The trial's result.json is kept as trial_result.json: a tool that walks a jobs folder for
# result.json files (BenchFlow's `bench eval metrics`, its artifact validator, our `trials`)
# must not take a proof copy for another trial. Every other file keeps its trial-relative path.
PROOF_NAMES: Final = {RESULT_FILE: "trial_result.json"}
COPIED_FILES: Final = (
    RESULT_FILE,
    CONFIG_FILE,
    TIMING_FILE,
    ACP_TRAJECTORY_FILE,
    A2A_TRAJECTORY_FILE,
    "agent/agentbeats_a2a.txt",
    "verifier/reward.txt",
    "verifier/reward.json",
)


def write_proof(run: RunRecord, jobs_dir: Path, settings: ProofSettings) -> dict[str, Any]:
    """Write the bundle; returns ``{"_private_proof_refs": [...], "_private_proof_manifest": uri}``."""
    bundle = settings.directory / run.run_id
    bundle.mkdir(parents=True, exist_ok=True)
    refs: list[dict[str, Any]] = []
    copied: list[dict[str, str]] = []
    written: list[Path] = []
    run_uri = f"{settings.uri_prefix}/{run.run_id}"
    # The trial folders that exist, listed once: a stat per trial (10,000 for a cancelled run
    # whose trials never started) took seconds on a busy host.
    trials_dir = f"runs/{run.run_id}/trials/"
    try:
        started = set(os.listdir(jobs_dir / trials_dir))
    except OSError:
        started = set()
    for trial in run.trials.values():
        attempt = trial.current
        if trial.row is None or attempt is None:
            continue
        source = jobs_dir / attempt.trial_dir
        rel_dir = f"{trial.task_id}/{attempt.trial_id}"
        target = bundle / rel_dir
        if attempt.trial_dir == trials_dir + attempt.trial_id:
            exists = attempt.trial_id in started and source.is_dir()
        else:
            exists = source.is_dir()
        if not exists:  # never started (a cancelled queued trial): nothing to copy
            refs.append(
                {
                    "task_id": trial.task_id,
                    "trial_id": attempt.trial_id,
                    "rollout_dir": None,
                    "uri": f"{run_uri}/proof.json",
                    "infra_failure": _infra_failure(trial, attempt),
                }
            )
            continue
        has_reward = False
        for name in COPIED_FILES:
            src = source / name
            if src.is_file() and not src.is_symlink():
                stored_name = PROOF_NAMES.get(name, name)
                dst = target / stored_name
                dst.parent.mkdir(parents=True, exist_ok=True)
                copied.append(
                    {
                        "task_id": trial.task_id,
                        "relative_path": f"{rel_dir}/{stored_name}",
                        **_store(src, dst),
                    }
                )
                written.append(dst)
                has_reward = has_reward or name.startswith("verifier/reward")
        if not has_reward or not trial.row["score_eligible"]:
            doc = _infra_failure(trial, attempt)
            # Not fsynced one by one (10,000 fsyncs took a minute): one sync below covers all.
            write_atomic(
                target / "infra_failure.json", json.dumps(doc, indent=2).encode(), durable=False
            )
            copied.append(
                {"task_id": trial.task_id, "relative_path": f"{rel_dir}/infra_failure.json"}
            )
            written.append(target / "infra_failure.json")
        refs.append(
            {
                "task_id": trial.task_id,
                "trial_id": attempt.trial_id,
                "rollout_dir": rel_dir,
                "uri": f"{run_uri}/{rel_dir}",
            }
        )
    proof = {
        "schema_version": PROOF_SCHEMA_VERSION,
        "proof_id": run.run_id,
        "created_at": utc_now(),
        "participants": {role: endpoint.url for role, endpoint in run.request.participants.items()},
        "task_set": run.request.task_set,
        "task_set_digest": run.request.task_set_digest,
        "task_set_manifest": manifest_of(run.request),
        "public_rows": run.rows(),
        "worker_meta": run.worker_meta,
        "private_proof_refs": refs,
        "copied_artifacts": copied,
        "retention": settings.retention,
    }
    _sync(written)  # the per-trial files above are on disk before the manifest that names them
    # Compact, a slice of rows and refs per call (an indented dump is pure Python, seconds at
    # 10,000 trials; one call in this thread stalled the worker's event loop).
    write_atomic(bundle / "proof.json", encode_document(proof))
    return {"_private_proof_refs": refs, "_private_proof_manifest": f"{run_uri}/proof.json"}


# Up to this many written files are fsynced one by one; more, and one sync covers them all
# (10,000 fsyncs took a minute). A whole-machine sync took seconds on a busy host: a cancelled
# run whose trials never started writes no file here and syncs nothing.
FSYNC_EACH_MAX: Final = 64


def _sync(paths: list[Path]) -> None:
    if not paths:
        return
    if len(paths) > FSYNC_EACH_MAX:
        if hasattr(os, "sync"):
            os.sync()
        return
    for path in [*paths, *{path.parent for path in paths}]:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def _infra_failure(trial: TrialRecord, attempt: AttemptRecord) -> dict[str, Any]:
    assert trial.row is not None
    return {
        "schema_version": INFRA_FAILURE_SCHEMA_VERSION,
        "task_id": trial.task_id,
        "trial_id": attempt.trial_id,
        "infra_failure_type": trial.row["infra_failure_type"],
        "failure": trial.failure,
        "error": attempt.error,
    }


def _store(src: Path, dst: Path) -> dict[str, Any]:
    """``src`` at ``dst`` without a second copy of its bytes where the filesystem allows it (a
    hard link); a copy otherwise (another filesystem). The digest pins what the proof holds."""
    if dst.exists() or dst.is_symlink():
        dst.unlink()
    try:
        os.link(src, dst)
        stored = "hardlink"
    except OSError:
        shutil.copyfile(src, dst)
        stored = "copy"
    digest = hashlib.sha256()
    size = 0
    with dst.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"sha256": digest.hexdigest(), "bytes": size, "stored": stored}
