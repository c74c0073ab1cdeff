"""Task folders: a valid one loads; each broken part gives one error naming the folder and the part."""

from __future__ import annotations

from pathlib import Path

import pytest

from task_sets.task import REQUIRED_PARTS, TaskError, discover_tasks, load_task
from tests.task_sets.support import MINIMAL_TOML, make_task

# task.toml of SkillsBench's citation-check, as published (research/agentbeats.md §6).
SKILLSBENCH_TOML = """\
version = "1.0"
[metadata]
author_name = "Xuandong Zhao"
difficulty = "medium"
category = "office-white-collar"
subcategory = "academic-bibliography-verification"
task_type = ["verification", "search"]
modality = ["document", "json"]
interface = ["terminal", "python"]
skill_type = ["domain-procedure", "tool-workflow"]
tags = ["citation", "bibtex", "academic", "verification", "api", "crossref", "semantic-scholar"]
[verifier]
timeout_sec = 900.0
[agent]
timeout_sec = 900.0
[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 2048
storage_mb = 10240
gpus = 0
allow_internet = true
"""


def error_of(folder: Path) -> str:
    with pytest.raises(TaskError) as info:
        load_task(folder)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_valid_task_loads(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path))
    assert task.task_id == "demo"
    assert task.category == "software-engineering"
    assert task.difficulty == "easy"
    assert task.tags == ["a", "b"]
    assert task.config.agent.timeout_sec == 120.0
    assert task.config.verifier.timeout_sec == 30.0
    assert task.config.metadata.model_extra == {"author_name": "someone"}
    assert task.skills_dir == tmp_path / "demo" / "environment" / "skills"
    assert task.skills_sandbox_dir == "/skills"
    assert task.solution_dir == tmp_path / "demo" / "solution"
    assert task.instruction == "Do the thing.\n"


def test_published_skillsbench_task_toml_parses(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, toml=SKILLSBENCH_TOML))
    assert task.category == "office-white-collar"
    assert task.tags[-1] == "semantic-scholar"
    assert task.config.environment.memory_mb == 2048
    assert task.config.environment.internet is True


@pytest.mark.parametrize("part", REQUIRED_PARTS)
def test_each_missing_part_is_named(tmp_path: Path, part: str) -> None:
    folder = make_task(tmp_path)
    (folder / part).unlink()
    message = error_of(folder)
    assert str(folder) in message
    assert f"missing {part}" in message
    for other in REQUIRED_PARTS:
        if other != part:
            assert other not in message


def test_not_a_directory(tmp_path: Path) -> None:
    assert "no such directory" in error_of(tmp_path / "nope")


def test_native_layout_gets_a_hint(tmp_path: Path) -> None:
    folder = make_task(tmp_path)
    (folder / "task.toml").unlink()
    (folder / "task.md").write_text("---\n---\n")
    assert "task.md layout is not supported" in error_of(folder)


def test_skill_folder_without_skill_md_is_a_warning(tmp_path: Path) -> None:
    # Real SkillsBench tasks ship skills/licenses/ (licence files) beside the skills; Harbor
    # loads them, so do we, and say so.
    folder = make_task(tmp_path)
    (folder / "environment" / "skills" / "licenses").mkdir()
    (folder / "environment" / "skills" / "licenses" / "LICENSE.txt").write_text("MIT\n")
    task = load_task(folder)
    assert task.warnings == (
        "environment/skills/licenses has no SKILL.md: copied with the skills, but it is not a "
        "skill",
    )
    assert load_task(make_task(tmp_path / "plain")).warnings == ()


def test_solution_is_optional(tmp_path: Path) -> None:
    folder = make_task(tmp_path)
    (folder / "solution" / "solve.sh").unlink()
    assert load_task(folder).solution_dir is None


def test_agent_timeout_is_required(tmp_path: Path) -> None:
    toml = MINIMAL_TOML.replace("timeout_sec = 120.0\n", "")
    message = error_of(make_task(tmp_path, toml=toml))
    assert "[agent].timeout_sec is required" in message


def test_agent_section_is_required(tmp_path: Path) -> None:
    toml = MINIMAL_TOML.replace("[agent]\ntimeout_sec = 120.0\n", "")
    assert "missing section [agent]" in error_of(make_task(tmp_path, toml=toml))


@pytest.mark.parametrize("value", ["0", "-5", '"soon"'])
def test_agent_timeout_must_be_positive_number(tmp_path: Path, value: str) -> None:
    toml = MINIMAL_TOML.replace("timeout_sec = 120.0", f"timeout_sec = {value}")
    assert "[agent].timeout_sec" in error_of(make_task(tmp_path, toml=toml))


def test_typed_metadata(tmp_path: Path) -> None:
    toml = MINIMAL_TOML.replace('tags = ["a", "b"]', 'tags = "a,b"')
    assert "[metadata].tags" in error_of(make_task(tmp_path, toml=toml))


def test_invalid_toml_names_folder(tmp_path: Path) -> None:
    folder = make_task(tmp_path, toml="[agent\ntimeout_sec = 1")
    message = error_of(folder)
    assert str(folder) in message and "not valid TOML" in message


def test_empty_instruction(tmp_path: Path) -> None:
    folder = make_task(tmp_path)
    (folder / "instruction.md").write_text("  \n")
    assert "instruction.md is empty" in error_of(folder)


def test_legacy_environment_keys(tmp_path: Path) -> None:
    toml = MINIMAL_TOML + (
        '[environment]\nmemory = "4G"\nstorage = "512M"\nimage = "ghcr.io/x/y@sha256:'
        + "0" * 64
        + '"\nallow_internet = false\ncpus = "2"\nskills_dir = "/opt/skills"\n'
    )
    env = load_task(make_task(tmp_path, toml=toml)).config.environment
    assert env.memory_mb == 4096
    assert env.storage_mb == 512
    assert env.docker_image is not None and env.docker_image.startswith("ghcr.io/x/y@sha256:")
    assert env.cpus == 2
    assert env.internet is False
    assert env.skills_dir == "/opt/skills"


def test_network_mode_wins_over_allow_internet(tmp_path: Path) -> None:
    toml = MINIMAL_TOML + '[environment]\nallow_internet = true\nnetwork_mode = "no-network"\n'
    assert load_task(make_task(tmp_path, toml=toml)).config.environment.internet is False


def test_bad_size_is_named(tmp_path: Path) -> None:
    toml = MINIMAL_TOML + '[environment]\nmemory = "lots"\n'
    assert "memory" in error_of(make_task(tmp_path, toml=toml))


def test_native_section_names(tmp_path: Path) -> None:
    toml = MINIMAL_TOML.replace('version = "1.0"', 'schema_version = "1.3"') + (
        "[sandbox]\nmemory_mb = 1024\n[oracle]\ntimeout_sec = 50\n"
    )
    config = load_task(make_task(tmp_path, toml=toml)).config
    assert config.version == "1.3"
    assert config.environment.memory_mb == 1024
    assert config.solution.timeout_sec == 50


def test_both_spellings_is_an_error(tmp_path: Path) -> None:
    toml = MINIMAL_TOML + "[sandbox]\ncpus = 1\n[environment]\ncpus = 2\n"
    assert "both [environment] and [sandbox]" in error_of(make_task(tmp_path, toml=toml))


def test_version_zero_of_real_tasks_loads(tmp_path: Path) -> None:
    # jax-computing-basics, pddl-tpp-planning and virtualhome-agent-planning carry "0.0".
    toml = MINIMAL_TOML.replace('version = "1.0"', 'version = "0.0"')
    assert load_task(make_task(tmp_path, toml=toml)).config.version == "0.0"


def test_unsupported_major_version(tmp_path: Path) -> None:
    toml = MINIMAL_TOML.replace('version = "1.0"', 'version = "2.0"')
    assert "unsupported task.toml version '2.0'" in error_of(make_task(tmp_path, toml=toml))


def test_discover_tasks_lists_direct_children_only(tmp_path: Path) -> None:
    make_task(tmp_path, "b-task")
    make_task(tmp_path, "a-task")
    make_task(tmp_path / "nested", "deep")
    make_task(tmp_path, ".hidden")
    (tmp_path / "not-a-task").mkdir()
    (tmp_path / "file.toml").write_text("")
    assert list(discover_tasks(tmp_path)) == ["a-task", "b-task"]


def test_discover_tasks_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="tasks folder does not exist"):
        discover_tasks(tmp_path / "missing")


# Harbor 0.25's task.toml features (harbor/models/task/config.py, verifier_mode.py).


def test_multi_step_task_is_refused_by_name(tmp_path: Path) -> None:
    toml = MINIMAL_TOML + '\n[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n'
    folder = make_task(tmp_path, toml=toml)
    (folder / "instruction.md").unlink()  # Harbor's steps have steps/<name>/instruction.md
    message = error_of(folder)
    assert "multi-step task ([[steps]]: one, two) is not supported" in message
    assert "missing instruction.md" not in message


def test_docker_image_makes_the_dockerfile_optional(tmp_path: Path) -> None:
    folder = make_task(tmp_path, toml=MINIMAL_TOML + '\n[environment]\ndocker_image = "x/y:1"\n')
    (folder / "environment" / "Dockerfile").unlink()
    assert load_task(folder).docker_image == "x/y:1"


def test_verifier_mode_resolves_as_harbor_does(tmp_path: Path) -> None:
    shared = load_task(make_task(tmp_path, "shared"))
    assert shared.separate_verifier() is None
    assert [a.source for a in shared.config.artifact_entries] == ["/logs/artifacts"]
    # [verifier.environment] alone means separate; its image wins over tests/Dockerfile.
    toml = MINIMAL_TOML.replace(
        "[verifier]", '[verifier.environment]\ndocker_image = "v/img:1"\ncpus = 2\n[verifier]'
    )
    folder = make_task(tmp_path, "own-image", toml=toml)
    (folder / "tests" / "Dockerfile").write_text("FROM python:3.11-slim\n")
    verifier = load_task(folder).separate_verifier()
    assert verifier is not None and verifier.docker_image == "v/img:1"
    assert verifier.config.environment.cpus == 2 and verifier.separate_verifier() is None
    # Without an image of its own: tests/Dockerfile, else a fresh copy of the task's own.
    toml = MINIMAL_TOML + '\n[environment]\ndocker_image = "task/img:1"\n'
    toml = toml.replace("[verifier]", '[verifier]\nenvironment_mode = "separate"')
    folder = make_task(tmp_path, "built", toml=toml)
    (folder / "tests" / "Dockerfile").write_text("FROM python:3.11-slim\n")
    verifier = load_task(folder).separate_verifier()
    assert verifier is not None and verifier.environment_dir == folder / "tests"
    assert verifier.docker_image is None
    (folder / "tests" / "Dockerfile").unlink()
    verifier = load_task(folder).separate_verifier()
    assert verifier is not None and verifier.environment_dir == folder / "environment"
    assert verifier.docker_image == "task/img:1"


@pytest.mark.parametrize(
    ("top", "verifier", "tail", "wanted"),
    [
        (
            "",
            'environment_mode = "shared"',
            "[verifier.environment]\ncpus = 1",
            "conflicts with [verifier.environment]",
        ),
        ("", "", '[[verifier.collect]]\ncommand = "true"\nservice = "db"', "compose service 'db'"),
        ('artifacts = [{source = "/x", service = "db"}]', "", "", "compose service 'db'"),
        ('artifacts = ["../up"]', "", "", "must be a path without '..'"),
        ('artifacts = [{source = "/x", destination = "/abs"}]', "", "", "must be a relative path"),
    ],
)
def test_harbor_verifier_fields_are_checked(
    tmp_path: Path, top: str, verifier: str, tail: str, wanted: str
) -> None:
    toml = MINIMAL_TOML.replace("[verifier]\n", f"[verifier]\n{verifier}\n")
    folder = make_task(tmp_path, toml=f"{top}\n{toml}\n{tail}\n")
    assert wanted in error_of(folder)
