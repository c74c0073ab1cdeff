"""Query results as text: an aligned table, JSON, CSV or a Markdown table."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any, Literal

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
    cells = [list(result.columns), *[[cell(v) for v in row] for row in result.rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(result.columns))]
    numeric = [
        all(isinstance(row[i], (int, float)) or row[i] is None for row in result.rows)
        and bool(result.rows)
        for i in range(len(result.columns))
    ]

    def line(values: list[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
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
