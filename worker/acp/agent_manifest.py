"""Agent manifests (BenchFlow's contract): ``manifest.toml`` in a folder anywhere below an
agents dir (``<agents dir>/acp/<name>/manifest.toml`` as the agents repository keeps them).

Agents dirs come from ``SKILLSBENCH_AGENTS_DIR`` then ``BENCHFLOW_AGENTS_DIR`` (each may list
several folders separated by ``:``). Validated as BenchFlow's loader does: ``contract_version`` is
``MAJOR.MINOR`` (or ``MAJOR.MINOR.PATCH``) with major 1; the folders are searched recursively
(build, vendor and VCS folders skipped, a manifest at the agents dir itself ignored); two
manifests of one agents dir declaring the same name (or alias) are refused, naming both files.
A manifest that cannot be used spoils only itself: the others load, its name (when it can be read)
is refused with its error, and ``skillsbench-agentbeats agents`` lists it with that error.
Keys we do not know are kept and reported by name, never dropped silently (BenchFlow drops them):
``agents`` shows them, a run warns about them, and a required key that is missing names the
unknown key that looks like its misspelling (``lanch_cmd``).
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

AGENTS_DIR_VARS = ("SKILLSBENCH_AGENTS_DIR", "BENCHFLOW_AGENTS_DIR")
MANIFEST_FILE = "manifest.toml"
SUPPORTED_CONTRACT_MAJOR = 1
_CONTRACT_VERSION = re.compile(r"^(\d+)\.\d+(\.\d+)?$")
# Never searched for manifests (BenchFlow skips the same): build, vendor and VCS folders.
SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        ".git",
        ".venv",
        "venv",
        "__pycache__",
        "dist",
        "build",
        "site-packages",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
    }
)


class AgentManifestError(ValueError):
    """A manifest that cannot be used; the message names the file and the problem."""


def _relative(path: str) -> bool:
    return bool(path) and not path.startswith("/") and ".." not in path.split("/")


class CredentialFile(BaseModel):
    """A file written before launch from an environment variable (BenchFlow's ``CredentialFile``):
    ``path`` may start with ``{home}``; ``template`` holds ``{value}`` (braces doubled)."""

    model_config = ConfigDict(extra="forbid")

    path: str
    env_source: str = Field(min_length=1)
    template: str = ""
    mkdir: bool = True  # parents are always created; kept for BenchFlow manifests

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        rest = value.removeprefix("{home}")
        if not rest.startswith("/") or ".." in rest.split("/") or "{" in rest:
            raise ValueError("must be {home}/... or an absolute path, without '..'")
        return value

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        try:
            value.format(value="")
        except (AttributeError, KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"template may only use {{value}}: {exc}") from None
        return value


class AgentManifest(BaseModel):
    model_config = ConfigDict(extra="allow")

    contract_version: str
    name: str = Field(min_length=1)
    install_cmd: str
    launch_cmd: str = Field(min_length=1)
    description: str = ""
    protocol: Literal["acp"] = "acp"
    aliases: list[str] = Field(default_factory=list)
    api_protocol: Literal["anthropic-messages", "openai-completions", "openai-responses"] | None = (
        None
    )
    env_mapping: dict[str, str] = Field(default_factory=dict)
    default_model: str | None = None
    requires_env: list[str] = Field(default_factory=list)
    install_timeout: float = Field(default=900.0, gt=0)
    # Acted on between install and launch (worker/acp/provision.py).
    skill_paths: list[str] = Field(default_factory=list)
    home_dirs: list[str] = Field(default_factory=list)
    credential_files: list[CredentialFile] = Field(default_factory=list)
    # The run's model over ACP (worker/acp/session.py): session/set_model (or the agent's "model"
    # session config option) with the name shaped per acp_model_format, unless the agent says
    # it takes its model from its launch environment (supports_acp_set_model = false).
    acp_model_format: str = "bare"
    supports_acp_set_model: bool = True
    # "agent": the agent calls its own model endpoint (no model proxy, worker/usage/trial.py).
    model_route: str | None = None
    # Read but not acted on by this worker.
    subscription_auth: Any = None  # host login files copied in: never from a shared worker

    @field_validator("contract_version", mode="before")
    @classmethod
    def _contract_version(cls, value: Any) -> str:
        if not isinstance(value, str) or (match := _CONTRACT_VERSION.match(value)) is None:
            raise ValueError(f'must look like MAJOR.MINOR (e.g. "1.0"); got {value!r}')
        if int(match.group(1)) != SUPPORTED_CONTRACT_MAJOR:
            raise ValueError(
                f"{value!r} declares contract major {match.group(1)}; this worker speaks "
                f"contract {SUPPORTED_CONTRACT_MAJOR}.x"
            )
        return value

    @field_validator("skill_paths")
    @classmethod
    def _skill_paths(cls, value: list[str]) -> list[str]:
        for path in value:
            base, _, rest = path.partition("/")
            if base not in ("$HOME", "$WORKSPACE") or not _relative(rest):
                raise ValueError(f"{path!r} must be $HOME/... or $WORKSPACE/..., without '..'")
        return value

    @field_validator("home_dirs")
    @classmethod
    def _home_dirs(cls, value: list[str]) -> list[str]:
        for path in value:
            if not _relative(path):
                raise ValueError(f"{path!r} must be a folder under the home, without '..'")
        return value

    @property
    def unknown_keys(self) -> list[str]:
        return sorted(self.model_extra or {})

    @property
    def unknown_key_notes(self) -> list[str]:
        """Each unknown key, with the known key it looks like a misspelling of."""
        return [_unknown_key_note(key) for key in self.unknown_keys]

    def missing_env(
        self, agent_env: Mapping[str, str], environ: Mapping[str, str] | None = None
    ) -> list[str]:
        """``requires_env`` names set neither in the agent's env nor in the worker's."""
        env = os.environ if environ is None else environ
        return [name for name in self.requires_env if name not in agent_env and name not in env]

    def acp_model_id(self, model: str) -> str:
        """``model`` (a litellm route, ``provider/model``) as this agent takes it over ACP:
        ``bare`` (the default) drops the route's provider (``openai/gpt-4o`` -> ``gpt-4o``);
        ``provider/model`` keeps it, or infers one for a bare name (``gpt-4o`` ->
        ``openai/gpt-4o``); ``registered-provider/model`` sends the route as given. Any other
        value is read as ``bare``, as BenchFlow reads it."""
        fmt = self.acp_model_format
        if fmt == "registered-provider/model":
            return model
        if fmt == "provider/model":
            if "/" in model:
                return model
            lowered = model.lower()
            provider = next((p for key, p in _PROVIDER_HINTS if key in lowered), None)
            return f"{provider}/{model}" if provider else model
        return model.split("/", 1)[1] if "/" in model else model


# A bare model name's provider, for acp_model_format = "provider/model" (models.dev ids).
_PROVIDER_HINTS = (
    ("gemini", "google"),
    ("gemma", "google"),
    ("claude", "anthropic"),
    ("gpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("mistral", "mistral"),
    ("codestral", "mistral"),
    ("deepseek", "deepseek"),
)


@dataclass(frozen=True)
class AgentManifestEntry:
    manifest: AgentManifest
    path: Path  # the manifest.toml

    @property
    def folder(self) -> Path:
        return self.path.parent


def agents_dirs(environ: Mapping[str, str] | None = None) -> list[Path]:
    env = os.environ if environ is None else environ
    dirs: list[Path] = []
    for var in AGENTS_DIR_VARS:
        for part in env.get(var, "").split(os.pathsep):
            if part and Path(part) not in dirs:
                dirs.append(Path(part))
    return dirs


def _known_key(key: str) -> str | None:
    """The manifest key ``key`` most likely misspells, if one is close."""
    close = difflib.get_close_matches(key, AgentManifest.model_fields, n=1, cutoff=0.75)
    return close[0] if close else None


def _unknown_key_note(key: str) -> str:
    known = _known_key(key)
    return f"{key} (did you mean {known}?)" if known else key


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise AgentManifestError(f"{path}: invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentManifestError(f"{path}: cannot read: {exc}") from None


def load_agent_manifest(path: Path) -> AgentManifest:
    raw = _read_toml(path)
    try:
        return AgentManifest.model_validate(raw)
    except ValidationError as exc:
        unknown = [k for k in raw if k not in AgentManifest.model_fields]
        misspelt = {known: key for key in unknown if (known := _known_key(key)) is not None}
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"]) or "(root)"
            problem = f"{where}: {error['msg']}"
            if error["type"] == "missing" and where in misspelt:
                problem += f" (is the unknown key {misspelt[where]!r} a misspelling of it?)"
            problems.append(problem)
        if unknown:
            problems.append("unknown keys: " + ", ".join(_unknown_key_note(k) for k in unknown))
        raise AgentManifestError(f"{path}: {'; '.join(problems)}") from None


def manifest_paths(folder: Path) -> list[Path]:
    """The ``manifest.toml`` files below ``folder``, at any depth, sorted; one directly in
    ``folder`` is not an agent (the folder holds agent folders), and build, vendor and VCS
    folders are not searched."""
    found = []
    for path in folder.rglob(MANIFEST_FILE):
        parts = path.relative_to(folder).parts
        if len(parts) >= 2 and not any(part in SKIPPED_DIRS for part in parts) and path.is_file():
            found.append(path)
    return sorted(found)


@dataclass(frozen=True)
class BrokenManifest:
    """A manifest (or an agents folder) that cannot be used, with why; ``names`` are the agent
    names it declares, when they can be read, so asking for one of them gives this error."""

    path: Path
    error: str
    names: tuple[str, ...] = ()


@dataclass
class AgentCatalog:
    """What the agents dirs hold: usable agents by name and alias, the manifests that cannot be
    used, and the names refused (declared by a broken manifest, or by two manifests) with why."""

    agents: dict[str, AgentManifestEntry] = field(default_factory=dict)
    broken: list[BrokenManifest] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


def _declared_names(path: Path) -> tuple[str, ...]:
    """The ``name`` and string ``aliases`` a manifest declares, read leniently (it may be broken)."""
    try:
        raw = _read_toml(path)
    except AgentManifestError:
        return ()
    names = [raw.get("name")]
    aliases = raw.get("aliases")
    if isinstance(aliases, list):
        names.extend(aliases)
    return tuple(dict.fromkeys(n for n in names if isinstance(n, str) and n))


def _scan_folder(folder: Path) -> AgentCatalog:
    """One agents dir. A manifest that fails to load spoils only itself (and the names it
    declares); a name two manifests declare is refused, naming both files."""
    found = AgentCatalog()
    declared: dict[str, Path] = {}
    for path in manifest_paths(folder):
        try:
            entry = AgentManifestEntry(load_agent_manifest(path), path)
        except AgentManifestError as exc:
            broken = BrokenManifest(path, str(exc), _declared_names(path))
            found.broken.append(broken)
            names: tuple[str, ...] = broken.names
            error = broken.error
        else:
            names = tuple(dict.fromkeys((entry.manifest.name, *entry.manifest.aliases)))
            error = ""
        for name in names:
            other = declared.get(name)
            if other is not None:
                found.agents.pop(name, None)
                found.refused[name] = (
                    f"duplicate agent name {name!r}: declared by {other} and by {path}"
                )
                continue
            declared[name] = path
            if error:
                found.refused[name] = error
            else:
                found.agents[name] = entry
    return found


def scan(environ: Mapping[str, str] | None = None) -> AgentCatalog:
    """Every agents dir. Between them the first listed wins a name (an override, as on a search
    path), a refused name included: a broken override is an error, never a silent fallback."""
    catalog = AgentCatalog()
    for folder in agents_dirs(environ):
        if not folder.is_dir():
            catalog.broken.append(BrokenManifest(folder, f"{folder}: agents folder does not exist"))
            continue
        one = _scan_folder(folder)
        catalog.broken.extend(one.broken)
        for name, entry in one.agents.items():
            if name not in catalog.agents and name not in catalog.refused:
                catalog.agents[name] = entry
        for name, error in one.refused.items():
            if name not in catalog.agents and name not in catalog.refused:
                catalog.refused[name] = error
    return catalog


def discover(environ: Mapping[str, str] | None = None) -> dict[str, AgentManifestEntry]:
    """Every usable manifest agent by name and alias (see :func:`scan` for the others)."""
    return scan(environ).agents


def find(name: str, environ: Mapping[str, str] | None = None) -> AgentManifestEntry:
    catalog = scan(environ)
    if name in catalog.agents:
        return catalog.agents[name]
    if name in catalog.refused:
        raise AgentManifestError(catalog.refused[name])
    where = (
        ", ".join(str(d) for d in agents_dirs(environ))
        or f"none ({' / '.join(AGENTS_DIR_VARS)} unset)"
    )
    message = f"unknown agent {name!r} (agents folders: {where})"
    if catalog.broken:
        unreadable = len(catalog.broken)
        message += (
            f"; {unreadable} manifest{'s' if unreadable > 1 else ''} could not be loaded "
            "(the agents command lists them with their errors)"
        )
    raise AgentManifestError(message)
