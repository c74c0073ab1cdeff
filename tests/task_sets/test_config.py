"""Assessment config: validation and Amber-string coercion (property-based), and task selection."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import json5
import pytest
from hypothesis import given
from hypothesis import strategies as st

from task_sets.config import (
    AGENTBEATS_UUID_PATTERN,
    CONFIG_KEYS,
    AssessmentConfig,
    ConfigError,
    config_table,
    parse_config,
    select_tasks,
)
from task_sets.digest import task_digest
from task_sets.excluded import TASK_ID_PATTERN
from task_sets.manifest import build_manifest, load_task_set, shard
from tests.support import PUBLISHED_DATA, REPO_ROOT
from tests.task_sets.support import make_task

INT_KEYS = ("shard_index", "num_shards", "num_instances")
EXAMPLES = load_task_set("examples")


def config_error(raw: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    error = info.value
    assert isinstance(error, ValueError)
    assert "\n" not in str(error)
    assert str(error).startswith((f"{error.field}: ", f"{error.field!r}: "))
    return error


@st.composite
def uuid7s(draw: st.DrawFn) -> str:
    millis = draw(st.integers(0, 2**48 - 1))
    rand_a = draw(st.integers(0, 2**12 - 1))
    rand_b = draw(st.integers(0, 2**62 - 1))
    value = (millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return str(uuid.UUID(int=value))


def int_forms(n: int) -> st.SearchStrategy[Any]:
    """The ways a whole number arrives: JSON number, float, Amber string (maybe padded)."""
    return st.sampled_from([n, float(n), str(n), f" {n} ", f"+{n}"])


# --- defaults and happy paths --------------------------------------------------------------------


def test_defaults() -> None:
    config = parse_config({})
    assert config == AssessmentConfig(
        task_set="skillsbench-v1.1",
        tasks="all",
        task_ids=None,
        condition="with_skills",
        allow_excluded_tasks=False,
        shard_index=0,
        num_shards=1,
        num_instances=1,
        participant_ids=None,
    )
    assert set(CONFIG_KEYS) == set(AssessmentConfig.model_fields)


def test_published_scenario_config() -> None:
    scenario = json5.loads(
        (PUBLISHED_DATA / "amber" / "skillsbench-agentbeats__scenario.json5").read_text()
    )
    raw = scenario["components"]["gateway"]["config"]["assessment_config"]
    config = parse_config(raw)
    selection = select_tasks(config)
    assert selection.task_set == "deploy-smoke-v1"
    assert selection.task_ids == raw["task_ids"]
    assert selection.task_set_digest == (
        "sha256:dfc4e8fcdc157c260173dabc4dc31bd7f36c5abfa1d89cbba50ad79fb83e8b93"
    )


def test_amber_strings() -> None:
    config = parse_config(
        {
            "task_set": "smoke",
            "shard_index": "0",
            "num_shards": "1",
            "num_instances": "3",
            "allow_excluded_tasks": "false",
            "task_ids": '["citation-check"]',
            "participant_ids": '{"agent": "019E4ED1-D333-7133-807F-5F22C04D5EEF"}',
        }
    )
    assert (config.shard_index, config.num_shards, config.num_instances) == (0, 1, 3)
    assert config.allow_excluded_tasks is False
    assert config.task_ids == ["citation-check"] and config.tasks is None
    assert config.participant_ids is not None
    assert config.participant_ids.agent == "019e4ed1-d333-7133-807f-5f22c04d5eef"
    assert "tasks" not in config.to_wire()


def test_json_text_and_nulls() -> None:
    assert parse_config('{"num_shards": 2, "num_instances": null}').num_instances == 1
    assert config_error("{nope").field == "config"
    assert config_error("[1, 2]").field == "config"
    assert config_error(7).field == "config"


@pytest.mark.parametrize("doc", ["README.md", "docs/task-sets.md"])
def test_docs_table_is_the_model(doc: str) -> None:
    """The config table in the docs is the model's, row for row: a field added to one and not
    the other fails here. Regenerate it with ``task_sets.config.config_table()``."""
    text = (REPO_ROOT / doc).read_text(encoding="utf-8")
    marker = "<!-- generated from task_sets.config.AssessmentConfig by config_table()"
    assert text.count(marker) == 1
    table = text.split(marker)[1].split("\n", 1)[1].split("\n\n")[0] + "\n"
    assert table == config_table(), f"{doc}: paste task_sets.config.config_table() there"
    assert re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE) == list(AssessmentConfig.model_fields)


# --- properties ----------------------------------------------------------------------------------


@given(
    st.integers(-3, 40).flatmap(lambda k: st.tuples(st.just(k), int_forms(k))),
    st.integers(-3, 40).flatmap(lambda n: st.tuples(st.just(n), int_forms(n))),
)
def test_shard_bounds(index: tuple[int, Any], count: tuple[int, Any]) -> None:
    (k, k_form), (n, n_form) = index, count
    raw = {"shard_index": k_form, "num_shards": n_form}
    if n >= 1 and 0 <= k < n:
        config = parse_config(raw)
        assert (config.shard_index, config.num_shards) == (k, n)
    else:
        error = config_error(raw)
        expected = set()
        if n < 1:
            expected.add("num_shards")
        if k < 0 or (n >= 1 and k >= n):
            expected.add("shard_index")
        assert {field for field, _ in error.errors} == expected
        assert all("must be" in rule for _, rule in error.errors)


@given(st.sampled_from(INT_KEYS), st.integers(1, 100).flatmap(int_forms))
def test_whole_numbers_in_any_form(key: str, value: Any) -> None:
    raw = {key: value, "num_shards": 1000} if key == "shard_index" else {key: value}
    assert getattr(parse_config(raw), key) == int(float(str(value).strip()))


@given(
    st.sampled_from(INT_KEYS),
    st.one_of(
        st.text().filter(lambda s: not re.fullmatch(r"\s*[+-]?[0-9]+\s*", s)),
        st.floats().filter(lambda f: not f.is_integer()),
        st.booleans(),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    ),
)
def test_not_whole_numbers_are_rejected(key: str, value: Any) -> None:
    error = config_error({key: value})
    assert error.field == key
    assert "whole number" in error.rule


def test_num_instances_bounds() -> None:
    assert config_error({"num_instances": "0"}).rule == "must be between 1 and 100, got 0"
    assert config_error({"num_instances": 101}).field == "num_instances"


@given(
    st.sampled_from(
        [
            *[
                (True, True),
                ("true", True),
                ("TRUE", True),
                (" True ", True),
                (1, True),
                ("1", True),
            ],
            *[(False, False), ("false", False), ("False", False), (0, False), ("0", False)],
        ]
    )
)
def test_booleans_in_any_form(pair: tuple[Any, bool]) -> None:
    value, expected = pair
    assert parse_config({"allow_excluded_tasks": value}).allow_excluded_tasks is expected


@given(
    st.one_of(
        st.text().filter(
            lambda s: s.strip().lower() not in {"true", "false", "1", "0", "yes", "no", "on", "off"}
        ),
        st.integers().filter(lambda i: i not in (0, 1)),
        st.floats(),
    )
)
def test_not_booleans_are_rejected(value: Any) -> None:
    error = config_error({"allow_excluded_tasks": value})
    assert error.field == "allow_excluded_tasks"
    assert "true or false" in error.rule


@given(st.one_of(uuid7s(), st.uuids(version=4).map(str)), st.booleans())
def test_participant_uuid_accepted(value: str, upper: bool) -> None:
    given_value = value.upper() if upper else value
    config = parse_config({"participant_ids": {"agent": given_value}})
    assert config.participant_ids is not None
    assert config.participant_ids.agent == value.lower()


@given(st.one_of(st.text(), st.integers(), st.none(), st.uuids().map(lambda u: str(u)[:-1])))
def test_participant_non_uuid_rejected(value: Any) -> None:
    if isinstance(value, str) and re.fullmatch(AGENTBEATS_UUID_PATTERN, value.strip(), re.I):
        return
    error = config_error({"participant_ids": {"agent": value}})
    assert error.field == "participant_ids.agent"
    assert "AgentBeats UUID" in error.rule


def test_participant_ids_shape() -> None:
    assert config_error({"participant_ids": "x"}).field == "participant_ids"
    error = config_error({"participant_ids": {"agent": str(uuid.uuid4()), "green": "x"}})
    assert error.field == "participant_ids.green"


@given(st.text(min_size=1).filter(lambda k: k not in CONFIG_KEYS))
def test_unknown_keys_are_named(key: str) -> None:
    error = config_error({key: 1})
    assert error.field == key
    assert error.rule.startswith("unknown key")


@given(st.text().filter(lambda s: s != "with_skills"))
def test_condition_must_be_with_skills(value: str) -> None:
    error = config_error({"condition": value})
    assert error.field == "condition"
    assert "with_skills" in error.rule


@given(st.lists(st.from_regex(TASK_ID_PATTERN, fullmatch=True), min_size=1, unique=True))
def test_task_ids_keep_their_order(ids: list[str]) -> None:
    config = parse_config({"task_ids": ids})
    assert config.task_ids == ids
    assert config.tasks is None


@given(
    st.one_of(
        st.tuples(st.text(), st.sampled_from(["/", "\\"]), st.text()).map("".join),
        st.sampled_from(["", ".", "..", "-lead", "a b", "x:y"]),
    )
)
def test_bad_task_ids_are_rejected(task_id: str) -> None:
    error = config_error({"task_ids": ["citation-check", task_id]})
    assert error.field == "task_ids"


def test_task_ids_rules() -> None:
    assert config_error({"task_ids": []}).field == "task_ids"
    assert "twice" in config_error({"task_ids": ["a", "a"]}).rule
    assert config_error({"task_ids": "a"}).field == "task_ids"
    error = config_error({"tasks": "all", "task_ids": ["a"]})
    assert (error.field, error.rule) == ("tasks", 'give either tasks: "all" or task_ids, not both')
    assert config_error({"tasks": "some"}).field == "tasks"


def test_task_set_is_a_name_not_a_path() -> None:
    assert "not a path" in config_error({"task_set": "../secrets.json"}).rule
    assert config_error({"task_set": 3}).field == "task_set"


def test_all_errors_are_reported() -> None:
    error = config_error({"condition": "no", "num_shards": "x", "bogus": 1})
    assert [field for field, _ in error.errors] == ["condition", "num_shards", "bogus"]
    assert error.field == "condition"


# --- selection -----------------------------------------------------------------------------------


@given(st.integers(1, 6).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n))))
def test_selection_shards_the_task_set(shard_args: tuple[int, int]) -> None:
    k, n = shard_args
    config = parse_config({"task_set": "examples", "shard_index": k, "num_shards": n})
    selection = select_tasks(config)
    assert selection.task_ids == EXAMPLES.task_ids[k::n]
    assert selection.tasks == shard(EXAMPLES.tasks, k, n)
    assert selection.task_set_digest == EXAMPLES.task_set_digest


def test_selection_keeps_task_ids_order_then_shards() -> None:
    ids = list(reversed(EXAMPLES.task_ids))
    config = parse_config({"task_set": "examples", "task_ids": ids, "num_shards": 2})
    assert select_tasks(config).task_ids == ids[0::2]


def test_selection_trials_repeat_per_instance() -> None:
    config = parse_config({"task_set": "smoke", "num_instances": "3"})
    trials = select_tasks(config).trials()
    assert [(entry.task_id, i) for entry, i in trials] == [("citation-check", i) for i in range(3)]


def test_unknown_task_ids() -> None:
    config = parse_config(
        {"task_set": "examples", "task_ids": ["csv-sales-summary", "citation-check"]}
    )
    with pytest.raises(ConfigError) as info:
        select_tasks(config)
    assert info.value.field == "task_ids"
    assert "unknown task id 'citation-check': not in task set 'examples'" in str(info.value)


def test_unknown_task_set() -> None:
    with pytest.raises(ConfigError) as info:
        select_tasks(parse_config({"task_set": "nope"}))
    assert info.value.field == "task_set" and "unknown task set 'nope'" in info.value.rule


def test_manifest_must_match_the_config() -> None:
    with pytest.raises(ConfigError) as info:
        select_tasks(parse_config({"task_set": "smoke"}), manifest=EXAMPLES)
    assert info.value.field == "task_set"


def test_empty_shard_is_an_error() -> None:
    config = parse_config({"task_set": "smoke", "shard_index": 3, "num_shards": 4})
    with pytest.raises(ConfigError) as info:
        select_tasks(config)
    assert info.value.field == "num_shards" and "selects no task" in info.value.rule


def test_known_excluded_id_needs_the_flag_and_a_folder() -> None:
    raw: dict[str, Any] = {"task_set": "skillsbench-v1.1", "task_ids": ["mhc-layer-impl"]}
    with pytest.raises(ConfigError, match="set allow_excluded_tasks: true") as info:
        select_tasks(parse_config(raw))
    assert info.value.field == "task_ids"
    with pytest.raises(ConfigError, match="no folder here"):
        select_tasks(parse_config({**raw, "allow_excluded_tasks": "true"}))


def test_tasks_extra_ids(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    make_task(tasks, "public-task")
    extra = make_task(tmp_path / "tasks-extra", "extra-task")
    manifest = build_manifest(tasks, "mini")
    raw: dict[str, Any] = {"task_set": "mini", "task_ids": ["public-task", "extra-task"]}
    with pytest.raises(ConfigError, match="lives in tasks-extra/"):
        select_tasks(parse_config(raw), manifest=manifest, tasks_dir=tasks)
    # Without the tasks folder the id is simply not in the set.
    with pytest.raises(ConfigError, match="unknown task id 'extra-task'"):
        select_tasks(parse_config(raw), manifest=manifest)
    allowed = select_tasks(
        parse_config({**raw, "allow_excluded_tasks": True}), manifest=manifest, tasks_dir=tasks
    )
    assert allowed.task_ids == ["public-task", "extra-task"]
    assert allowed.tasks[1].task_digest == task_digest(extra)
    assert allowed.task_set_digest == manifest.task_set_digest


def test_selection_is_json_serialisable() -> None:
    selection = select_tasks(parse_config({"task_set": "examples"}))
    body = json.loads(selection.model_dump_json())
    assert list(body["tasks"][0]) == ["task_id", "task_digest", "category", "difficulty", "tags"]
