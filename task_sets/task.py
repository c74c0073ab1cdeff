"""Task folders in the SkillsBench/Harbor layout and their ``task.toml``.

A task folder holds ``task.toml``, ``instruction.md``, ``environment/Dockerfile`` (with optional
``environment/skills/<name>/SKILL.md``), ``tests/test.sh`` and optionally ``solution/solve.sh``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

DEFAULT_SKILLS_DIR = "/skills"


class TaskError(ValueError):
    """A folder that is not a valid task; the message names the folder and the missing part."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow")


class TaskMetadata(_Section):
    """Free-form, but the three fields that reach public rows are typed."""

    category: str | None = None
    difficulty: str | None = None
    tags: list[str] = Field(default_factory=list)


class AgentSection(_Section):
    timeout_sec: float = Field(gt=0)
    user: str | None = None


class VerifierSection(_Section):
    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = None


class EnvironmentSection(_Section):
    """Harbor's ``[environment]`` (BenchFlow calls it ``[sandbox]``; both are accepted)."""

    build_timeout_sec: float = Field(default=600.0, gt=0)
    cpus: float = Field(default=1, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    storage_mb: int = Field(default=10240, gt=0)
    gpus: int = Field(default=0, ge=0)
    allow_internet: bool = True
    network_mode: str | None = None
    docker_image: str | None = None
    skills_dir: str = DEFAULT_SKILLS_DIR
    workdir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _legacy_keys(cls, data: Any) -> Any:
        # Older tasks spell memory/storage as "4G" strings and the image as `image`.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for legacy, key in (("memory", "memory_mb"), ("storage", "storage_mb")):
            if legacy in data and key not in data:
                data[key] = _size_to_mb(data.pop(legacy), legacy)
        if "image" in data and "docker_image" not in data:
            data["docker_image"] = data.pop("image")
        return data

    @property
    def internet(self) -> bool:
        """Whether the sandbox may reach the network (``network_mode`` wins over the legacy flag)."""
        if self.network_mode is not None:
            return self.network_mode != "no-network"
        return self.allow_internet


class SolutionSection(_Section):
    timeout_sec: float | None = Field(default=None, gt=0)
    env: dict[str, str] = Field(default_factory=dict)


class TaskConfig(BaseModel):
    """The parsed ``task.toml``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    version: str = "1.0"
    metadata: TaskMetadata = Field(default_factory=TaskMetadata)
    agent: AgentSection
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)
    solution: SolutionSection = Field(default_factory=SolutionSection)

    @model_validator(mode="before")
    @classmethod
    def _sandbox_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "sandbox" in data:
            if "environment" in data:
                raise ValueError("task.toml declares both [environment] and [sandbox]; keep one")
            data = dict(data)
            data["environment"] = data.pop("sandbox")
        return data

    @field_validator("version", mode="before")
    @classmethod
    def _version_str(cls, value: Any) -> str:
        return str(value)


def _size_to_mb(value: Any, key: str) -> int:
    if isinstance(value, int | float):
        return int(value)
    text = str(value).strip().upper()
    units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        if text.endswith("B") and len(text) > 1 and text[-2] in units:
            return int(float(text[:-2]) * units[text[-2]])
        return int(float(text))
    except ValueError:
        raise ValueError(f"[environment].{key}: cannot read size {value!r}") from None


@dataclass(frozen=True)
class Task:
    """A loaded task folder. Paths are on the host."""

    task_id: str
    path: Path
    config: TaskConfig
    instruction: str

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

    @property
    def dockerfile(self) -> Path:
        return self.environment_dir / "Dockerfile"

    @property
    def skills_dir(self) -> Path | None:
        """The host folder of the task's skills, or None when it ships none."""
        skills = self.environment_dir / "skills"
        return skills if skills.is_dir() else None

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path | None:
        solution = self.path / "solution"
        return solution if (solution / "solve.sh").is_file() else None

    @property
    def skills_sandbox_dir(self) -> str:
        return self.config.environment.skills_dir

    @property
    def category(self) -> str | None:
        return self.config.metadata.category

    @property
    def difficulty(self) -> str | None:
        return self.config.metadata.difficulty

    @property
    def tags(self) -> list[str]:
        return list(self.config.metadata.tags)


REQUIRED_PARTS = ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh")


def load_task(path: str | Path) -> Task:
    """Load one task folder, or raise :class:`TaskError` naming what is missing or invalid."""
    folder = Path(path)
    if not folder.is_dir():
        raise TaskError(f"{folder}: not a task folder (no such directory)")
    missing = [part for part in REQUIRED_PARTS if not (folder / part).is_file()]
    if missing:
        raise TaskError(f"{folder}: not a task folder: missing {', '.join(missing)}")
    try:
        raw = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{folder}/task.toml: invalid TOML: {exc}") from None
    try:
        config = TaskConfig.model_validate(raw)
    except ValidationError as exc:
        raise TaskError(f"{folder}/task.toml: {_describe(exc)}") from None
    instruction = (folder / "instruction.md").read_text(encoding="utf-8")
    return Task(task_id=folder.name, path=folder, config=config, instruction=instruction)


def discover_tasks(tasks_dir: str | Path) -> dict[str, Path]:
    """Task ids (direct child folders holding a ``task.toml``) mapped to their folders, sorted."""
    root = Path(tasks_dir)
    if not root.is_dir():
        raise TaskError(f"{root}: tasks folder does not exist")
    return {
        child.name: child
        for child in sorted(root.iterdir())
        if child.is_dir() and (child / "task.toml").is_file()
    }


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        if err["type"] == "missing" and len(err["loc"]) == 1:
            parts.append(f"missing section [{where}]")
        elif err["type"] == "missing":
            parts.append(f"missing key {where}")
        else:
            parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
