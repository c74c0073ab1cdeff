"""Our Amber check gives Amber v0.4's verdict on every mutation of the example manifests.

The mutations and Amber's verdicts are data (``amber_mutations.json5``, each with the rule it
follows); the verdict is whether ``amber check`` fails, and the lints it prints. Where a real
Amber CLI is on PATH (or ``$AMBER``), the same mutations are also run through it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import json5
import pytest

from integrations.agentbeats.amber import check_manifests
from tests.integrations.agentbeats.amber_examples import (
    EXAMPLES,
    NO_AMBER,
    apply_op,
    local_examples,
    real_amber,
)

MUTATIONS: list[dict[str, Any]] = json5.loads(
    (Path(__file__).with_name("amber_mutations.json5")).read_text()
)


def _mutated(folder: Path, case: dict[str, Any]) -> Path:
    local_examples(folder)
    target = folder / f"{case['base']}.json5"
    doc = json.loads(target.read_text())
    for op in case["ops"]:
        apply_op(doc, op)
    target.write_text(json.dumps(doc, indent=2))
    return target


def test_the_data_is_well_formed() -> None:
    ids = [case["id"] for case in MUTATIONS]
    assert len(ids) == len(set(ids)) and len(ids) >= 70
    for case in MUTATIONS:
        assert case["amber"] in ("error", "ok") and case["reason"], case["id"]
        assert (EXAMPLES / f"{case['base']}.json5").exists(), case["id"]


def test_unmutated_examples_pass(tmp_path: Path) -> None:
    assert check_manifests(local_examples(tmp_path)) == []


@pytest.mark.parametrize("case", MUTATIONS, ids=[case["id"] for case in MUTATIONS])
def test_our_verdict_is_ambers(case: dict[str, Any], tmp_path: Path) -> None:
    findings = check_manifests([_mutated(tmp_path, case)])
    rendered = [f.render() for f in findings]
    errors = [f for f in findings if f.severity == "error"]
    assert ("error" if errors else "ok") == case["amber"], (case["reason"], rendered)
    lints = sorted({f.rule for f in findings if f.severity == "warning"})
    assert lints == sorted(case["lints"]), (case["reason"], rendered)


LINT_LINE = re.compile(r"^\s*(manifest::[a-z_]+)\s*$")


@pytest.mark.skipif(real_amber() is None, reason=NO_AMBER)
@pytest.mark.parametrize("case", MUTATIONS, ids=[case["id"] for case in MUTATIONS])
def test_the_real_amber_agrees(case: dict[str, Any], tmp_path: Path) -> None:
    amber = real_amber()
    assert amber is not None
    target = _mutated(tmp_path, case)
    done = subprocess.run(
        [amber, "check", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    output = done.stdout + done.stderr
    assert ("error" if done.returncode else "ok") == case["amber"], output
    printed = sorted({m[1] for line in output.splitlines() if (m := LINT_LINE.match(line))})
    assert printed == sorted(case["lints"]), output
