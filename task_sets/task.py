"""Task folders in the SkillsBench/Harbor layout and their ``task.toml``.

A task folder holds ``task.toml``, ``instruction.md``, ``environment/Dockerfile`` (with optional
``environment/skills/<name>/SKILL.md``), ``tests/test.sh`` and optionally ``solution/solve.sh``.
The ``task.toml`` model follows BenchFlow's (research/benchflow.md §1.2) but is lenient where
SkillsBench tasks are: unknown keys are kept, legacy ``[environment]`` spellings are accepted, and
BenchFlow's native ``[sandbox]``/``[oracle]`` and ``schema_version`` names map onto the same fields.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

DEFAULT_SKILLS_DIR = "/skills"
# Harbor and SkillsBench write ``version = "1.0"``; three real SkillsBench tasks carry "0.0"
# (the same format, before it was numbered). A future major version is refused.
SUPPORTED_MAJOR_VERSIONS = (0, 1)

NetworkMode = Literal["public", "no-network", "allowlist"]
MAIN_SERVICE = "main"  # Harbor's name of the agent's container among compose services
ARTIFACTS_CONVENTION = "/logs/artifacts"  # Harbor's folder that is always an artifact


def _main_service(service: str, what: str) -> str:
    if service != MAIN_SERVICE:
        raise ValueError(
            f"{what} of compose service {service!r}: only the agent's sandbox ({MAIN_SERVICE!r}) "
            "is supported (this harness runs no docker-compose services)"
        )
    return service


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
    timeout_sec: float = Field(gt=0, description="required: BenchFlow has no safe default")
    prompt_prefix: str | None = None
    user: str | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)


class CollectHook(_Section):
    """Harbor's ``[[verifier.collect]]``: a command run in the agent's sandbox once the agent is
    done, before the artifacts are taken (it snapshots state into files the verifier reads)."""

    command: str
    service: str = MAIN_SERVICE
    timeout_sec: float = Field(default=60.0, gt=0)
    user: str | int | None = None

    @field_validator("service")
    @classmethod
    def _main_only(cls, service: str) -> str:
        return _main_service(service, "a collect hook")


class Artifact(_Section):
    """Harbor's artifact entry (``artifacts = ["/app/out", {source = ..., destination = ...}]``):
    a path of the agent's sandbox (relative: to its working folder) copied to the trial folder's
    ``artifacts/<destination or source>`` and, for a separate verifier, to the same ``source``
    path of its sandbox."""

    source: str
    destination: str | None = None
    exclude: list[str] = Field(default_factory=list)
    service: str | None = None

    @field_validator("source")
    @classmethod
    def _source(cls, source: str) -> str:
        if not source.strip() or ".." in PurePosixPath(source).parts:
            raise ValueError(f"artifact source {source!r} must be a path without '..'")
        return source

    @field_validator("destination")
    @classmethod
    def _destination(cls, value: str | None) -> str | None:
        if not value:
            return None
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts or "\\" in value:
            raise ValueError(f"artifact destination {value!r} must be a relative path")
        return value

    @field_validator("service")
    @classmethod
    def _service(cls, service: str | None) -> str | None:
        return None if service is None else _main_service(service, "an artifact")


class VerifierSection(_Section):
    type: str = "test-script"
    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = None
    # Paths (files or folders) whose changes are the agent's work product even where the rule
    # says they come from the image (docs/sandboxes.md, "Work product"): a task whose answer is
    # an installed package, say.
    work_product: list[str] = Field(default_factory=list)
    # Harbor's separate verifier (docs/task-sets.md, "Separate verifier"): unset means
    # "separate" when [verifier.environment] is given, else "shared".
    environment_mode: Literal["shared", "separate"] | None = None
    environment: EnvironmentSection | None = None
    collect: list[CollectHook] = Field(default_factory=list)

    @model_validator(mode="after")
    def _mode_and_environment(self) -> VerifierSection:
        if self.environment_mode == "shared" and self.environment is not None:
            raise ValueError(
                "environment_mode = 'shared' conflicts with [verifier.environment]; omit the "
                "environment or set environment_mode = 'separate'"
            )
        return self

    @property
    def separate(self) -> bool:
        """Whether the verifier runs in a sandbox of its own (Harbor's resolution)."""
        if self.environment_mode is not None:
            return self.environment_mode == "separate"
        return self.environment is not None

    @field_validator("work_product")
    @classmethod
    def _absolute(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if not path.startswith("/") or path.rstrip("/") == "" or "\n" in path:
                raise ValueError(f"work_product: {path!r} must be an absolute path below /")
        return [path.rstrip("/") for path in paths]


class EnvironmentSection(_Section):
    """Harbor's ``[environment]`` (BenchFlow calls it ``[sandbox]``; both are accepted)."""

    build_timeout_sec: float = Field(default=600.0, gt=0)
    cpus: float = Field(default=1, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    storage_mb: int = Field(default=10240, gt=0)
    gpus: int = Field(default=0, ge=0)
    allow_internet: bool = True
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
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
    artifacts: list[Artifact] = Field(default_factory=list)

    @field_validator("artifacts", mode="before")
    @classmethod
    def _artifact_strings(cls, value: Any) -> Any:
        # Harbor's string form is the entry's source.
        if isinstance(value, list):
            return [{"source": v} if isinstance(v, str) else v for v in value]
        return value

    @property
    def artifact_entries(self) -> list[Artifact]:
        """The declared artifacts, Harbor's convention folder (``/logs/artifacts``) first unless
        an entry names it."""
        entries = list(self.artifacts)
        if not any(e.source.rstrip("/") == ARTIFACTS_CONVENTION for e in entries):
            entries.insert(0, Artifact(source=ARTIFACTS_CONVENTION))
        return entries

    @model_validator(mode="before")
    @classmethod
    def _native_aliases(cls, data: Any) -> Any:
        # BenchFlow's native names for the same sections; declaring both spellings is ambiguous.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for native, legacy in (("sandbox", "environment"), ("oracle", "solution")):
            if native in data:
                if legacy in data:
                    raise ValueError(f"declares both [{legacy}] and [{native}]; keep one")
                data[legacy] = data.pop(native)
        if "schema_version" in data:
            if "version" in data:
                raise ValueError("declares both version and schema_version; keep one")
            data["version"] = data.pop("schema_version")
        return data

    @field_validator("version", mode="before")
    @classmethod
    def _version_major(cls, value: Any) -> str:
        text = str(value).strip()
        major = text.split(".", 1)[0]
        if not major.isdigit() or int(major) not in SUPPORTED_MAJOR_VERSIONS:
            raise ValueError(f"unsupported task.toml version {text!r} (major version 0 or 1 only)")
        return text


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
    # What Harbor and SkillsBench load without a word but a reader should know (a skills
    # subfolder that is no skill); ``task-set build`` and ``check`` print them.
    warnings: tuple[str, ...] = ()
    # The build context when it is not environment/ (a separate verifier's tests/Dockerfile).
    environment_folder: Path | None = None

    @property
    def environment_dir(self) -> Path:
        return self.environment_folder or self.path / "environment"

    @property
    def docker_image(self) -> str | None:
        """The prebuilt image the sandbox runs (Harbor's ``[environment].docker_image``)."""
        return self.config.environment.docker_image

    def separate_verifier(self) -> Task | None:
        """The task as its separate verifier's sandbox sees it, or None for a shared verifier.

        Harbor's precedence (``resolve_verifier_environment_definition``): the image of
        ``[verifier.environment].docker_image``, else ``tests/Dockerfile`` built from tests/,
        else a fresh copy of the task's own environment (``environment/`` or its
        ``docker_image``). Resources and env come from ``[verifier.environment]`` when given,
        else from ``[environment]``."""
        verifier = self.config.verifier
        if not verifier.separate:
            return None
        own = verifier.environment
        environment = (own or self.config.environment).model_copy(deep=True)
        folder: Path | None = None
        if own is not None and own.docker_image:
            environment.docker_image = own.docker_image
        elif (self.tests_dir / "Dockerfile").is_file():
            environment.docker_image, folder = None, self.tests_dir
        else:
            environment.docker_image = self.config.environment.docker_image
        # The view's own verifier is shared: it is the verifier's sandbox.
        shared = verifier.model_copy(update={"environment_mode": "shared", "environment": None})
        config = self.config.model_copy(update={"environment": environment, "verifier": shared})
        return dataclasses.replace(
            self, task_id=f"{self.task_id}-verifier", config=config, environment_folder=folder
        )

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
# Harbor's [environment].docker_image makes environment/Dockerfile optional.
IMAGE_OPTIONAL_PARTS = ("environment/Dockerfile",)
SKILL_FILE = "SKILL.md"


def load_task(path: str | Path) -> Task:
    """Load one task folder, or raise :class:`TaskError` naming the folder and what is wrong."""
    folder = Path(path)
    if not folder.is_dir():
        raise TaskError(f"{folder}: not a task folder (no such directory)")
    raw = _read_toml(folder)
    _refuse_steps(folder, raw)
    optional = IMAGE_OPTIONAL_PARTS if _declares_image(raw) else ()
    missing = [
        part for part in REQUIRED_PARTS if part not in optional and not (folder / part).is_file()
    ]
    if missing:
        hint = ""
        if (folder / "task.md").is_file():
            hint = " (BenchFlow's native task.md layout is not supported; use task.toml)"
        raise TaskError(f"{folder}: not a task folder: missing {', '.join(missing)}{hint}")
    warnings: list[str] = []
    skills = folder / "environment" / "skills"
    if skills.is_dir():
        # Harbor copies the folder as is; real tasks ship licence files or a skill's package
        # beside the skills, so a subfolder without SKILL.md is reported, not refused.
        for child in sorted(skills.iterdir()):
            if child.is_dir() and not (child / SKILL_FILE).is_file():
                warnings.append(
                    f"environment/skills/{child.name} has no {SKILL_FILE}: copied with the "
                    "skills, but it is not a skill"
                )
    try:
        config = TaskConfig.model_validate(raw)
    except ValidationError as exc:
        raise TaskError(f"{folder}: task.toml: {_describe(exc)}") from None
    instruction = (folder / "instruction.md").read_text(encoding="utf-8")
    if not instruction.strip():
        raise TaskError(f"{folder}: instruction.md is empty")
    return Task(
        task_id=folder.name,
        path=folder,
        config=config,
        instruction=instruction,
        warnings=tuple(warnings),
    )


def _read_toml(folder: Path) -> dict[str, Any]:
    """task.toml's table ({} when there is none: the missing parts are reported then)."""
    try:
        return tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskError(f"{folder}: task.toml is not valid TOML: {exc}") from None


def _declares_image(raw: dict[str, Any]) -> bool:
    section = raw.get("environment", raw.get("sandbox"))
    return isinstance(section, dict) and bool(section.get("docker_image") or section.get("image"))


def _refuse_steps(folder: Path, raw: dict[str, Any]) -> None:
    """Harbor's multi-step tasks (``[[steps]]``, each with ``steps/<name>/instruction.md``,
    ``tests/`` and ``solution/``, run in turn in one sandbox) are refused by name."""
    steps = raw.get("steps")
    if not steps:
        return
    names = [str(s.get("name", "?")) if isinstance(s, dict) else "?" for s in steps]
    raise TaskError(
        f"{folder}: a multi-step task ([[steps]]: {', '.join(names)}) is not supported: this "
        "harness runs one instruction, one agent run and one verifier per trial; it has no "
        "runner for steps/<name>/instruction.md, tests/ and solution/ in turn, nor for the "
        "per-step rewards (multi_step_reward_strategy)"
    )


def discover_tasks(tasks_dir: str | Path) -> dict[str, Path]:
    """Task ids (direct child folders holding a ``task.toml``) mapped to their folders, sorted.

    Hidden folders (``.git``, ``.cache``) are skipped; nothing below the first level is looked at.
    """
    root = Path(tasks_dir)
    if not root.is_dir():
        raise TaskError(f"{root}: tasks folder does not exist")
    return {
        child.name: child
        for child in sorted(root.iterdir(), key=lambda c: c.name)
        if child.is_dir() and not child.name.startswith(".") and (child / "task.toml").is_file()
    }


_SECTIONS = frozenset({"metadata", "agent", "verifier", "environment", "solution"})


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        if not loc:
            parts.append(str(err["msg"]).removeprefix("Value error, "))
            continue
        head = f"[{loc[0]}]" if loc[0] in _SECTIONS else loc[0]
        where = head + "".join(f".{p}" for p in loc[1:])
        if err["type"] == "missing" and len(loc) == 1 and loc[0] in _SECTIONS:
            parts.append(f"missing section [{loc[0]}]")
        elif err["type"] == "missing":
            parts.append(f"{where} is required")
        else:
            parts.append(f"{where}: {str(err['msg']).removeprefix('Value error, ')}")
    return "; ".join(parts)
