"""Run the leaderboard queries over results files the way AgentBeats does.

AgentBeats loads ``results/*.json`` with ``read_json_auto(…, filename = true)`` into a table named
``results`` and runs each SQL query on it. We do the same; files in the other two shapes (gateway
exports, bare envelopes) are first rewritten into the published shape in a temporary folder and
loaded in the same ``read_json_auto`` call, their ``filename`` set back to the original path.
"""

from __future__ import annotations

import glob
import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import duckdb

from leaderboard.results_files import ResultsFile, expand_results_paths, read_results_file

QueryName = Literal["overall", "by_category", "by_difficulty"]
QUERY_NAMES: tuple[QueryName, ...] = ("overall", "by_category", "by_difficulty")


def query_sql(name: str) -> str:
    """The SQL text of one of our queries (``leaderboard/queries/<name>.sql``)."""
    if name not in QUERY_NAMES:
        raise ValueError(f"unknown query {name!r} (choose from {', '.join(QUERY_NAMES)})")
    return resources.files("leaderboard").joinpath("queries", f"{name}.sql").read_text()


@dataclass(frozen=True)
class QueryResult:
    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@dataclass(frozen=True)
class LoadedResults:
    """What was loaded: the files and their shapes."""

    files: tuple[ResultsFile, ...]

    @property
    def rewritten(self) -> int:
        return sum(1 for f in self.files if f.shape != "published")


def connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")
    return con


def load_results(
    con: duckdb.DuckDBPyConnection,
    patterns: Iterable[str],
    participant: str | None = None,
) -> LoadedResults:
    """Create the table ``results`` from the files ``patterns`` name."""
    paths = expand_results_paths(patterns)
    files = tuple(read_results_file(path, participant) for path in paths)
    with _published_paths(files) as (load_paths, originals):
        if not load_paths:
            raise ValueError("the results files hold no envelopes to load")
        try:
            con.execute(
                "CREATE OR REPLACE TABLE results AS "
                "SELECT * FROM read_json_auto($files, filename = true)",
                {"files": load_paths},
            )
        except duckdb.Error as exc:
            raise ValueError(f"DuckDB cannot load the results files: {_first_line(exc)}") from None
        if originals:
            con.execute("CREATE TEMP TABLE _renamed (rewritten VARCHAR, original VARCHAR)")
            con.executemany("INSERT INTO _renamed VALUES (?, ?)", list(originals.items()))
            con.execute(
                "UPDATE results SET filename = _renamed.original FROM _renamed "
                "WHERE results.filename = _renamed.rewritten"
            )
            con.execute("DROP TABLE _renamed")
    return LoadedResults(files)


def run_query(con: duckdb.DuckDBPyConnection, name: str, sql: str | None = None) -> QueryResult:
    """Run one query on the loaded ``results`` table."""
    text = sql if sql is not None else query_sql(name)
    try:
        cursor = con.execute(text)
        rows = cursor.fetchall()
    except duckdb.Error as exc:
        raise ValueError(f"query {name} cannot run on these results: {_first_line(exc)}") from None
    description = cursor.description or []
    return QueryResult(
        name=name,
        columns=tuple(str(d[0]) for d in description),
        types=tuple(str(d[1]) for d in description),
        rows=tuple(tuple(_plain(v) for v in row) for row in rows),
    )


def run_queries(
    patterns: Iterable[str],
    names: Sequence[str] = QUERY_NAMES,
    participant: str | None = None,
) -> dict[str, QueryResult]:
    """Load the files and run the named queries: name -> result."""
    con = connect()
    try:
        load_results(con, patterns, participant)
        return {name: run_query(con, name) for name in names}
    finally:
        con.close()


@contextmanager
def _published_paths(
    files: Sequence[ResultsFile],
) -> Iterator[tuple[list[str], dict[str, str]]]:
    """Paths to hand to read_json_auto, in input order (so rows keep the order a glob would
    give); other shapes are rewritten, and published files whose name DuckDB would read as a
    glob (``*``, ``?``, ``[``) copied, into a temporary folder."""
    if all(f.shape == "published" and not glob.has_magic(str(f.path)) for f in files):
        yield [str(f.path) for f in files], {}
        return
    load_paths: list[str] = []
    originals: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="skillsbench-results-") as tmp:
        for index, item in enumerate(files):
            if item.shape == "published" and not glob.has_magic(str(item.path)):
                load_paths.append(str(item.path))
                continue
            targets = [
                Path(tmp) / f"{index:06d}-{part}.json" for part in range(len(item.documents))
            ]
            if item.shape == "published":
                targets = [Path(tmp) / f"{index:06d}.json"]
                shutil.copyfile(item.path, targets[0])
            for target, doc in zip(targets, item.documents, strict=False):
                target.write_text(json.dumps(doc))
            load_paths.extend(str(target) for target in targets)
            originals.update((str(target), str(item.path)) for target in targets)
        yield load_paths, originals


def _plain(value: Any) -> Any:
    """DuckDB values as JSON-friendly Python values (UUID -> str)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
