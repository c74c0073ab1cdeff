"""A static HTML leaderboard page: the three query tables with 95% Wilson intervals, pass-rate
charts by category and by difficulty (inline SVG), infra-failure counts and per-task results.

Everything is inline (CSS, SVG, one small script that sorts tables); the page loads nothing, so it
works offline and from a file. It fits a 1280 px window without horizontal scrolling, shows each
agent's label (``--labels`` map) beside its AgentBeats id, puts a unit on every column (pass rate
and mean reward both in %), and notes when agents ran different numbers of tasks.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from leaderboard.display import (
    AGENT,
    HEADINGS,
    Z95,
    display_columns,
    display_rows,
    fraction,
    percent,
    wilson_interval,
)
from leaderboard.query import (
    QUERY_NAMES,
    QueryResult,
    connect,
    load_results,
    run_query,
)
from leaderboard.rows import usage_cost, usage_count

__all__ = [
    "SECTION_CSS",
    "USAGE_SOURCE_NAMES",
    "Z95",
    "GroupLinks",
    "TrialLinks",
    "build_report",
    "load_labels",
    "report_sections",
    "wilson_interval",
]

# A trial id -> the address of its transcript, or None where its job folder is not known.
TrialLinks = Callable[[str], str | None]
# The trial ids behind one cell of a table (an agent, or an agent in a category or difficulty)
# -> the address of a list of those trials, or None where none of their job folders is known.
GroupLinks = Callable[[list[str]], str | None]
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
  CAST(r.infra_failure_type AS VARCHAR),
  -- The whole row as JSON: the usage keys are optional (older rows lack them), so they are read
  -- from it rather than named, which would fail on files where no row has them.
  CAST(to_json(r) AS VARCHAR)
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
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    usage_source: str | None = None


def _task_row(raw: Sequence[Any]) -> TaskRow:
    row = json.loads(raw[-1]) if raw[-1] else {}
    source = row.get("usage_source")
    return TaskRow(
        agent=str(raw[0]),
        task_id=raw[1],
        trial_id=raw[2],
        category=raw[3],
        difficulty=raw[4],
        score_eligible=raw[5],
        passed=raw[6],
        reward=raw[7],
        time_used=raw[8],
        infra_failure_type=raw[9],
        # DuckDB reads a column mixing 175 and 0.5 as DOUBLE: counts may come back as 175.0.
        input_tokens=usage_count(row.get("input_tokens")),
        output_tokens=usage_count(row.get("output_tokens")),
        cost_usd=usage_cost(row.get("cost_usd")),
        usage_source=source if isinstance(source, str) else None,
    )


_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def load_labels(path: Path) -> dict[str, str]:
    """A label map file: a JSON object ``{"<AgentBeats UUID>": "label", ...}``.

    Raises ValueError with a one-line message naming the file and the problem.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the label map: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path}: the label map is not JSON: {exc.msg} (line {exc.lineno})"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f'{path}: the label map must be a JSON object {{"<agent UUID>": "label"}}')
    labels: dict[str, str] = {}
    for key, value in data.items():
        if not _UUID.match(key):
            raise ValueError(f"{path}: {key!r} is not an AgentBeats agent UUID")
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{path}: the label of {key} must be a non-empty string")
        labels[key.lower()] = value.strip()
    return labels


def build_report(
    patterns: Iterable[str],
    *,
    participant: str | None = None,
    title: str = "SkillsBench leaderboard",
    labels: Mapping[str, str] | None = None,
    trial_links: TrialLinks | None = None,
) -> str:
    """The whole page: ``report_sections`` in a self-contained HTML document."""
    body = report_sections(
        patterns, participant=participant, title=title, labels=labels, trial_links=trial_links
    )
    return _page(escape(title), body)


def report_sections(
    patterns: Iterable[str],
    *,
    participant: str | None = None,
    title: str = "SkillsBench leaderboard",
    labels: Mapping[str, str] | None = None,
    trial_links: TrialLinks | None = None,
    group_links: GroupLinks | None = None,
) -> str:
    """The page's content (title, tables, charts), without the document around it: the viewer
    shows it in its own page. ``trial_links`` maps a trial id to its transcript's address (None
    when its job folder is not known); ``group_links`` the trial ids behind a row of the
    overall, category and difficulty tables to a list of them (its "Tasks passed" links
    there)."""
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
    tasks = [_task_row(row) for row in raw]
    agents = [str(row[0]) for row in tables["overall"].rows]
    names = Names({k.lower(): v for k, v in (labels or {}).items()})
    colors = {agent: PALETTE[i % len(PALETTE)] for i, agent in enumerate(agents)}
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")

    def behind(record: dict[str, Any]) -> str | None:
        """The address of the trials behind one row of a query table (``group_links``)."""
        if group_links is None:
            return None
        ids = [
            t.trial_id
            for t in tasks
            if t.trial_id
            and t.agent.lower() == str(record.get(AGENT)).lower()
            and ("Category" not in record or t.category == record["Category"])
            and ("Difficulty" not in record or t.difficulty == record["Difficulty"])
        ]
        return group_links(ids) if ids else None

    sections = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{len(loaded.files)} results file(s), {len(tasks)} public row(s), '
        f"{len(agents)} agent(s) · generated {now} · pass-rate intervals are 95% Wilson "
        "score intervals over distinct score-eligible tasks · pass rate and mean reward are in %, "
        "time per task is the mean in seconds over eligible tasks (the query's total time over "
        "its task count) · click a column heading to sort.</p>",
        _coverage_note(tables["overall"], names),
        _section("Overall", _table(tables["overall"], names, behind), "overall"),
        _section(
            "Pass rate by category",
            _chart(tables["by_category"], "Category", colors, names)
            + _table(tables["by_category"], names, behind),
            "by-category",
        ),
        _section(
            "Pass rate by difficulty",
            _chart(tables["by_difficulty"], "Difficulty", colors, names)
            + _table(tables["by_difficulty"], names, behind),
            "by-difficulty",
        ),
        _section("Usage: tokens and cost", _usage_table(tasks, names), "usage"),
        _section("Infrastructure failures", _infra_table(tasks, names), "infra"),
        _section("Per-task results", _task_table(tasks, names, trial_links), "tasks"),
    ]
    return "\n".join(s for s in sections if s)


@dataclass(frozen=True)
class Names:
    """Agent labels by lower-case AgentBeats id; an agent without one shows its id alone."""

    labels: Mapping[str, str]

    def label(self, agent: str) -> str | None:
        return self.labels.get(agent.lower())

    def cell(self, agent: str, *, short: bool = False) -> str:
        """A table cell: the label (when known) beside the id; ``short`` keeps the id's tail."""
        label = self.label(agent)
        shown = f"…{agent[-12:]}" if short and len(agent) > 14 else agent
        name = f'<span class="name">{escape(label)}</span> ' if label else ""
        return (
            f'<td class="agent" data-sort="{escape(label or agent)}" title="{escape(agent)}">'
            f'{name}<code class="uuid">{escape(shown)}</code></td>'
        )

    def short(self, agent: str) -> str:
        """A few words that name the agent in a chart: its label (cut), else its id's tail."""
        label = self.label(agent)
        if label:
            return label if len(label) <= 28 else label[:27] + "…"
        return f"…{agent[-12:]}" if len(agent) > 14 else agent

    def text(self, agent: str) -> str:
        label = self.label(agent)
        return f"{label} ({agent})" if label else agent


def _coverage_note(overall: QueryResult, names: Names) -> str:
    """A note when agents ran different numbers of tasks: their rates are not over one set."""
    counts = {str(r["id"]): r.get("# Tasks") for r in overall.records()}
    if len({c for c in counts.values()}) <= 1:
        return ""
    most = max(int(c or 0) for c in counts.values())
    listed = ", ".join(f"{escape(names.text(agent))}: {count}" for agent, count in counts.items())
    return (
        f'<p class="note coverage"><strong>Coverage differs:</strong> agents ran different '
        f"numbers of tasks (most: {most}; {listed}). Pass rates over different task sets are "
        "not directly comparable; compare agents within a category or difficulty, or on the "
        "per-task rows.</p>"
    )


def _section(title: str, body: str, anchor: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>\n{body}</section>'


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _td(value: Any, sort: Any = None) -> str:
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    key = "" if sort is None else f' data-sort="{escape(str(sort))}"'
    return f'<td class="{"num" if numeric else "txt"}"{key}>{escape(_fmt(value))}</td>'


def _table(
    result: QueryResult,
    names: Names,
    behind: Callable[[dict[str, Any]], str | None] = lambda record: None,
) -> str:
    """A query table as shown (leaderboard.display), its pass rate with the 95% interval;
    ``behind``: the address of a row's trials, which its "Tasks passed" links."""
    head = "".join(f"<th>{escape(c)}</th>" for c in display_columns(result))
    body = []
    for record, shown in zip(result.records(), display_rows(result), strict=True):
        href = behind(record)
        cells = []
        for key, cell in shown.items():
            if key == AGENT:
                cells.append(names.cell(cell.text))
                continue
            kind = "num" if cell.numeric else "txt"
            text = escape(cell.text)
            if key == "Tasks passed" and href:
                text = f'<a class="behind" href="{escape(href)}">{text}</a>'
            cells.append(f'<td class="{kind}" data-sort="{escape(str(cell.sort))}">{text}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(result.columns) + 1}">no rows</td></tr>')
    return _wrap(
        f'<table class="data sortable" data-query="{escape(result.name)}">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _wrap(table: str) -> str:
    """A table in a box that scrolls sideways itself if it ever is wider than the page."""
    return f'<div class="table-box">{table}</div>\n'


def _chart(result: QueryResult, dimension: str, colors: dict[str, str], names: Names) -> str:
    """Horizontal bars of pass rate per (group, agent) with Wilson whiskers, inline SVG.

    The SVG scales to the page's full width (``width="100%"`` over a fixed viewBox), down to
    a width where its text is still readable; below that its box scrolls sideways.
    """
    groups: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for record in result.records():
        groups[str(record[dimension])].append((str(record["id"]), *fraction(record)))
    if not groups:
        return "<p>No rows to chart.</p>\n"
    # One agent order in every group (the overall table's), so a bar's place names its agent
    # as much as its colour does; the value label names it too.
    order = {agent: i for i, agent in enumerate(colors)}
    for bars in groups.values():
        bars.sort(key=lambda bar: (order.get(bar[0], len(order)), bar[0]))
    width, label_w, value_w, bar_h, gap, top = 1160, 250, 330, 14, 10, 28
    bar_w = width - label_w - value_w
    height = top + sum(len(v) * (bar_h + 2) + gap for v in groups.values()) + 10
    parts = [
        f'<svg class="chart" role="img" aria-label="Pass rate by {escape(dimension.lower())}" '
        f'xmlns="http://www.w3.org/2000/svg" width="100%" '
        f'viewBox="0 0 {width} {height}" preserveAspectRatio="xMinYMin meet">'
    ]
    for tick in range(0, 101, 10):
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
                f'fill="{color}"><title>{escape(names.text(agent))}: {passed}/{total}</title></rect>'
                f'<line x1="{x_low:.1f}" y1="{mid:.1f}" x2="{x_high:.1f}" y2="{mid:.1f}" '
                f'class="ci"/><line x1="{x_low:.1f}" y1="{y + 3:.1f}" x2="{x_low:.1f}" '
                f'y2="{y + bar_h - 3:.1f}" class="ci"/><line x1="{x_high:.1f}" y1="{y + 3:.1f}" '
                f'x2="{x_high:.1f}" y2="{y + bar_h - 3:.1f}" class="ci"/>'
                f'<text x="{label_w + bar_w + 8}" y="{mid + 4:.1f}" class="value">'
                f"{escape(names.short(agent))}: {100 * rate:.1f}% ({passed}/{total})</text>"
            )
            y += bar_h + 2
        y += gap
    parts.append("</svg>")
    legend = "".join(
        f'<span class="key"><span class="swatch" style="background:{color}"></span>'
        f"{escape(names.text(agent))}</span>"
        for agent, color in colors.items()
    )
    chart = "".join(parts)
    return f'<div class="legend">{legend}</div>\n<div class="chart-box">{chart}</div>\n'


# Whose word each usage source is (rows' usage_source, docs/usage.md): measured and reported usage
# are shown on separate lines and never summed together.
USAGE_SOURCE_NAMES = {
    "provider_response": "measured by the worker (model provider responses)",
    "agent_native_acp": "measured by the worker (the agent's ACP usage report)",
    "participant_reported": "reported by the participant (not measured)",
    None: "not recorded",
}
_USAGE_COLUMNS = (
    HEADINGS[AGENT],
    "Usage source",
    "Trials (count)",
    "Input tokens (tokens, total)",
    "Output tokens (tokens, total)",
    "Total tokens (tokens, total)",
    "Cost (USD, total)",
)


def _usage_table(tasks: Sequence[TaskRow], names: Names) -> str:
    """Per agent and usage source: the trials' summed tokens and cost. A figure no trial gave is
    "unknown" (never 0); one only some trials gave is their sum, with how many gave it."""
    groups: dict[tuple[str, str | None], list[TaskRow]] = defaultdict(list)
    for task in tasks:
        source = task.usage_source if task.usage_source in USAGE_SOURCE_NAMES else None
        groups[(task.agent, source)].append(task)
    if not groups:
        return "<p>No rows.</p>\n"
    head = "".join(f"<th>{escape(c)}</th>" for c in _USAGE_COLUMNS)
    body = []
    order = list(USAGE_SOURCE_NAMES)
    for (agent, source), rows in sorted(
        groups.items(), key=lambda item: (item[0][0], order.index(item[0][1]))
    ):
        totals = [
            t.input_tokens + t.output_tokens
            if t.input_tokens is not None and t.output_tokens is not None
            else None
            for t in rows
        ]
        cells = (
            names.cell(agent)
            + _td(USAGE_SOURCE_NAMES[source])
            + _td(len(rows))
            + _usage_cell([t.input_tokens for t in rows], "{:,}")
            + _usage_cell([t.output_tokens for t in rows], "{:,}")
            + _usage_cell(totals, "{:,}")
            + _usage_cell([t.cost_usd for t in rows], "{:.4f}")
        )
        body.append(f"<tr>{cells}</tr>")
    return _wrap(
        f'<table class="data sortable" data-table="usage"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _usage_cell(values: Sequence[float | None], form: str) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return '<td class="txt unknown" data-sort="-1">unknown</td>'
    total = sum(known)
    text = escape(form.format(total))
    if len(known) == len(values):
        return f'<td class="num" data-sort="{total}">{text}</td>'
    return (
        f'<td class="num partial" data-sort="{total}">{text} <small>({len(known)} of '
        f"{len(values)} trials; the rest unknown)</small></td>"
    )


def _infra_table(tasks: Sequence[TaskRow], names: Names) -> str:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for task in tasks:
        if task.infra_failure_type is not None or not task.score_eligible:
            counts[task.agent][task.infra_failure_type or "(none given)"] += 1
    if not counts:
        return "<p>No infrastructure failures.</p>\n"
    kinds = sorted({kind for c in counts.values() for kind in c})
    head = (
        f"<th>{HEADINGS[AGENT]}</th>"
        + "".join(f"<th>{escape(k)} (count)</th>" for k in kinds)
        + "<th>total (count)</th>"
    )
    body = "".join(
        f"<tr>{names.cell(agent)}"
        + "".join(f'<td class="num">{counts[agent][k]}</td>' for k in kinds)
        + f'<td class="num">{sum(counts[agent].values())}</td></tr>'
        for agent in sorted(counts)
    )
    return _wrap(
        f'<table class="data sortable" data-table="infra"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


TASK_COLUMNS = (
    "agent",
    "task",
    "trial",
    "category",
    "difficulty",
    "eligible (yes/no)",
    "passed (yes/no)",
    "reward (%)",
    "time (s)",
    "infra failure (kind)",
)


def _task_table(tasks: Sequence[TaskRow], names: Names, links: TrialLinks | None) -> str:
    head = "".join(f"<th>{c}</th>" for c in TASK_COLUMNS)
    body = []
    for t in tasks:
        status = (
            "pass"
            if t.passed and t.score_eligible
            else ("infra" if not t.score_eligible else "fail")
        )
        href = links(t.trial_id) if links and t.trial_id else None
        trial = (
            f'<td class="txt trial"><a href="{escape(href)}">{escape(t.trial_id or "")}</a></td>'
            if href
            else _td(t.trial_id)
        )
        time_used = round(t.time_used, 1) if t.time_used is not None else None
        cells = (
            names.cell(t.agent, short=True)
            + _td(t.task_id)
            + trial
            + "".join(
                _td(v)
                for v in (
                    t.category,
                    t.difficulty,
                    t.score_eligible,
                    t.passed,
                    percent(t.reward),
                    time_used,
                    t.infra_failure_type,
                )
            )
        )
        body.append(f'<tr class="{status}">{cells}</tr>')
    if not body:
        body.append(f'<tr><td colspan="{len(TASK_COLUMNS)}">no rows</td></tr>')
    return _wrap(
        f'<table class="data sortable" data-table="tasks"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


_PAGE_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;
max-width:1200px;padding:0 1rem;color:#111827;background:#fff}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;
border-bottom:1px solid #e5e7eb;padding-bottom:.3rem}
"""
# The sections' own rules: what the viewer adds to its page to show them (view --results).
SECTION_CSS = """
.meta{color:#4b5563;font-size:.9rem}
.note{background:#fffbeb;border:1px solid #fcd34d;padding:.5rem .75rem;font-size:.9rem}
.table-box{max-width:100%;overflow-x:auto}
table.data{border-collapse:collapse;font-size:.85rem;margin:.6rem 0;width:100%}
table.data th,table.data td{border:1px solid #e5e7eb;padding:.25rem .5rem;overflow-wrap:break-word}
td.txt{overflow-wrap:anywhere}
table.data th{background:#f3f4f6;text-align:left;vertical-align:bottom;overflow-wrap:normal;
word-break:normal;hyphens:manual}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}
table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
table[data-table=tasks] th,table[data-table=tasks] td{padding:.25rem .3rem}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.pass td{background:#f0fdf4}tr.infra td{background:#fff7ed}
td.partial{white-space:normal}td.unknown{color:#6b7280;font-style:italic}
td.agent .name{font-weight:600;display:block}
code.uuid{font-family:ui-monospace,monospace;font-size:.75rem;color:#4b5563}
.chart-box{max-width:100%;overflow-x:auto}
svg.chart{display:block;margin:.5rem 0;width:100%;min-width:1000px;height:auto;font-size:12px}
svg .grid{stroke:#e5e7eb}svg .tick{fill:#6b7280;text-anchor:middle}
svg .label{fill:#111827;text-anchor:end}svg .value{fill:#374151}
svg .ci{stroke:#111827;stroke-width:1.2}svg .track{fill:#f3f4f6}
.legend{font-size:.8rem;margin-top:.4rem}.key{margin-right:1rem;display:inline-block}
.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
"""
_CSS = _PAGE_CSS + SECTION_CSS

# Sorting: a click (or Enter) on a column heading sorts its table by that column, again to reverse.
# Cells sort by their data-sort attribute when present, else their text; numbers as numbers.
_SCRIPT = """
(function(){
function key(td){var v=td.getAttribute("data-sort");if(v===null)v=td.textContent.trim();
var n=Number(v);return v!==""&&isFinite(n)?n:v.toLowerCase();}
function sortBy(th){var table=th.closest("table"),body=table.tBodies[0];
var i=Array.prototype.indexOf.call(th.parentNode.children,th);
var up=th.getAttribute("aria-sort")!=="ascending";
Array.prototype.forEach.call(th.parentNode.children,function(h){h.removeAttribute("aria-sort");});
th.setAttribute("aria-sort",up?"ascending":"descending");
var rows=Array.prototype.slice.call(body.rows).filter(function(r){return r.cells.length>i;});
rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]),c;
if(typeof x==="number"&&typeof y==="number")c=x-y;
else c=String(x).localeCompare(String(y));return up?c:-c;});
rows.forEach(function(r){body.appendChild(r);});}
document.querySelectorAll("table.sortable th").forEach(function(th){th.tabIndex=0;
th.title="sort by this column";th.addEventListener("click",function(){sortBy(th);});
th.addEventListener("keydown",function(e){if(e.key==="Enter")sortBy(th);});});
})();
"""


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n{body}\n"
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )
