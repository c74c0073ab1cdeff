"""Agent manifests (BenchFlow's contract): ``<agents dir>/<name>/manifest.toml``.

Agents dirs come from ``SKILLSBENCH_AGENTS_DIR`` then ``BENCHFLOW_AGENTS_DIR`` (each may list
several folders separated by ``:``). Keys we do not know are kept and reported, never dropped
silently: a misspelled key shows up in ``skillsbench-agentbeats agents NAME``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

AGENTS_DIR_VARS = ("SKILLSBENCH_AGENTS_DIR", "BENCHFLOW_AGENTS_DIR")
MANIFEST_FILE = "manifest.toml"


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
    # Read but not acted on by this worker.
    model_route: str | None = None
    acp_model_format: str | None = None
    supports_acp_set_model: bool | None = None
    subscription_auth: Any = None  # host login files copied in: never from a shared worker

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


@dataclass(frozen=True)
class AgentManifestEntry:
    manifest: AgentManifest
    path: Path  # the manifest.toml

    @property
    def folder(self) -> Path:
        return self.path.parent


def agents_dirs(environ: dict[str, str] | None = None) -> list[Path]:
    env = os.environ if environ is None else environ
    dirs: list[Path] = []
    for var in AGENTS_DIR_VARS:
        for part in env.get(var, "").split(os.pathsep):
            if part and Path(part) not in dirs:
                dirs.append(Path(part))
    return dirs


def load_agent_manifest(path: Path) -> AgentManifest:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise AgentManifestError(f"{path}: invalid TOML: {exc}") from None
    try:
        return AgentManifest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
        )
        raise AgentManifestError(f"{path}: {problems}") from None


def discover(environ: dict[str, str] | None = None) -> dict[str, AgentManifestEntry]:
    """Every manifest agent by name and alias; the first folder listed wins a name clash."""
    found: dict[str, AgentManifestEntry] = {}
    for folder in agents_dirs(environ):
        if not folder.is_dir():
            raise AgentManifestError(f"{folder}: agents folder does not exist")
        for path in sorted(folder.glob(f"*/{MANIFEST_FILE}")):
            entry = AgentManifestEntry(load_agent_manifest(path), path)
            for name in (entry.manifest.name, *entry.manifest.aliases):
                found.setdefault(name, entry)
    return found


def find(name: str, environ: dict[str, str] | None = None) -> AgentManifestEntry:
    agents = discover(environ)
    if name not in agents:
        where = (
            ", ".join(str(d) for d in agents_dirs(environ))
            or f"none ({' / '.join(AGENTS_DIR_VARS)} unset)"
        )
        raise AgentManifestError(f"unknown agent {name!r} (agents folders: {where})")
    return agents[name]
