"""The query tables as people read them, one form for the HTML report, the viewer and the
terminal: every heading names its unit, pass rate and mean reward are both in %, time is the mean
per task (a total favours agents that ran fewer tasks), and the pass rate has its 95% Wilson
interval. The query results themselves (``--format json|csv|markdown``) keep the published
queries' columns and values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from leaderboard.query import QueryResult

Z95 = 1.959964

AGENT = "id"
CI = "95% CI of pass rate (%)"
HEADINGS = {
    AGENT: "Agent (label · AgentBeats id)",
    "Category": "Category",
    "Difficulty": "Difficulty",
    "Tasks passed": "Tasks passed (passed/eligible)",
    "Pass Rate": "Pass rate (%)",
    "Mean Reward": "Mean reward (%)",
    "Time": "Time per task (s, mean)",
    "# Tasks": "Tasks (count)",
    "Infra Failed": "Infra failed (count)",
}


def wilson_interval(passed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a pass rate, as fractions; (0, 1) when there are no tasks."""
    if total <= 0:
        return 0.0, 1.0
    p = passed / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def fraction(record: dict[str, Any]) -> tuple[int, int]:
    """A row's ``Tasks passed`` ("3/7") as (passed, eligible)."""
    passed, _, total = str(record["Tasks passed"]).partition("/")
    return int(passed), int(total)


def percent(value: Any) -> Any:
    """A 0..1 fraction in %, one decimal; anything else as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(100 * value, 1)
    return value


def per_task_time(record: dict[str, Any]) -> float | None:
    """The query's ``Time`` (seconds summed over eligible rows) over its ``# Tasks``."""
    total, tasks = record.get("Time"), record.get("# Tasks")
    if not isinstance(total, (int, float)) or not isinstance(tasks, int) or tasks <= 0:
        return None
    return round(total / tasks, 1)


@dataclass(frozen=True)
class Cell:
    """One shown value: its text, and the value a table sorts it by."""

    text: str
    sort: float | str
    numeric: bool


def display_columns(result: QueryResult) -> list[str]:
    """The headings of ``result`` as shown, the interval column last."""
    return [HEADINGS.get(column, column) for column in result.columns] + [CI]


def display_rows(result: QueryResult) -> list[dict[str, Cell]]:
    """Each row of ``result`` as shown, keyed by the query's column names (and ``CI``)."""
    rows = []
    for record in result.records():
        cells: dict[str, Cell] = {}
        for key, value in record.items():
            if key == "Tasks passed":
                passed, total = fraction(record)
                cells[key] = Cell(str(value), passed / total if total else -1, True)
            elif key == "Mean Reward":
                cells[key] = _number(percent(value))
            elif key == "Time":
                cells[key] = _number(per_task_time(record))
            else:
                cells[key] = _number(value) if _is_number(value) else _text(value)
        low, high = wilson_interval(*fraction(record))
        cells[CI] = Cell(f"{100 * low:.1f} – {100 * high:.1f}", round(low, 6), True)
        rows.append(cells)
    return rows


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: Any) -> Cell:
    if not _is_number(value):
        return Cell("", -1, True)
    return Cell(str(value), float(value), True)


def _text(value: Any) -> Cell:
    text = "" if value is None else str(value)
    return Cell(text, text.lower(), False)
