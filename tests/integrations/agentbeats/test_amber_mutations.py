"""Our Amber check gives Amber v0.4's verdict on every mutation of the example manifests.

The mutations and Amber's verdicts are data (``amber_mutations.json5``, each with the rule it
follows); the verdict is whether ``amber check`` fails, and the lints it prints. Where a real
Amber CLI is on PATH (or ``$AMBER``), the same mutations are also run through it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import json5
import pytest

from integrations.agentbeats.amber import check_manifests

REPO_ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = REPO_ROOT / "integrations" / "agentbeats"
GATEWAY = (
    REPO_ROOT
    / "tests"
    / "data"
    / "published"
    / "amber"
    / "agentbeats-gateway__amber-manifest.json5"
)
MUTATIONS: list[dict[str, Any]] = json5.loads(
    (Path(__file__).with_name("amber_mutations.json5")).read_text()
)


def _apply(doc: Any, op: list[Any]) -> None:
    kind, path = op[0], op[1]
    node = doc
    for key in path[:-1]:
        node = node[key]
    last = path[-1]
    if kind == "set":
        node[last] = op[2]
    elif kind == "del":
        del node[last]
    elif kind == "append":
        node[last].append(op[2])
    elif kind == "pop":
        node[last].pop(op[2])
    else:
        raise ValueError(f"unknown op {kind!r}")


def _examples(folder: Path) -> None:
    """The six examples, with the scenarios' remote gateway replaced by its published copy."""
    for path in EXAMPLES.glob("*.json5"):
        doc = json5.loads(path.read_text())
        gateway = doc.get("components", {}).get("gateway")
        if isinstance(gateway, dict) and str(gateway.get("manifest", "")).startswith("https://"):
            gateway["manifest"] = "./gateway.json5"
        (folder / path.name).write_text(json.dumps(doc, indent=2))
    shutil.copy(GATEWAY, folder / "gateway.json5")


def _mutated(folder: Path, case: dict[str, Any]) -> Path:
    _examples(folder)
    target = folder / f"{case['base']}.json5"
    doc = json.loads(target.read_text())
    for op in case["ops"]:
        _apply(doc, op)
    target.write_text(json.dumps(doc, indent=2))
    return target


def test_the_data_is_well_formed() -> None:
    ids = [case["id"] for case in MUTATIONS]
    assert len(ids) == len(set(ids)) and len(ids) >= 70
    for case in MUTATIONS:
        assert case["amber"] in ("error", "ok") and case["reason"], case["id"]
        assert (EXAMPLES / f"{case['base']}.json5").exists(), case["id"]


def test_unmutated_examples_pass(tmp_path: Path) -> None:
    _examples(tmp_path)
    assert check_manifests(sorted(tmp_path.glob("*.json5"))) == []


@pytest.mark.parametrize("case", MUTATIONS, ids=[case["id"] for case in MUTATIONS])
def test_our_verdict_is_ambers(case: dict[str, Any], tmp_path: Path) -> None:
    findings = check_manifests([_mutated(tmp_path, case)])
    rendered = [f.render() for f in findings]
    errors = [f for f in findings if f.severity == "error"]
    assert ("error" if errors else "ok") == case["amber"], (case["reason"], rendered)
    lints = sorted({f.rule for f in findings if f.severity == "warning"})
    assert lints == sorted(case["lints"]), (case["reason"], rendered)


def _amber() -> str | None:
    named = os.environ.get("AMBER")
    return named if named and os.access(named, os.X_OK) else shutil.which("amber")


LINT_LINE = re.compile(r"^\s*(manifest::[a-z_]+)\s*$")


@pytest.mark.skipif(_amber() is None, reason="no Amber CLI (set $AMBER or put amber on PATH)")
@pytest.mark.parametrize("case", MUTATIONS, ids=[case["id"] for case in MUTATIONS])
def test_the_real_amber_agrees(case: dict[str, Any], tmp_path: Path) -> None:
    amber = _amber()
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
