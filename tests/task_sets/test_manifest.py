"""Task-set manifests: the published digest rule, packaged sets, build, verify, shard, task_digest."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from task_sets.digest import task_digest, task_set_digest
from task_sets.manifest import (
    PACKAGED_DIR,
    TaskEntry,
    TaskSetError,
    TaskSetManifest,
    build_manifest,
    dumps_manifest,
    load_task_set,
    packaged_task_sets,
    parse_manifest,
    read_json,
    shard,
    verify_manifest,
)
from tests.support import PUBLISHED_DATA, TASKS_DIR
from tests.task_sets.support import make_task

PUBLISHED_SETS = sorted(PUBLISHED_DATA.glob("*__task_sets__*.json"))
PUBLISHED_RESULTS = sorted(PUBLISHED_DATA.glob("*__results__*.json"))
V1_1_DIGEST = "sha256:3c9432bb1a4bd1b66ddbc175bb1f43bf546f7de663d1b2aa0327a88bff7ecd39"


def result_rows(file: Path) -> list[dict[str, Any]]:
    data = json.loads(file.read_text())
    return [row for envelope in data["results"] for row in envelope["results"]]


def manifest_from_rows(rows: list[dict[str, Any]]) -> TaskSetManifest:
    """A whole-set manifest rebuilt from a run's rows (each row carries its task's entry)."""
    keys = ("task_id", "task_digest", "category", "difficulty", "tags")
    entries = [TaskEntry(**{k: row[k] for k in keys}) for row in rows]
    return TaskSetManifest.create(task_set=rows[0]["task_set"], tasks=entries)


# --- the published digest rule -------------------------------------------------------------------


def test_published_task_sets_are_present() -> None:
    assert len(PUBLISHED_SETS) == 2 and len(PUBLISHED_RESULTS) == 3


@pytest.mark.parametrize("file", PUBLISHED_SETS, ids=lambda p: p.name)
def test_digest_of_published_manifests(file: Path) -> None:
    data = json.loads(file.read_text())
    assert task_set_digest(data) == data["task_set_digest"]
    assert parse_manifest(data, source=file.name).computed_digest() == data["task_set_digest"]


def test_v1_1_digest_is_the_published_one() -> None:
    assert task_set_digest(read_json(PACKAGED_DIR / "skillsbench-v1.1.json")) == V1_1_DIGEST


def test_digest_covers_every_key_but_itself() -> None:
    data = read_json(PACKAGED_DIR / "skillsbench-v1.1.json")
    base = task_set_digest(data)
    assert task_set_digest({**data, "task_set_digest": "sha256:" + "0" * 64}) == base
    changed = json.loads(json.dumps(data))
    changed["source_registry"]["version"] = "1.2"
    assert task_set_digest(changed) != base
    changed = json.loads(json.dumps(data))
    changed["tasks"][0]["tags"].append("x")
    assert task_set_digest(changed) != base
    # key order in the file does not matter, the rule sorts keys
    assert task_set_digest(dict(reversed(list(data.items())))) == base


@pytest.mark.parametrize("file", PUBLISHED_RESULTS, ids=lambda p: p.name)
def test_digest_of_sets_behind_published_results(file: Path) -> None:
    rows = result_rows(file)
    assert len({row["task_set_digest"] for row in rows}) == 1
    manifest = manifest_from_rows(rows)
    assert manifest.task_set_digest == rows[0]["task_set_digest"]
    # the reconstructed set is the one we ship under the same name
    shipped = load_task_set(manifest.task_set)
    assert dumps_manifest(shipped) == dumps_manifest(manifest)


# --- packaged sets -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "published"),
    [
        (
            "skillsbench-v1.1",
            "benchflow-ai__skillsbench-agentbeats__task_sets__skillsbench-v1.1.json",
        ),
        ("smoke", "benchflow-ai__skillsbench-agentbeats__task_sets__smoke.json"),
    ],
)
def test_packaged_sets_are_byte_identical_to_published(name: str, published: str) -> None:
    assert (PACKAGED_DIR / f"{name}.json").read_bytes() == (PUBLISHED_DATA / published).read_bytes()


@pytest.mark.parametrize("name", sorted(packaged_task_sets()))
def test_every_packaged_set_loads_and_round_trips(name: str) -> None:
    manifest = load_task_set(name)
    assert manifest.task_set == name
    assert dumps_manifest(manifest) == (PACKAGED_DIR / f"{name}.json").read_text()
    assert verify_manifest(read_json(PACKAGED_DIR / f"{name}.json"), source=name) == []


def test_packaged_names() -> None:
    assert {"skillsbench-v1.1", "smoke", "examples"} <= set(packaged_task_sets())
    assert load_task_set("skillsbench-v1.1").task_count == 87


def test_examples_set_is_up_to_date_with_tasks() -> None:
    built = build_manifest(TASKS_DIR, "examples")
    assert dumps_manifest(built) == (PACKAGED_DIR / "examples.json").read_text(), (
        "rebuild: skillsbench-agentbeats task-set build tasks --name examples "
        "-o task_sets/examples.json"
    )
    assert (
        verify_manifest(
            read_json(PACKAGED_DIR / "examples.json"),
            source="examples",
            tasks_dir=TASKS_DIR,
            check_task_digests=True,
        )
        == []
    )


def test_load_by_path_and_unknown_name(tmp_path: Path) -> None:
    copy = tmp_path / "mine.json"
    shutil.copy(PACKAGED_DIR / "smoke.json", copy)
    assert load_task_set(str(copy)).task_set == "smoke"
    assert load_task_set(copy).task_set == "smoke"
    with pytest.raises(TaskSetError, match=r"unknown task set 'nope' \(known: .*smoke"):
        load_task_set("nope")
    with pytest.raises(TaskSetError, match="no such file"):
        load_task_set(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(TaskSetError, match="not valid JSON"):
        load_task_set(str(tmp_path / "bad.json"))


def test_tampered_manifest_is_refused(tmp_path: Path) -> None:
    data = read_json(PACKAGED_DIR / "smoke.json")
    data["tasks"][0]["difficulty"] = "easy"
    (tmp_path / "smoke.json").write_text(json.dumps(data))
    with pytest.raises(TaskSetError, match="does not match the content"):
        load_task_set(str(tmp_path / "smoke.json"))


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.update(task_count=2), "task_count is 2 but tasks lists 1"),
        (lambda d: d.update(schema_version="v2"), "schema_version"),
        (lambda d: d.update(shard_index=1), "shard_index 1 must be below num_shards 1"),
        (lambda d: d.update(num_shards="1"), "num_shards"),
        (lambda d: d.update(extra=1), "extra"),
        (lambda d: d["tasks"][0].update(task_digest="md5:x"), "task_digest"),
        (lambda d: d["tasks"].append(dict(d["tasks"][0])), "listed twice"),
    ],
)
def test_schema_errors_are_named(mutate: Any, expected: str) -> None:
    data = read_json(PACKAGED_DIR / "smoke.json")
    mutate(data)
    if data.get("task_count") == 1 and len(data["tasks"]) == 2:
        data["task_count"] = 2
    data["task_set_digest"] = task_set_digest(data)
    with pytest.raises(TaskSetError, match=expected):
        parse_manifest(data, source="x.json")


# --- build and verify ----------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tasks/{a,b,c} and tasks-extra/hidden-task: a repository layout in miniature."""
    tasks = tmp_path / "tasks"
    for name in ("c-task", "a-task", "b-task"):
        make_task(tasks, name)
    make_task(tmp_path / "tasks-extra", "hidden-task")
    return tasks


def test_build_all_tasks_sorted(tree: Path) -> None:
    manifest = build_manifest(tree, "mini")
    assert manifest.task_ids == ["a-task", "b-task", "c-task"]
    assert manifest.tasks[0].category == "software-engineering"
    assert manifest.tasks[0].tags == ["a", "b"]
    assert manifest.tasks[0].task_digest == task_digest(tree / "a-task")
    assert manifest.task_set_digest == task_set_digest(manifest.document())
    assert (manifest.condition, manifest.shard_index, manifest.num_shards) == ("with_skills", 0, 1)


def test_build_keeps_given_order(tree: Path) -> None:
    manifest = build_manifest(tree, "mini", task_ids=["c-task", "a-task"])
    assert manifest.task_ids == ["c-task", "a-task"]


@pytest.mark.parametrize(
    ("task_ids", "expected"),
    [
        (["hidden-task"], "lives in tasks-extra/"),
        (["../tasks-extra/hidden-task"], "path-like"),
        (["mhc-layer-impl"], "excluded from public task sets"),
        (["missing-task"], "no task folder 'missing-task'"),
        (["a-task", "a-task"], "listed twice"),
    ],
)
def test_build_refuses(tree: Path, task_ids: list[str], expected: str) -> None:
    with pytest.raises(TaskSetError, match=expected):
        build_manifest(tree, "mini", task_ids=task_ids)


def test_build_refuses_tasks_extra_as_source(tree: Path) -> None:
    with pytest.raises(TaskSetError, match="never part of a task set"):
        build_manifest(tree.parent / "tasks-extra", "mini")


def test_build_skips_known_excluded_ids(tree: Path) -> None:
    make_task(tree, "scheduling-email-assistant")
    assert "scheduling-email-assistant" not in build_manifest(tree, "mini").task_ids
    allowed = build_manifest(tree, "mini", allow_excluded_tasks=True)
    assert "scheduling-email-assistant" in allowed.task_ids and allowed.allow_excluded_tasks


def test_build_needs_category_and_difficulty(tree: Path) -> None:
    toml = tree / "b-task" / "task.toml"
    toml.write_text(toml.read_text().replace('category = "software-engineering"\n', ""))
    with pytest.raises(TaskSetError, match=r"b-task: task.toml \[metadata\] needs category"):
        build_manifest(tree, "mini")


def resigned(manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["task_count"] = len(manifest["tasks"])
    manifest["task_set_digest"] = task_set_digest(manifest)
    return manifest


def test_verify_sound_manifest(tree: Path) -> None:
    data = build_manifest(tree, "mini").document()
    assert verify_manifest(data, source="m", tasks_dir=tree, check_task_digests=True) == []


def test_verify_reports_every_problem(tree: Path) -> None:
    data = build_manifest(tree, "mini").document()
    entry = dict(data["tasks"][0])
    data["tasks"] += [
        {**entry, "task_id": "hidden-task"},
        {**entry, "task_id": "mhc-layer-impl"},
        {**entry, "task_id": "gone-task"},
    ]
    problems = verify_manifest(resigned(data), source="m", tasks_dir=tree)
    text = " | ".join(problems)
    assert "'hidden-task' lives in tasks-extra/" in text
    assert "'mhc-layer-impl' is a SkillsBench task excluded" in text
    assert "1 task ids are not direct child task folders" in text and "gone-task" in text
    assert len(problems) == 3


def test_verify_rejects_path_like_ids(tree: Path) -> None:
    data = build_manifest(tree, "mini").document()
    data["tasks"][0]["task_id"] = "tasks-extra/hidden-task"
    problems = verify_manifest(resigned(data), source="m", tasks_dir=tree)
    assert len(problems) == 1 and "path-like" in problems[0]


def test_verify_rejects_stale_digest(tree: Path) -> None:
    data = build_manifest(tree, "mini").document()
    data["tasks"][0]["category"] = "finance-economics"
    problems = verify_manifest(data, source="m")
    assert len(problems) == 1 and "does not match the content" in problems[0]


def test_verify_compares_task_digests_on_request(tree: Path) -> None:
    data = build_manifest(tree, "mini").document()
    (tree / "b-task" / "tests" / "test.sh").write_text("#!/bin/sh\necho 1\n")
    assert verify_manifest(data, source="m", tasks_dir=tree) == []
    problems = verify_manifest(data, source="m", tasks_dir=tree, check_task_digests=True)
    assert len(problems) == 1 and problems[0].startswith("b-task: task_digest is")


def test_verify_allows_excluded_when_the_manifest_says_so(tree: Path) -> None:
    make_task(tree, "mhc-layer-impl")
    data = build_manifest(tree, "mini", allow_excluded_tasks=True).document()
    assert verify_manifest(data, source="m", tasks_dir=tree) == []


# --- shard ---------------------------------------------------------------------------------------


def test_shard_positions() -> None:
    assert shard(list("abcdefg"), 0, 3) == ["a", "d", "g"]
    assert shard(list("abcdefg"), 1, 3) == ["b", "e"]
    assert shard(list("abcdefg"), 2, 3) == ["c", "f"]
    assert shard(list("ab"), 0, 1) == ["a", "b"]


def test_v1_1_in_seven_shards() -> None:
    ids = load_task_set("skillsbench-v1.1").task_ids
    shards = [shard(ids, k, 7) for k in range(7)]
    assert [len(s) for s in shards] == [13, 13, 13, 12, 12, 12, 12]
    assert shards[6][:3] == [
        "civ6-adjacency-optimizer",
        "drone-planning-control",
        "energy-market-pricing",
    ]
    assert sorted(tid for part in shards for tid in part) == sorted(ids)


@given(st.lists(st.integers(), max_size=60), st.integers(min_value=1, max_value=12))
def test_shards_partition_in_order(items: list[int], num_shards: int) -> None:
    shards = [shard(items, k, num_shards) for k in range(num_shards)]
    assert sum(len(s) for s in shards) == len(items)
    for k, part in enumerate(shards):
        assert part == items[k::num_shards]


@pytest.mark.parametrize(("index", "count"), [(-1, 2), (2, 2), (0, 0)])
def test_shard_rejects_bad_arguments(index: int, count: int) -> None:
    with pytest.raises(ValueError, match=r"shard_index|num_shards"):
        shard([1, 2], index, count)


# --- task_digest ---------------------------------------------------------------------------------


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content)
    return root


FILES = {
    "task.toml": b"x = 1\n",
    "tests/test.sh": b"#!/bin/sh\n",
    "environment/Dockerfile": b"FROM a\n",
}


def documented_digest(files: dict[str, bytes]) -> str:
    """The algorithm as docs/task-sets.md states it, written independently of the module."""
    records = sorted(
        b"F\0" + rel.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\n"
        for rel, data in files.items()
    )
    body = b"skillsbench.agentbeats.task_digest.v1\n" + b"".join(records)
    return "sha256:" + hashlib.sha256(body).hexdigest()


def test_task_digest_follows_the_documented_algorithm(tmp_path: Path) -> None:
    assert task_digest(write_tree(tmp_path, FILES)) == documented_digest(FILES)
    # pinned: the value must never change across machines or versions of this code
    assert documented_digest(FILES) == (
        "sha256:"
        + hashlib.sha256(
            b"skillsbench.agentbeats.task_digest.v1\n"
            b"F\0environment/Dockerfile\0"
            + hashlib.sha256(b"FROM a\n").hexdigest().encode()
            + b"\n"
            b"F\0task.toml\0" + hashlib.sha256(b"x = 1\n").hexdigest().encode() + b"\n"
            b"F\0tests/test.sh\0" + hashlib.sha256(b"#!/bin/sh\n").hexdigest().encode() + b"\n"
        ).hexdigest()
    )


def test_task_digest_ignores_order_modes_and_junk(tmp_path: Path) -> None:
    first = write_tree(tmp_path / "one", FILES)
    second = write_tree(tmp_path / "two", dict(reversed(list(FILES.items()))))
    os.chmod(second / "tests" / "test.sh", 0o755)
    write_tree(
        second, {"tests/__pycache__/x.cpython-311.pyc": b"junk", "a.pyc": b"j", ".DS_Store": b"j"}
    )
    (second / "empty-folder").mkdir()
    assert task_digest(first) == task_digest(second)


@pytest.mark.parametrize(
    "change",
    [
        {"task.toml": b"x = 2\n"},
        {"extra.txt": b""},
        {"tests/test.sh": b"#!/bin/sh\r\n"},
    ],
)
def test_task_digest_sees_changes(tmp_path: Path, change: dict[str, bytes]) -> None:
    base = task_digest(write_tree(tmp_path / "a", FILES))
    assert task_digest(write_tree(tmp_path / "b", {**FILES, **change})) != base


def test_task_digest_sees_renames_and_symlinks(tmp_path: Path) -> None:
    base = task_digest(write_tree(tmp_path / "a", FILES))
    renamed = {("tests/run.sh" if k == "tests/test.sh" else k): v for k, v in FILES.items()}
    assert task_digest(write_tree(tmp_path / "b", renamed)) != base
    linked = write_tree(tmp_path / "c", FILES)
    (linked / "link").symlink_to("task.toml")
    assert task_digest(linked) != base


def test_task_digest_of_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a folder"):
        task_digest(tmp_path / "nope")
