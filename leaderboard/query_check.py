"""Run the three leaderboard queries over the results files readiness evidence names.

Readiness evidence records each query's row count; validation re-runs them so the counts cannot be
copied from an unrelated run. Loading and running go through ``leaderboard.query`` (the way
AgentBeats does it). A ``QueryRunner`` runs each set of files once, so ``readiness assemble``
records the counts and validates them from the same run.
"""

from __future__ import annotations

import glob
from collections.abc import Mapping, Sequence
from pathlib import Path

from leaderboard.query import QUERY_NAMES, QueryResult, connect, load_results, query_sql, run_query

__all__ = ["QUERY_NAMES", "QueryRunner", "load_queries", "run_queries"]


def load_queries(queries_dir: Path | None = None) -> dict[str, str]:
    """The SQL text of each query, from ``<dir>/<name>.sql`` (default: the packaged queries)."""
    if queries_dir is None:
        return {name: query_sql(name) for name in QUERY_NAMES}
    queries: dict[str, str] = {}
    for name in QUERY_NAMES:
        path = queries_dir / f"{name}.sql"
        if not path.is_file():
            raise ValueError(
                f"leaderboard query {name!r} not found: no {name}.sql in {queries_dir}"
            )
        queries[name] = path.read_text(encoding="utf-8")
    return queries


def run_queries(files: Sequence[Path], queries: Mapping[str, str]) -> dict[str, QueryResult]:
    """Each query's result over ``files`` loaded as table ``results``; ValueError if one fails."""
    if not files:
        raise ValueError("no results files to query")
    con = connect()
    try:
        # Escaped, so a file name with glob characters names only itself.
        load_results(con, [glob.escape(str(path)) for path in files])
        return {name: run_query(con, name, sql) for name, sql in queries.items()}
    finally:
        con.close()


class QueryRunner:
    """The queries, run at most once per set of results files."""

    def __init__(self, queries: Mapping[str, str]) -> None:
        self.queries = dict(queries)
        self._results: dict[frozenset[Path], dict[str, QueryResult]] = {}

    def run(self, files: Sequence[Path]) -> dict[str, QueryResult]:
        key = frozenset(Path(path).resolve() for path in files)
        if key not in self._results:
            self._results[key] = run_queries(files, self.queries)
        return self._results[key]
