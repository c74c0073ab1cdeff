"""The suite's slow tests, longest first: a recorded duration per test ID, so that pytest-xdist
hands out the long items (whole trials, image builds) before the hundreds of short ones.

Why: ``--dist loadgroup`` keeps the collection's order for single tests, and the long trial
modules sort last (``tests/worker/trial``), so one worker ran the red-team items alone for the
last twenty minutes while the other sat idle. Longest-first fills that tail with short tests.

The figures are a hint, never a verdict: a test missing from the file (new, renamed, quick)
keeps its collection order after the recorded ones; a stale figure only moves a test in line.
Refresh them from a run's JUnit report::

    pytest -n auto --dist loadgroup --junitxml=report.xml
    python -m tests.support.durations report.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

DURATIONS_FILE = Path(__file__).resolve().parents[1] / "durations.json"
# Shorter tests are not recorded: their order hardly matters, and the file stays reviewable.
RECORD_AT_LEAST_SEC = 5.0

T = TypeVar("T")


def load(path: Path = DURATIONS_FILE) -> dict[str, float]:
    """Test ID -> seconds; empty when the file is missing or unreadable (order only)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, dict):
        return {}
    return {k: float(v) for k, v in tests.items() if isinstance(v, int | float)}


def longest_first(
    items: Sequence[T], tests: Iterable[tuple[str, str | None]], known: dict[str, float]
) -> list[T]:
    """``items`` (each as its test ID and its xdist group, if any) with the recorded ones first,
    longest first, the rest after in their order. A group runs on one worker as one unit, so
    each of its tests ranks by the group's whole recorded time."""
    ids = list(tests)
    groups: dict[str, float] = {}
    for node, group in ids:
        if group is not None:
            groups[group] = groups.get(group, 0.0) + known.get(node, 0.0)
    weight = [groups[group] if group is not None else known.get(node, 0.0) for node, group in ids]
    order = sorted(range(len(items)), key=lambda i: -weight[i])
    return [items[i] for i in order]


def from_junit(report: Path, root: Path = DURATIONS_FILE.parents[1]) -> dict[str, float]:
    """Test ID -> seconds from a JUnit XML report (pytest's ``--junitxml``) of a run in
    ``root`` (the repository)."""
    found: dict[str, float] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("skipped") is not None:
            continue
        name = _without_group(case.get("name", ""))
        # the module's dotted path, then a class (every junit_family writes classname so)
        module = _module_file(root, case.get("classname", "").split("."))
        if module is None:
            continue
        file, rest = module
        node = "::".join([file, *rest, name])
        found[node] = max(found.get(node, 0.0), float(case.get("time", "0") or 0))
    return found


def _without_group(name: str) -> str:
    """A test's name without the ``@group`` pytest-xdist appends under ``--dist loadgroup``."""
    base, at, tail = name.rpartition("@")
    return base if at and "[" not in tail and "]" not in tail else name


def _module_file(root: Path, parts: list[str]) -> tuple[str, list[str]] | None:
    """The longest prefix of a dotted classname that is a test file here, and what follows it."""
    for cut in range(len(parts), 0, -1):
        candidate = Path(*parts[:cut]).with_suffix(".py")
        if (root / candidate).is_file():
            return candidate.as_posix(), parts[cut:]
    return None


def write(durations: dict[str, float], path: Path = DURATIONS_FILE) -> int:
    kept = {
        node: round(sec, 1)
        for node, sec in sorted(durations.items(), key=lambda kv: (-kv[1], kv[0]))
        if sec >= RECORD_AT_LEAST_SEC
    }
    document = {
        "about": "seconds per test of one full run, for longest-first scheduling "
        "(tests/support/durations.py says how to refresh it)",
        "tests": kept,
    }
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return len(kept)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.support.durations REPORT.xml", file=sys.stderr)
        return 2
    try:
        durations = from_junit(Path(argv[0]))
    except (OSError, ET.ParseError) as exc:
        print(f"cannot read the JUnit report {argv[0]}: {exc}", file=sys.stderr)
        return 1
    if not durations:
        print(f"{argv[0]} names no test that ran here", file=sys.stderr)
        return 1
    print(f"recorded {write(durations)} tests of {len(durations)} in {DURATIONS_FILE.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
