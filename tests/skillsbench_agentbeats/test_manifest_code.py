"""`manifests check`'s own part: our manifests agree with our code (the variables each service
reads, its command and options, its image and Dockerfile); every rule has a failing example."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import json5
import pytest

from skillsbench_agentbeats.manifest_code import check_code_agreement, variables_read
from tests.support import PUBLISHED_DATA, REPO_ROOT

OURS = REPO_ROOT / "integrations" / "agentbeats"
Doc = dict[str, Any]


def test_our_manifests_agree_with_the_code() -> None:
    assert check_code_agreement(sorted(OURS.glob("*.json5"))) == []


def test_published_manifests_run_other_commands_and_are_skipped() -> None:
    assert check_code_agreement(sorted((PUBLISHED_DATA / "amber").glob("*.json5"))) == []


def test_each_service_reads_what_its_manifest_sets() -> None:
    assert "SKILLSBENCH_WORKER_SLOT_URL" in variables_read("green")
    assert {"SKILLSBENCH_WORKER_BUILDS", "DOCKER_HOST"} <= variables_read("worker")
    assert "SKILLSBENCH_AGENT_HARNESS" in variables_read("purple")
    assert "SKILLSBENCH_PRIVATE_PROOF_DIR" not in variables_read("green")


def _env(name: str, value: str) -> Callable[[Doc], None]:
    return lambda d: d["program"]["env"].__setitem__(name, value)


def _arg(index: int, value: str) -> Callable[[Doc], None]:
    return lambda d: d["program"]["entrypoint"].__setitem__(index, value)


def _enum(name: str, values: list[str]) -> Callable[[Doc], None]:
    return lambda d: d["config_schema"]["properties"][name].__setitem__("enum", values)


def _set_program(key: str, value: Any) -> Callable[[Doc], None]:
    return lambda d: d["program"].__setitem__(key, value)


# (rule, manifest, mutation, path, words in the message)
FAILING: list[tuple[str, str, Callable[[Doc], None], str, str]] = [
    ("code_env", "worker", _env("SKILLSBENCH_WORKER_TYPO", "1"), "$.program.env.SKILLSBENCH_WORKER_TYPO", "never reads"),
    ("code_env", "green-agent", _env("SKILLSBENCH_PRIVATE_PROOF_DIR", "x"), "$.program.env.SKILLSBENCH_PRIVATE_PROOF_DIR", "green never reads"),
    ("code_command", "worker", _arg(1, "wrker"), "$.program.entrypoint[1]", "is no command"),
    ("code_command", "worker", _arg(10, "--no-such-option"), "$.program.entrypoint[10]", "not an option of `skillsbench-agentbeats worker`"),
    ("code_command", "worker", _arg(11, "sometimes"), "$.program.entrypoint[11]", "is not one of"),
    ("code_command", "worker", _enum("environment", ["docker", "local", "k8s"]), "$.program.entrypoint[9]", "needs an enum"),
    ("code_image", "worker", _set_program("image", "ghcr.io/o/skillsbench-agentbeats-green:latest"), "$.program.image", "is not the worker image"),
    ("code_image", "worker", _set_program("mounts", [{"name": "s", "path": "/var/run/docker.sock", "from": "framework.docker"}]), "$.program.mounts[0].path", "/var/run is not owned"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "base", "mutate", "path", "words"),
    FAILING,
    ids=[f"{i}-{r}" for i, (r, *_) in enumerate(FAILING)],
)
def test_failing_example(
    rule: str, base: str, mutate: Callable[[Doc], None], path: str, words: str, tmp_path: Path
) -> None:
    doc: Doc = json5.loads((OURS / f"{base}.json5").read_text())
    mutate(doc)
    target = tmp_path / f"{base}.json5"
    target.write_text(json.dumps(doc))
    findings = check_code_agreement([target])
    hits = [f for f in findings if f.rule == rule]
    assert [(f.path, f.severity) for f in hits] == [(path, "error")], [f.render() for f in findings]
    assert words in hits[0].message
    if rule != "code_command" or "no command" not in words:
        assert findings == hits  # nothing else is blamed


def test_cli_reports_disagreement(tmp_path: Path) -> None:
    doc: Doc = json5.loads((OURS / "worker.json5").read_text())
    doc["program"]["env"]["SKILLSBENCH_WORKER_TYPO"] = "1"
    target = tmp_path / "worker.json5"
    target.write_text(json.dumps(doc))
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "manifests", "check", str(target),
         "--checker", "ours"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"error: {target}: $.program.env.SKILLSBENCH_WORKER_TYPO: [code_env]" in done.stdout
