"""``task-set build|digest|verify|shard`` and ``config check``, through the real entry point."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from task_sets.cli import config, task_set
from task_sets.digest import task_set_digest
from task_sets.manifest import PACKAGED_DIR, load_task_set
from tests.support import REPO_ROOT, TASKS_DIR
from tests.task_sets.support import make_task

V1_1_DIGEST = "sha256:3c9432bb1a4bd1b66ddbc175bb1f43bf546f7de663d1b2aa0327a88bff7ecd39"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_digest_of_v1_1_is_computed() -> None:
    result = cli("task-set", "digest", "task_sets/skillsbench-v1.1.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout == V1_1_DIGEST + "\n"


def test_digest_is_computed_not_read(tmp_path: Path) -> None:
    data = json.loads((PACKAGED_DIR / "skillsbench-v1.1.json").read_text())
    data["tasks"][0]["tags"].append("changed")  # stored task_set_digest left as it was
    copy = tmp_path / "changed.json"
    copy.write_text(json.dumps(data, indent=2))
    result = cli("task-set", "digest", str(copy))
    assert result.returncode == 0, result.stderr
    printed = result.stdout.strip()
    assert printed != V1_1_DIGEST
    assert printed == task_set_digest(data)


def test_digest_by_name() -> None:
    result = CliRunner().invoke(task_set, ["digest", "smoke"])
    assert result.exit_code == 0
    assert result.output.strip() == load_task_set("smoke").task_set_digest


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["task-set", "digest", "missing.json"], ["missing.json", "no such file"]),
        (["task-set", "digest", "nope"], ["unknown task set 'nope'"]),
        (["task-set", "verify", "README.md"], ["README.md", "not valid JSON"]),
        (
            ["task-set", "shard", "smoke", "--shard-index", "2", "--num-shards", "2"],
            ["shard_index"],
        ),
        (["task-set", "build", "no-such-dir", "--name", "x"], ["tasks folder does not exist"]),
        (["config", "check", '{"num_shards": "two"}'], ["num_shards: must be a whole number"]),
        (["config", "check", "@missing-config.json"], ["missing-config.json"]),
        (
            ["config", "check", '{"task_set": "examples", "task_ids": ["citation-check"]}'],
            ["task_ids"],
        ),
    ],
)
def test_bad_input_is_one_line_on_stderr(args: list[str], needles: list[str]) -> None:
    assert_one_line_error(cli(*args), *needles)


def test_digest_of_a_non_object(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text("[1]")
    assert_one_line_error(cli("task-set", "digest", str(tmp_path / "list.json")), "JSON object")


def test_build_reproduces_examples(tmp_path: Path) -> None:
    out = tmp_path / "examples.json"
    result = cli("task-set", "build", "tasks", "--name", "examples", "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == (PACKAGED_DIR / "examples.json").read_bytes()
    assert "6 tasks" in result.stderr


def test_build_leaves_out_and_lists_refused_folders(tmp_path: Path) -> None:
    # One bad folder must not abort the set: the rest is built, each refusal named once.
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR, tasks)
    (tasks / "half-life-fit" / "instruction.md").unlink()
    toml = tasks / "grid-path-count" / "task.toml"
    toml.write_text(toml.read_text().replace('version = "1.0"', 'version = "7.0"'))
    licences = tasks / "auth-log-triage" / "environment" / "skills" / "licenses"
    licences.mkdir(parents=True)
    (licences / "LICENSE").write_text("MIT\n")
    out = tmp_path / "m.json"
    args = ["task-set", "build", str(tasks), "--name", "some", "--output", str(out)]
    result = cli(*args)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    stderr = result.stderr.splitlines()
    assert "refused: half-life-fit: not a task folder: missing instruction.md" in stderr
    assert any(
        line.startswith("refused: grid-path-count: task.toml: version") and "'7.0'" in line
        for line in stderr
    ), result.stderr
    assert any(
        line.startswith("warning: auth-log-triage: environment/skills/licenses has no SKILL.md")
        for line in stderr
    ), result.stderr
    assert "2 task folder(s) refused" in result.stderr
    first = out.read_bytes()
    built = [t["task_id"] for t in json.loads(first)["tasks"]]
    examples = [
        t["task_id"] for t in json.loads((PACKAGED_DIR / "examples.json").read_text())["tasks"]
    ]
    assert built == [t for t in examples if t not in {"half-life-fit", "grid-path-count"}]
    out.unlink()
    allowed = cli(*args, "--allow-refused")
    assert allowed.returncode == 0, allowed.stderr
    assert out.read_bytes() == first


def test_build_to_stdout_with_task_ids() -> None:
    result = CliRunner().invoke(
        task_set,
        [
            "build",
            str(TASKS_DIR),
            "--name",
            "two",
            "--task-id",
            "half-life-fit",
            "--task-id",
            "auth-log-triage",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [t["task_id"] for t in data["tasks"]] == ["half-life-fit", "auth-log-triage"]
    assert data["task_set_digest"] == task_set_digest(data)


def test_verify_ok_and_with_task_folders() -> None:
    result = cli("task-set", "verify", "examples", "--tasks-dir", "tasks", "--check-task-digests")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: examples (6 tasks, sha256:")


def test_verify_reports_problems(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR, tasks)
    make_task(tmp_path / "tasks-extra", "secret-task")
    data = json.loads((PACKAGED_DIR / "examples.json").read_text())
    data["tasks"].append({**data["tasks"][0], "task_id": "secret-task"})
    data["task_count"] += 1
    data["task_set_digest"] = task_set_digest(data)
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(data))
    (tasks / "grid-path-count" / "tests" / "grid.txt").write_text("..\n..\n")
    result = cli(
        "task-set", "verify", str(manifest), "--tasks-dir", str(tasks), "--check-task-digests"
    )
    assert_one_line_error(
        result, "'secret-task' lives in tasks-extra/", "grid-path-count: task_digest is"
    )


def test_verify_digest_flag_needs_tasks_dir() -> None:
    result = CliRunner().invoke(task_set, ["verify", "smoke", "--check-task-digests"])
    assert result.exit_code == 2 and "--check-task-digests needs --tasks-dir" in result.output


def test_shard_prints_ids_in_order() -> None:
    result = cli("task-set", "shard", "skillsbench-v1.1", "--shard-index", "6", "--num-shards", "7")
    assert result.returncode == 0, result.stderr
    ids = load_task_set("skillsbench-v1.1").task_ids
    assert result.stdout.split() == ids[6::7]


def test_shard_json() -> None:
    result = CliRunner().invoke(
        task_set, ["shard", "examples", "--shard-index", "0", "--num-shards", "4", "--json"]
    )
    assert result.exit_code == 0
    entries = json.loads(result.stdout)
    assert [e["task_id"] for e in entries] == load_task_set("examples").task_ids[0::4]


def test_config_check_json_and_file(tmp_path: Path) -> None:
    raw = {"task_set": "examples", "num_shards": "3", "shard_index": "1", "num_instances": "2"}
    inline = cli("config", "check", json.dumps(raw))
    assert inline.returncode == 0, inline.stderr
    assert inline.stdout.split() == load_task_set("examples").task_ids[1::3]
    (tmp_path / "config.json").write_text(json.dumps(raw))
    from_file = CliRunner().invoke(config, ["check", f"@{tmp_path / 'config.json'}", "--json"])
    assert from_file.exit_code == 0, from_file.output
    body = json.loads(from_file.stdout)
    assert body["config"]["num_instances"] == 2
    assert body["selection"]["num_instances"] == 2
    assert [t["task_id"] for t in body["selection"]["tasks"]] == inline.stdout.split()


def test_config_check_with_manifest_file(tmp_path: Path) -> None:
    manifest = tmp_path / "smoke.json"
    shutil.copy(PACKAGED_DIR / "smoke.json", manifest)
    result = CliRunner().invoke(
        config, ["check", '{"task_set": "smoke"}', "--manifest", str(manifest)]
    )
    assert result.exit_code == 0 and result.stdout == "citation-check\n"


def test_config_check_help_lists_keys() -> None:
    result = CliRunner().invoke(config, ["check", "--help"])
    assert "participant_ids" in result.output and "num_instances" in result.output
