"""Caps on what a participant controls and the worker writes to its own disk (one owner of the
defaults; ``docs/worker.md`` documents them).

A participant decides how long its replies, tool calls, messages, stderr and ``/logs`` files are.
Each of those sinks has a per-item cap and a per-trial cap; past a cap the worker keeps a prefix,
drops the rest and says so (a visible marker with what was dropped). With the defaults one trial
folder stays under :meth:`OutputCaps.trial_bytes` plus the worker's own small files.

Every cap can be changed with a ``SKILLSBENCH_CAP_*`` variable (bytes, or with a ``K``/``M``/``G``
suffix) or by passing an :class:`OutputCaps` in the engine's settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Final

KIB: Final = 1 << 10
MIB: Final = 1 << 20

ENV_PREFIX: Final = "SKILLSBENCH_CAP_"
# Room every capped file keeps for its own truncation marker (counted inside its cap).
MARKER_RESERVE: Final = 1 * KIB
# Room each trajectory keeps for the few events the worker itself relies on (a prompt's end with
# its usage, cancels, timeouts), each at most ESSENTIAL_EVENT_BYTES: no flood can push them out.
ESSENTIAL_RESERVE: Final = 64 * KIB
ESSENTIAL_EVENT_BYTES: Final = 8 * KIB
# Room the local sandbox's capped tree gets on top of ``sandbox_bytes`` once the agent's
# processes are gone, so that an agent that filled it cannot keep the verifier from running.
SANDBOX_VERIFIER_RESERVE: Final = 512 * MIB
# A participant's words the worker keeps in its own records (a failure's detail in result.json,
# the run document and the private proof).
MESSAGE_BYTES: Final = 4 * KIB


@dataclass(frozen=True)
class OutputCaps:
    # One event of trajectory/a2a_trajectory.jsonl or trajectory/acp_trajectory.jsonl (one line).
    trajectory_event_bytes: int = 256 * KIB
    # Each of those two files as a whole, per trial.
    trajectory_bytes: int = 8 * MIB
    # Each text log an agent fills itself (its stderr in agent/<name>.txt, the bridge's
    # agent/agentbeats_a2a.txt, the install/exec outputs), per file.
    agent_log_bytes: int = 4 * MIB
    # One file collected from the sandbox's /logs (agent and verifier logs).
    log_file_bytes: int = 16 * MIB
    # All files collected from /logs in one trial, and how many.
    logs_bytes: int = 32 * MIB
    logs_files: int = 2000
    # Everything a trial may write in the local sandbox (workdir, HOME, /tmp, /logs, /opt, /srv,
    # /var, its /usr/local changes, its task files), as one tmpfs: past it writes fail with
    # ENOSPC. It lives in RAM, so keep it at most a fraction of RAM / concurrency. 0: no cap.
    # Enforced where the worker may mount (root); docs/sandboxes.md.
    sandbox_bytes: int = 2 << 30

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{f.name} must be a non-negative number of bytes, not {value!r}")
        if self.trajectory_event_bytes + MARKER_RESERVE + ESSENTIAL_RESERVE > self.trajectory_bytes:
            raise ValueError("trajectory_bytes must leave room for one event and the marker")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OutputCaps:
        """Defaults, each overridden by ``SKILLSBENCH_CAP_<FIELD>`` when set (ValueError naming
        a bad one, or a bad :data:`STORAGE_MODE_VAR`)."""
        env = os.environ if env is None else env
        storage_mode(env)  # a bad SKILLSBENCH_SANDBOX_STORAGE is named where the caps are read
        values: dict[str, int] = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw:
                values[f.name] = parse_size(raw, ENV_PREFIX + f.name.upper())
        return cls(**values)

    def trial_bytes(self, n_agent_logs: int = 3) -> int:
        """What one trial folder may hold of participant-controlled bytes: both trajectories,
        ``n_agent_logs`` agent text logs and the collected ``/logs``."""
        return 2 * self.trajectory_bytes + n_agent_logs * self.agent_log_bytes + self.logs_bytes


# How the local sandbox enforces ``OutputCaps.sandbox_bytes``: ``tmpfs`` (root only: the tree is a tmpfs of the cap),
# ``watchdog`` (measure the tree's disk use while the sandbox runs, kill everything past the cap)
# or ``auto`` (tmpfs where the worker is root, else the watchdog).
STORAGE_MODE_VAR = "SKILLSBENCH_SANDBOX_STORAGE"
STORAGE_MODES = ("auto", "tmpfs", "watchdog")


def storage_mode(env: Mapping[str, str] | None = None) -> str:
    """``tmpfs`` or ``watchdog``: how this worker caps a trial's storage (ValueError naming a bad
    :data:`STORAGE_MODE_VAR`)."""
    raw = (os.environ if env is None else env).get(STORAGE_MODE_VAR, "").strip().lower() or "auto"
    if raw not in STORAGE_MODES:
        raise ValueError(f"{STORAGE_MODE_VAR}={raw!r}: not one of {', '.join(STORAGE_MODES)}")
    if raw == "auto":
        return "tmpfs" if os.geteuid() == 0 else "watchdog"
    return raw


_SUFFIXES: Final = {"K": KIB, "M": MIB, "G": 1 << 30}


def parse_size(raw: str, name: str = "size") -> int:
    text = raw.strip().upper().removesuffix("IB").removesuffix("B")
    scale = 1
    if text and text[-1] in _SUFFIXES:
        scale, text = _SUFFIXES[text[-1]], text[:-1]
    try:
        value = int(text) * scale
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a size (bytes, or with K/M/G)") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} is negative")
    return value


def truncation_note(kept: int, dropped: int) -> str:
    """The marker appended to a text cut at its cap."""
    return f"\n[skillsbench: output cap reached: {dropped} more bytes dropped after {kept}]\n"
