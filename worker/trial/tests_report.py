"""A reward above 0 must be backed by the report test.sh asks pytest for.

Most real verifiers turn pytest's exit code into the reward (``pytest --ctrf
/logs/verifier/ctrf.json ...; if [ $? -eq 0 ]; then echo 1 > reward.txt``). Graded code runs inside
that pytest: a module the tests import that calls ``os._exit(0)`` ends it with 0 before any test
ran, and the reward would say 1. pytest-json-ctrf writes its report only when the session
finishes, so when test.sh asks for one under ``/logs/verifier`` (81 of the 87 real SkillsBench
tasks), a reward above 0 counts only if that report is there, lists a passed test, and, for a
full reward, no failed one. Graded code could still write a report of its own before it exits;
this closes the silent exit, not a forger (docs/sandboxes.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from worker.sandbox.base import VERIFIER_LOGS_DIR

REPORT_MAX_BYTES: Final = 64 * 1024 * 1024
_CTRF_OPTION = re.compile(
    r"--ctrf(?:=|\s+)([\"']?)"
    + re.escape(VERIFIER_LOGS_DIR)
    + r"/([A-Za-z0-9._-]+)\1(?=[\s;&|)]|$)",
    re.MULTILINE,
)


def ctrf_report_name(test_script: str) -> str | None:
    """The file under ``/logs/verifier`` test.sh asks pytest-json-ctrf for, if exactly one."""
    names = {match.group(2) for match in _CTRF_OPTION.finditer(test_script)}
    return names.pop() if len(names) == 1 else None


def report_problem(verifier_dir: Path, name: str, reward: float) -> str | None:
    """Why the report ``name`` in ``verifier_dir`` does not back ``reward``; None when it does."""
    path = verifier_dir / name
    missing = (
        f"{name}, the report tests/test.sh asks pytest for, was not written: a reward above 0 "
        "needs the tests' own report (graded code may have ended pytest before any test ran)"
    )
    if path.is_symlink() or not path.is_file():
        return missing
    try:
        if path.stat().st_size > REPORT_MAX_BYTES:
            return f"{name} is larger than {REPORT_MAX_BYTES >> 20} MB: not read"
        data: Any = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        summary = data["results"]["summary"]
        tests, passed = int(summary["tests"]), int(summary["passed"])
        failed = int(summary.get("failed") or 0)
    except (OSError, ValueError, KeyError, TypeError):
        return f"{name} is not a CTRF report (results.summary with tests and passed counts)"
    if tests < 1 or passed < 1:
        return f"{name} says {passed} of {tests} test(s) passed: a reward above 0 needs one"
    if reward >= 1.0 and failed > 0:
        return f"{name} says {failed} of {tests} test(s) failed: a full reward needs none"
    return None
