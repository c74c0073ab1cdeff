"""Amber manifests as data: the known names, a parsed manifest, its ``${...}`` references, and the
base every check builds on (a manifest, a loader for local children, the findings so far).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from leaderboard.findings import Finding, child

TOP_LEVEL_KEYS = frozenset(
    {
        "manifest_version",
        "experimental_features",
        "program",
        "components",
        "use",
        "environments",
        "child_templates",
        "config_schema",
        "slots",
        "resources",
        "provides",
        "bindings",
        "policies",
        "overlays",
        "exports",
        "metadata",
    }
)
OBJECT_SECTIONS = (
    "program",
    "components",
    "use",
    "environments",
    "child_templates",
    "config_schema",
    "slots",
    "resources",
    "provides",
    "exports",
)
LIST_SECTIONS = ("bindings", "overlays")  # experimental_features: its own rule
EXPERIMENTAL_FEATURES = frozenset({"docker", "kvm", "policies"})
FRAMEWORK_CAPABILITIES = {"docker": "docker", "kvm": "kvm"}  # capability -> required feature
CAPABILITY_KINDS = frozenset({"mcp", "llm", "http", "docker", "a2a", "storage"})
SLOT_FIELDS = frozenset({"url"})
# Amber's lint codes (warnings; `-D warnings` or `-D <code>` makes them errors).
LINTS = frozenset(
    f"manifest::{name}"
    for name in (
        "unused_slot",
        "unused_provide",
        "unused_program",
        "unused_use",
        "unused_config",
        "optional_env_config",
        "optional_command_config",
        "optional_mount_config",
        "required_slot_when",
        "required_slot_when_env",
        "duplicate_environment_resolver",
        "deprecated_binding_self_source",
        "deprecated_export_self_target",
    )
)
ERROR_RULES = frozenset(
    {
        "parse",
        "duplicate_key",
        "unknown_top_level_key",
        "section_type",
        "manifest_version",
        "experimental_feature",
        "version_gate",
        "config_schema",
        "endpoint_name",
        "duplicate_endpoint",
        "name_dot",
        "slot_provide_conflict",
        "capability_kind",
        "provide_key",
        "provide_endpoint",
        "program_shape",
        "unresolved_config",
        "unresolved_slot",
        "interpolation_source",
        "unresolved_item",
        "mount",
        "framework_capability",
        "export_target",
        "binding",
        "binding_slot",
        "binding_kind",
        "binding_source",
        "child_manifest",
        "child_feature",
        "child_config",
        # the Amber linker's errors, under its codes
        "linker::unbound_slot",
        "linker::external_slot_requires_weak",
        "linker::invalid_config",
        "linker::invalid_export",
    }
)
RULES = ERROR_RULES | LINTS
# Amber's lints that `-D` accepts although we never report them: Amber v0.4 reports
# `config_lint_incomplete` only for schemas whose `$ref`s its own config analysis then refuses
# (a cyclic or dangling `$ref` fails the check), so here those are `config_schema` errors.
DENYABLE_LINTS = LINTS | {"manifest::config_lint_incomplete"}
# The errors Amber finds while parsing a manifest (`manifest::*`, a child that cannot be loaded
# or needs a feature its parent lacks): they stop `amber check` before any lint is printed. The
# other errors (the linker's, slot interpolation) are reported beside the lints.
LINK_RULES = frozenset(
    {
        "binding_slot",
        "binding_kind",
        "binding_source",
        "child_config",
        "unresolved_config",
        "unresolved_slot",
        "unresolved_item",
        "linker::unbound_slot",
        "linker::external_slot_requires_weak",
        "linker::invalid_config",
        "linker::invalid_export",
    }
)
FATAL_RULES = ERROR_RULES - LINK_RULES
VERSION_PATTERN = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)
INTERPOLATION = re.compile(r"\$\{([^}]*)\}")
VERSION_GATES = {"when": (0, 2, 0), "each": (0, 3, 0), "use": (0, 4, 0), "overlays": (0, 4, 0)}


@dataclass
class AmberManifest:
    path: Path
    data: dict[str, Any]
    version: tuple[int, int, int] | None

    def section(self, name: str) -> dict[str, Any]:
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}


@dataclass
class Use:
    """One ``${...}`` or ``when`` reference, where it occurs and whether a ``when`` guards it."""

    path: str
    source: str  # "config", "slots", "item" or anything else (an error)
    dotted: str  # path after the source, "" for the whole object
    where: str  # "env", "command", "image", "mount", "when", "child_config"
    guarded: bool = False


@dataclass(frozen=True)
class LintContext:
    """Where a manifest is checked: as the root of ``amber check``, or as a child of one.

    A child's slots bound weak (and its optional slots) are never linted ``unused_slot``, and a
    child whose program uses a slot bound from the root's own (external) slots is never linted
    ``unused_program``, as Amber suppresses them in a linked scenario; a root with a program gets
    all its slots bound weak from outside. When linking fails Amber lints without suppressions.
    """

    root: bool = True
    weak_slots: frozenset[str] = frozenset()
    external_slots: frozenset[str] = frozenset()
    linked: bool = True  # False when linking fails: Amber then lints every manifest unsuppressed


@dataclass
class AmberManifestCheck:
    """A manifest under check; ``add`` records a finding (lints as warnings)."""

    manifest: AmberManifest
    loader: Loader
    context: LintContext = field(default_factory=LintContext)
    findings: list[Finding] = field(default_factory=list)

    @property
    def file(self) -> str:
        return str(self.manifest.path)

    def add(self, path: str, rule: str, message: str) -> None:
        severity = "warning" if rule in LINTS else "error"
        self.findings.append(
            Finding(path=path, rule=rule, message=message, file=self.file, severity=severity)
        )


def as_obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def interpolations(text: str, p: str, where: str, guarded: bool) -> Iterator[Use]:
    for match in INTERPOLATION.finditer(text):
        source, _, dotted = match.group(1).strip().partition(".")
        yield Use(p, source, dotted, where, guarded)


def walk_strings(value: Any, p: str) -> Iterator[Use]:
    if isinstance(value, str):
        for use in interpolations(value, p, "child_config", False):
            if use.source == "config":
                yield use
    elif isinstance(value, dict):
        for key, sub in value.items():
            yield from walk_strings(sub, child(p, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from walk_strings(sub, child(p, i))


def split_ref(value: Any) -> tuple[str, str]:
    text = str(value) if isinstance(value, str) else ""
    ref, _, rest = text.partition(".")
    return ref, rest


def binding_parts(binding: Any) -> tuple[tuple[str, str], tuple[str, str]] | None:
    if (
        not isinstance(binding, dict)
        or not isinstance(binding.get("to"), str)
        or not isinstance(binding.get("from"), str)
    ):
        return None
    to_ref, slot = split_ref(binding["to"])
    from_ref, capability = split_ref(binding["from"])
    slot = str(binding.get("slot", slot) or "")
    capability = str(binding.get("capability", capability) or "")
    return (to_ref, slot), (from_ref, capability)


class Loader:
    """Loads and caches manifests (parse errors are reported once, by the file's own check)."""

    def __init__(self) -> None:
        self._cache: dict[Path, tuple[AmberManifest | None, str]] = {}

    def load(self, path: Path) -> tuple[AmberManifest | None, str]:
        key = path.resolve()
        if key not in self._cache:
            self._cache[key] = parse_amber_manifest(path)
        return self._cache[key]


def parse_amber_manifest(path: Path) -> tuple[AmberManifest | None, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return None, exc.strerror or type(exc).__name__
    try:
        data = json5.loads(text, allow_duplicate_keys=False)
    except ValueError as exc:
        return None, str(exc)
    if not isinstance(data, dict):
        return None, "a manifest is a single JSON5 object"
    version_text = data.get("manifest_version")
    match = VERSION_PATTERN.match(version_text) if isinstance(version_text, str) else None
    version = (int(match[1]), int(match[2]), int(match[3])) if match else None
    return AmberManifest(path, data, version), ""
