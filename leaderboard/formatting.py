"""Query results as text: an aligned table, JSON, CSV or a Markdown table.

The aligned table is for reading: the report's headings, units and values (leaderboard.display:
mean reward in %, time per task, the pass rate's 95% interval). JSON, CSV and Markdown give the
query's own columns and values, as the published queries do."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any, Literal

from leaderboard.display import display_columns, display_rows
from leaderboard.query import QueryResult

OutputFormat = Literal["table", "json", "csv", "markdown"]
FORMATS: tuple[OutputFormat, ...] = ("table", "json", "csv", "markdown")


def render(results: Mapping[str, QueryResult], fmt: str) -> str:
    """All results in one format; several queries are separated by a titled section."""
    if fmt == "json":
        if len(results) == 1:
            (only,) = results.values()
            return json.dumps(only.records(), indent=2) + "\n"
        return json.dumps({name: r.records() for name, r in results.items()}, indent=2) + "\n"
    render_one = {"table": _table, "csv": _csv, "markdown": _markdown}.get(fmt)
    if render_one is None:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if len(results) == 1:
        return render_one(next(iter(results.values())))
    titles = {"table": "== {} ==\n", "csv": "# {}\n", "markdown": "### {}\n\n"}
    return "\n".join(titles[fmt].format(name) + render_one(r) for name, r in results.items())


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _table(result: QueryResult) -> str:
    # Each heading on two lines, its name over its unit ("Time per task" / "(s, mean)"), so the
    # table keeps the report's wording and still fits a terminal. No labels here: ids only.
    headings = [h.replace("label · ", "") for h in display_columns(result)]
    names = [h.partition(" (")[0] for h in headings]
    units = [f"({h.partition(' (')[2]}" if " (" in h else "" for h in headings]
    shown = [list(row.values()) for row in display_rows(result)]
    body = [[c.text for c in row] for row in shown]
    widths = [max(len(r[i]) for r in (names, units, *body)) for i in range(len(headings))]
    numeric = [bool(shown) and all(row[i].numeric for row in shown) for i in range(len(headings))]

    def line(values: list[str], align: bool = True) -> str:
        parts = [
            v.rjust(w) if num and align else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line(names, False), line(units, False), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in body]
    if not result.rows:
        out.append("(no rows)")
    return "\n".join(out) + "\n"


def _csv(result: QueryResult) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows([[cell(v) for v in row] for row in result.rows])
    return buffer.getvalue()


def _markdown(result: QueryResult) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [
        "| " + " | ".join(esc(c) for c in result.columns) + " |",
        "|" + "|".join("---" for _ in result.columns) + "|",
    ]
    lines += ["| " + " | ".join(esc(cell(v)) for v in row) + " |" for row in result.rows]
    return "\n".join(lines) + "\n"
