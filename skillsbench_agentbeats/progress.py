"""What ``skillsbench-agentbeats run`` shows: a live bar on a terminal, plain lines otherwise,
and a summary table at the end."""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any, TextIO


class ProgressView:
    def __init__(
        self, total: int, *, stream: TextIO | None = None, live: bool | None = None
    ) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.total = total
        self.done = 0
        self.passed = 0
        self.failed = 0
        self.errored = 0
        self.started = time.monotonic()

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
        if self.live:
            self._clear()
        print(line, file=self.stream, flush=True)
        if self.live:
            self.draw()

    def draw(self) -> None:
        if not self.live:
            return
        width = max(10, min(40, shutil.get_terminal_size((80, 20)).columns - 50))
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        elapsed = time.monotonic() - self.started
        text = (
            f"[{bar}] {self.done}/{self.total}  pass {self.passed}  fail {self.failed}"
            f"  error {self.errored}  {elapsed:5.0f}s"
        )
        self.stream.write("\r" + text)
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self._clear()

    def _clear(self) -> None:
        self.stream.write("\r\033[K")
        self.stream.flush()


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def summary_table(rows: list[dict[str, Any]], reasons: dict[str, str] | None = None) -> str:
    """A fixed-width table: one line per row (a trial that did not pass says why, from
    ``reasons`` by trial id), then the totals."""
    reasons = reasons or {}
    headers = ("task", "trial", "reward", "passed", "failure", "time", "why")
    lines = [
        (
            row["task_id"],
            row["trial_id"].rsplit("__", 1)[-1],
            f"{row['reward']:g}",
            "yes" if row["passed"] else "no",
            row["infra_failure_type"] or "-",
            _secs(row["time_used"]),
            "" if row["passed"] else reasons.get(row["trial_id"]) or "-",
        )
        for row in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    out += [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    ]
    passed = sum(1 for row in rows if row["passed"])
    errors = sum(1 for row in rows if not row["score_eligible"])
    mean = sum(row["reward"] for row in rows) / len(rows) if rows else 0.0
    out.append(
        f"\n{passed}/{len(rows)} passed, {errors} infrastructure errors, mean reward {mean:.3f}"
    )
    return "\n".join(out)


def resources_lines(results: list[dict[str, Any]]) -> list[str]:
    """One line per task whose CPUs or memory differ from what it asked for (capped to the host
    or overridden: its scores may not compare with runs that gave it what it asked)."""
    lines: dict[str, str] = {}
    for result in results:
        changes = (result.get("resources") or {}).get("changes") or []
        if changes and result.get("task_id") not in lines:
            what = "; ".join(
                f"{c['limit']} {c['from']:g} -> {c['to']:g} ({c['why']})" for c in changes
            )
            lines[str(result.get("task_id"))] = (
                f"resources changed: {result.get('task_id')}: {what}"
            )
    return list(lines.values())
