"""The files of a trial folder (``<jobs>/runs/<run_id>/trials/<trial_id>/``), each name spelled
once here: every writer and reader takes it from this module.

The folder is the sandbox's ``/logs`` brought back (``agent/``, ``verifier/``, ``artifacts/``)
plus what the worker writes itself: the record (``result.json``, :mod:`worker.trial_record.result`),
the trial's settings and phase times, and the trajectories.
"""

from __future__ import annotations

from typing import Final

RESULT_FILE: Final = "result.json"  # the trial's record (TrialResult)
CONFIG_FILE: Final = "config.json"  # what the trial was asked to do
TIMING_FILE: Final = "timing.json"  # seconds per phase

TRAJECTORY_DIR: Final = "trajectory"
# Every event of the agent's ACP session (BenchFlow's acp_trajectory.jsonl shape).
ACP_TRAJECTORY_FILE: Final = f"{TRAJECTORY_DIR}/acp_trajectory.jsonl"
# Every A2A exchange and sandbox action of the a2a bridge.
A2A_TRAJECTORY_FILE: Final = f"{TRAJECTORY_DIR}/a2a_trajectory.jsonl"
# One line per model call through the worker's proxy.
LLM_TRAJECTORY_FILE: Final = f"{TRAJECTORY_DIR}/llm_trajectory.jsonl"

VERIFIER_DIR: Final = "verifier"  # the sandbox's /logs/verifier
# Harbor's artifacts (/logs/artifacts and task.toml's artifacts), at <destination or source>.
ARTIFACTS_DIR: Final = "artifacts"
VERIFIER_STDOUT_FILE: Final = f"{VERIFIER_DIR}/test-stdout.txt"
