"""What ``skillsbench-agentbeats run`` shows: a start line, a live bar on a terminal (plain lines
otherwise) with the elapsed time, an ETA and what is running, a line whenever nothing was said
for a while (what runs, what waits and why), and a summary table at the end."""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

HEARTBEAT_VAR = "SKILLSBENCH_RUN_HEARTBEAT_SEC"
DEFAULT_HEARTBEAT_SEC = 30.0
ACTIVITY_SHOWN = 3  # running trials named in one line (then "and N more")


def heartbeat_sec() -> float:
    """How long ``run`` may stay silent before it says what it is doing."""
    try:
        value = float(os.environ.get(HEARTBEAT_VAR, DEFAULT_HEARTBEAT_SEC))
    except ValueError:
        return DEFAULT_HEARTBEAT_SEC
    return value if value > 0 else DEFAULT_HEARTBEAT_SEC


@dataclass
class Activity:
    """What the run does right now: trials running (key, seconds so far) and what each does
    (key -> phase, where the engine says), trials waiting to be tried again (key, why), and how
    long the jobs folder has been full (the run paused)."""

    running: list[tuple[str, float]] = field(default_factory=list)
    phases: dict[str, str] = field(default_factory=dict)
    retrying: list[tuple[str, str]] = field(default_factory=list)
    paused_sec: float | None = None

    def describe(self) -> str:
        parts = []
        if self.paused_sec is not None:
            parts.append(
                f"paused: the jobs folder is full (for {duration(self.paused_sec)}); "
                "it goes on when space returns"
            )
        if self.running:
            named = ", ".join(
                f"{key} ({self._phase(key)}{duration(secs)})"
                for key, secs in self.running[:ACTIVITY_SHOWN]
            )
            more = len(self.running) - ACTIVITY_SHOWN
            parts.append(f"running {named}" + (f" and {more} more" if more > 0 else ""))
        if self.retrying:
            named = ", ".join(f"{key} after {why}" for key, why in self.retrying[:ACTIVITY_SHOWN])
            more = len(self.retrying) - ACTIVITY_SHOWN
            parts.append(f"retrying {named}" + (f" and {more} more" if more > 0 else ""))
        return "; ".join(parts) or "waiting for a free slot"

    def _phase(self, key: str) -> str:
        phase = self.phases.get(key)
        return f"{phase.replace('_', ' ')}, " if phase else ""


def duration(secs: float) -> str:
    secs = max(0, int(secs))
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{secs % 3600 // 60:02d}m"


class ProgressView:
    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        live: bool | None = None,
        done: int = 0,
        every_sec: float | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.total = total
        self.done = done  # trials a resumed run had finished before this process
        self.done_before = done
        self.passed = 0
        self.failed = 0
        self.errored = 0
        self.started = time.monotonic()
        self.said = self.started  # when the last line was printed
        self.every_sec = every_sec if every_sec is not None else heartbeat_sec()
        self.activity = Activity()

    def say(self, line: str) -> None:
        """One line of its own (the start line, a note), the live bar drawn again after it."""
        if self.live:
            self._clear()
        print(line, file=self.stream, flush=True)
        self.said = time.monotonic()
        if self.live:
            self.draw()

    def eta(self) -> str:
        """The time left, from this process's pace so far (unknown before its first trial)."""
        finished = self.done - self.done_before
        left = self.total - self.done
        if left <= 0:
            return "done"
        if finished <= 0:
            return "ETA after the first trial"
        pace = (time.monotonic() - self.started) / finished
        return f"~{duration(pace * left)} left"

    def tick(self, activity: Activity) -> None:
        """Called every second or so: the live bar is redrawn; plain output gets a line when
        nothing was said for ``every_sec`` (what runs, what waits, why)."""
        self.activity = activity
        if self.live:
            self.draw()
            return
        now = time.monotonic()
        if now - self.said >= self.every_sec:
            self.say(
                f"[{self.done}/{self.total}] {duration(now - self.started)} elapsed, "
                f"{self.eta()}: {activity.describe()}"
            )

    def row(self, trial_key: str, row: dict[str, Any], reason: str | None = None) -> None:
        self.done += 1
        if not row["score_eligible"]:
            self.errored += 1
            verdict = f"error ({row['infra_failure_type']})"
        elif row["passed"]:
            self.passed += 1
            verdict = "passed"
        else:
            self.failed += 1
            verdict = "failed"
        line = (
            f"[{self.done}/{self.total}] {trial_key} {verdict} reward={row['reward']:g}"
            f" time={_secs(row['time_used'])}"
        )
        if reason and not row["passed"]:
            line += f" -- {reason}"
        self.say(line)

    def draw(self) -> None:
        if not self.live:
            return
        width = max(10, min(40, shutil.get_terminal_size((80, 20)).columns - 50))
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        elapsed = time.monotonic() - self.started
        text = (
            f"[{bar}] {self.done}/{self.total}  pass {self.passed}  fail {self.failed}"
            f"  error {self.errored}  {duration(elapsed)}  {self.eta()}"
        )
        if self.activity.paused_sec is not None:
            text += "  PAUSED: jobs folder full"
        elif self.activity.running:
            text += f"  running {len(self.activity.running)}"
        columns = shutil.get_terminal_size((80, 20)).columns
        self.stream.write("\r" + text[: max(20, columns - 1)])
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self._clear()

    def _clear(self) -> None:
        self.stream.write("\r\033[K")
        self.stream.flush()


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


MAX_WHY_CHARS = 60  # of the reason on a summary line; `trials show` has the whole of it


def summary_table(rows: list[dict[str, Any]], reasons: dict[str, str] | None = None) -> str:
    """A fixed-width table: one line per row (a trial that did not pass says why, from
    ``reasons`` by trial id, cut to keep the line readable), then the totals. Units and wording
    are the leaderboard report's: reward in %, time in seconds."""
    reasons = reasons or {}
    headers = ("task", "trial", "reward (%)", "passed", "failure", "time (s)", "why")
    lines = [
        (
            row["task_id"],
            row["trial_id"].rsplit("__", 1)[-1],
            f"{100 * row['reward']:.1f}",
            "yes" if row["passed"] else "no",
            row["infra_failure_type"] or "-",
            "-" if row["time_used"] is None else f"{row['time_used']:.1f}",
            "" if row["passed"] else _clip(reasons.get(row["trial_id"]) or "-", MAX_WHY_CHARS),
        )
        for row in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    numeric = (False, False, True, False, False, True, False)

    def line(cells: tuple[str, ...], align: bool = True) -> str:
        return "  ".join(
            c.rjust(w) if num and align else c.ljust(w)
            for c, w, num in zip(cells, widths, numeric, strict=True)
        ).rstrip()

    out = [line(headers, False), "  ".join("-" * w for w in widths)]
    out += [line(cells) for cells in lines]
    out.append("\n" + totals_line(rows))
    if any(len(reasons.get(row["trial_id"]) or "") > MAX_WHY_CHARS for row in rows):
        out.append(f"(why: cut at {MAX_WHY_CHARS} characters; `trials show TRIAL` has the whole)")
    return "\n".join(out)


def totals_line(rows: list[dict[str, Any]]) -> str:
    """What the run scored: passed, the mean reward of the graded trials (in %, as the
    leaderboard's), the infrastructure errors; says so when nothing was graded."""
    graded = [row for row in rows if row["score_eligible"]]
    errors = len(rows) - len(graded)
    error_text = f"{errors} infrastructure error{'' if errors == 1 else 's'} (not graded)"
    if not graded:
        return f"0/{len(rows)} passed: nothing was graded, {error_text}"
    passed = sum(1 for row in graded if row["passed"])
    mean = 100 * sum(row["reward"] for row in graded) / len(graded)
    text = f"{passed}/{len(rows)} passed, mean reward {mean:.1f}% over {len(graded)} graded"
    return text + (f", {error_text}" if errors else "")


def _clip(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def resources_lines(results: list[dict[str, Any]]) -> list[str]:
    """One line per task whose CPUs or memory differ from what it asked for (capped to the host
    or overridden: its scores may not compare with runs that gave it what it asked)."""
    from worker.trial_record.result import TrialResult  # only a run's end pays its import

    lines: dict[str, str] = {}
    for result in results:
        changes = (result.get("resources") or {}).get("changes") or []
        task = str(TrialResult.model_validate(result).task)  # task_id is Harbor's object
        if changes and task not in lines:
            what = "; ".join(
                f"{c['limit']} {c['from']:g} -> {c['to']:g} ({c['why']})" for c in changes
            )
            lines[task] = f"resources changed: {task}: {what}"
    return list(lines.values())
