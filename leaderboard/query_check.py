"""Run the three leaderboard queries over results files, the way AgentBeats loads them.

Readiness evidence records each query's row count; validation re-runs them here so the counts
cannot be copied from an unrelated run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

QUERY_NAMES: tuple[str, ...] = ("overall", "by_category", "by_difficulty")
DEFAULT_QUERIES_DIR = Path(__file__).resolve().parent / "queries"


def load_queries(queries_dir: Path | None = None) -> dict[str, str]:
    """The SQL text of each query, from ``<dir>/<name>.sql``."""
    directory = queries_dir or DEFAULT_QUERIES_DIR
    queries: dict[str, str] = {}
    for name in QUERY_NAMES:
        path = directory / f"{name}.sql"
        if not path.is_file():
            raise ValueError(f"leaderboard query {name!r} not found: no {name}.sql in {directory}")
        queries[name] = path.read_text(encoding="utf-8")
    return queries


def run_queries(
    files: Sequence[Path], queries: Mapping[str, str]
) -> dict[str, list[tuple[Any, ...]]]:
    """Rows of each query over ``files`` loaded as table ``results`` (read_json_auto, filename)."""
    if not files:
        raise ValueError("no results files to query")
    con = duckdb.connect(":memory:")
    try:
        paths = [str(p) for p in files]
        con.execute(
            "CREATE TABLE results AS SELECT * FROM read_json_auto(?, filename = true)", [paths]
        )
        return {name: con.execute(sql).fetchall() for name, sql in queries.items()}
    except duckdb.Error as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"leaderboard queries failed on the results files: {first_line}") from exc
    finally:
        con.close()
