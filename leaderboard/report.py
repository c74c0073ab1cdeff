"""A static HTML leaderboard page: the three query tables with 95% Wilson intervals, pass-rate
charts by category and by difficulty (inline SVG), infra-failure counts and per-task results.

Everything is inline (CSS, SVG); the page loads nothing, so it works offline and from a file.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any

from leaderboard.query import (
    QUERY_NAMES,
    QueryResult,
    connect,
    load_results,
    run_query,
)

Z95 = 1.959964
PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d")

# Every public row with the fields the page shows; same filters as the queries.
_TASK_ROWS_SQL = """
WITH envelopes AS (
  SELECT CAST(f.participants.agent AS VARCHAR) AS agent_id, UNNEST(f.results) AS envelope
  FROM results AS f
  WHERE f.status = 'completed'
)
SELECT
  agent_id,
  r.task_id,
  CAST(r.trial_id AS VARCHAR),
  CAST(r.category AS VARCHAR),
  CAST(r.difficulty AS VARCHAR),
  r.score_eligible,
  r.passed,
  r.reward,
  r.time_used,
  CAST(r.infra_failure_type AS VARCHAR)
FROM (SELECT agent_id, UNNEST(envelope.results) AS r FROM envelopes)
WHERE agent_id IS NOT NULL AND agent_id <> '' AND r.task_id IS NOT NULL
ORDER BY agent_id, r.task_id
"""


@dataclass(frozen=True)
class TaskRow:
    agent: str
    task_id: str
    trial_id: str | None
    category: str | None
    difficulty: str | None
    score_eligible: bool | None
    passed: bool | None
    reward: float | None
    time_used: float | None
    infra_failure_type: str | None


def wilson_interval(passed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a pass rate, as fractions; (0, 1) when there are no tasks."""
    if total <= 0:
        return 0.0, 1.0
    p = passed / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def build_report(
    patterns: Iterable[str],
    *,
    participant: str | None = None,
    title: str = "SkillsBench leaderboard",
) -> str:
    con = connect()
    try:
        loaded = load_results(con, patterns, participant)
        tables = {name: run_query(con, name) for name in QUERY_NAMES}
        try:
            raw = con.execute(_TASK_ROWS_SQL).fetchall()
        except Exception as exc:  # duckdb.Error; the query tables above already ran
            raise ValueError(f"per-task rows cannot be read: {exc}") from None
    finally:
        con.close()
    tasks = [TaskRow(str(row[0]), *row[1:]) for row in raw]
    agents = [str(row[0]) for row in tables["overall"].rows]
    colors = {agent: PALETTE[i % len(PALETTE)] for i, agent in enumerate(agents)}
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    sections = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{len(loaded.files)} results file(s), {len(tasks)} public row(s), '
        f"{len(agents)} agent(s) · generated {now} · pass-rate intervals are 95% Wilson "
        "score intervals over distinct score-eligible tasks.</p>",
        _section("Overall", _table(tables["overall"], with_ci=True), "overall"),
        _section(
            "Pass rate by category",
            _chart(tables["by_category"], "Category", colors) + _table(tables["by_category"], True),
            "by-category",
        ),
        _section(
            "Pass rate by difficulty",
            _chart(tables["by_difficulty"], "Difficulty", colors)
            + _table(tables["by_difficulty"], True),
            "by-difficulty",
        ),
        _section("Infrastructure failures", _infra_table(tasks), "infra"),
        _section("Per-task results", _task_table(tasks), "tasks"),
    ]
    return _page(escape(title), "\n".join(sections))


def _section(title: str, body: str, anchor: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>\n{body}</section>'


def _fraction(result_row: dict[str, Any]) -> tuple[int, int]:
    passed, _, total = str(result_row["Tasks passed"]).partition("/")
    return int(passed), int(total)


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _td(value: Any, is_id: bool = False) -> str:
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    kind = "id" if is_id else ("num" if numeric else "txt")
    return f'<td class="{kind}">{escape(_fmt(value))}</td>'


def _table(result: QueryResult, with_ci: bool) -> str:
    columns = list(result.columns)
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    if with_ci:
        head += "<th>95% CI (pass rate)</th>"
    body = []
    for record in result.records():
        cells = "".join(_td(v, key == "id") for key, v in record.items())
        if with_ci:
            low, high = wilson_interval(*_fraction(record))
            cells += f'<td class="num">{100 * low:.1f} – {100 * high:.1f}</td>'
        body.append(f"<tr>{cells}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(columns) + int(with_ci)}">no rows</td></tr>')
    return (
        f'<table class="data" data-query="{escape(result.name)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>\n"
    )


def _chart(result: QueryResult, dimension: str, colors: dict[str, str]) -> str:
    """Horizontal bars of pass rate per (group, agent) with Wilson whiskers, inline SVG."""
    groups: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for record in result.records():
        groups[str(record[dimension])].append((str(record["id"]), *_fraction(record)))
    if not groups:
        return "<p>No rows to chart.</p>\n"
    label_w, bar_w, bar_h, gap, top = 230, 420, 14, 10, 28
    height = top + sum(len(v) * (bar_h + 2) + gap for v in groups.values()) + 10
    width = label_w + bar_w + 90
    parts = [
        f'<svg class="chart" role="img" aria-label="Pass rate by {escape(dimension.lower())}" '
        f'xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">'
    ]
    for tick in range(0, 101, 25):
        x = label_w + bar_w * tick / 100
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - 6}" class="grid"/>'
            f'<text x="{x:.1f}" y="{top - 10}" class="tick">{tick}%</text>'
        )
    y = float(top)
    for group, bars in groups.items():
        label_y = y + (len(bars) * (bar_h + 2)) / 2 + 4
        parts.append(
            f'<text x="{label_w - 8}" y="{label_y:.1f}" class="label">{escape(group)}</text>'
        )
        for agent, passed, total in bars:
            rate = passed / total if total else 0.0
            low, high = wilson_interval(passed, total)
            color = colors.get(agent, PALETTE[0])
            x_low, x_high = label_w + bar_w * low, label_w + bar_w * high
            mid = y + bar_h / 2
            parts.append(
                f'<rect x="{label_w}" y="{y:.1f}" width="{bar_w}" height="{bar_h}" class="track"/>'
                f'<rect x="{label_w}" y="{y:.1f}" width="{max(bar_w * rate, 3):.1f}" height="{bar_h}" '
                f'fill="{color}"><title>{escape(agent)}: {passed}/{total}</title></rect>'
                f'<line x1="{x_low:.1f}" y1="{mid:.1f}" x2="{x_high:.1f}" y2="{mid:.1f}" '
                f'class="ci"/><line x1="{x_low:.1f}" y1="{y + 3:.1f}" x2="{x_low:.1f}" '
                f'y2="{y + bar_h - 3:.1f}" class="ci"/><line x1="{x_high:.1f}" y1="{y + 3:.1f}" '
                f'x2="{x_high:.1f}" y2="{y + bar_h - 3:.1f}" class="ci"/>'
                f'<text x="{label_w + bar_w + 8}" y="{mid + 4:.1f}" class="value">'
                f"{100 * rate:.1f}% ({passed}/{total})</text>"
            )
            y += bar_h + 2
        y += gap
    parts.append("</svg>")
    legend = "".join(
        f'<span class="key"><span class="swatch" style="background:{color}"></span>'
        f"{escape(agent)}</span>"
        for agent, color in colors.items()
    )
    return f'<div class="legend">{legend}</div>\n' + "".join(parts) + "\n"


def _infra_table(tasks: Sequence[TaskRow]) -> str:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for task in tasks:
        if task.infra_failure_type is not None or not task.score_eligible:
            counts[task.agent][task.infra_failure_type or "(none given)"] += 1
    if not counts:
        return "<p>No infrastructure failures.</p>\n"
    kinds = sorted({kind for c in counts.values() for kind in c})
    head = "<th>id</th>" + "".join(f"<th>{escape(k)}</th>" for k in kinds) + "<th>total</th>"
    body = "".join(
        f"<tr>{_td(agent, True)}"
        + "".join(f'<td class="num">{counts[agent][k]}</td>' for k in kinds)
        + f'<td class="num">{sum(counts[agent].values())}</td></tr>'
        for agent in sorted(counts)
    )
    return (
        f'<table class="data" data-table="infra"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>\n"
    )


def _task_table(tasks: Sequence[TaskRow]) -> str:
    columns = (
        "id",
        "task",
        "trial",
        "category",
        "difficulty",
        "eligible",
        "passed",
        "reward",
        "time (s)",
        "infra failure",
    )
    head = "".join(f"<th>{c}</th>" for c in columns)
    body = []
    for t in tasks:
        status = (
            "pass"
            if t.passed and t.score_eligible
            else ("infra" if not t.score_eligible else "fail")
        )
        values = (
            t.agent,
            t.task_id,
            t.trial_id,
            t.category,
            t.difficulty,
            t.score_eligible,
            t.passed,
            t.reward,
            t.time_used,
            t.infra_failure_type,
        )
        cells = "".join(_td(v, i == 0) for i, v in enumerate(values))
        body.append(f'<tr class="{status}">{cells}</tr>')
    if not body:
        body.append(f'<tr><td colspan="{len(columns)}">no rows</td></tr>')
    return (
        f'<table class="data" data-table="tasks"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>\n"
    )


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;
max-width:1200px;padding:0 1rem;color:#111827;background:#fff}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;
border-bottom:1px solid #e5e7eb;padding-bottom:.3rem}
.meta{color:#4b5563;font-size:.9rem}
table.data{border-collapse:collapse;font-size:.85rem;margin:.6rem 0;width:100%}
table.data th,table.data td{border:1px solid #e5e7eb;padding:.25rem .5rem}
table.data th{background:#f3f4f6;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.pass td{background:#f0fdf4}tr.infra td{background:#fff7ed}
svg.chart{display:block;margin:.5rem 0;font-size:11px}
svg .grid{stroke:#e5e7eb}svg .tick{fill:#6b7280;text-anchor:middle}
svg .label{fill:#111827;text-anchor:end}svg .value{fill:#374151}
svg .ci{stroke:#111827;stroke-width:1.2}svg .track{fill:#f3f4f6}
td.id{white-space:nowrap;font-family:ui-monospace,monospace;font-size:.8rem}
.legend{font-size:.8rem;margin-top:.4rem}.key{margin-right:1rem;white-space:nowrap}
.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
"""


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )
