"""Static checks of Amber component manifests: what ``amber check`` verifies, minus the linker's
network fetches.

Parse-time rules (errors), the linker's rules we can apply to local child manifests (errors),
and Amber's lints (warnings; ``-D warnings`` or ``-D <lint>`` turns them into errors). Every
finding names the file, the JSON path and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from leaderboard.amber_schema import check_config_schema, property_names, resolve_config_path
from leaderboard.findings import Finding, child, json_path

TOP_LEVEL_KEYS = frozenset(
    {
        "manifest_version",
        "experimental_features",
        "program",
        "components",
        "use",
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
EXPERIMENTAL_FEATURES = frozenset({"docker", "kvm", "policies"})
FRAMEWORK_CAPABILITIES = {"docker": "docker", "kvm": "kvm"}  # capability -> required feature
CAPABILITY_KINDS = frozenset({"mcp", "llm", "http", "docker", "a2a", "storage"})
SLOT_FIELDS = frozenset({"url"})
LINTS = frozenset(
    {
        "unused_slot",
        "unused_provide",
        "unused_program",
        "unused_config",
        "optional_env_config",
        "optional_command_config",
        "optional_mount_config",
        "required_slot_when",
        "deprecated_binding_self_source",
        "deprecated_export_self_target",
    }
)
ERROR_RULES = frozenset(
    {
        "parse",
        "duplicate_key",
        "unknown_top_level_key",
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
        "unbound_slot",
        "child_config",
    }
)
RULES = ERROR_RULES | LINTS
_VERSION = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)
_INTERPOLATION = re.compile(r"\$\{([^}]*)\}")
_GATES = {"when": (0, 2, 0), "each": (0, 3, 0), "use": (0, 4, 0), "overlays": (0, 4, 0)}


@dataclass
class Manifest:
    path: Path
    data: dict[str, Any]
    version: tuple[int, int, int] | None

    def section(self, name: str) -> dict[str, Any]:
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}


@dataclass
class _Use:
    """One ``${...}`` or ``when`` reference, where it occurs and whether a ``when`` guards it."""

    path: str
    source: str  # "config", "slots", "item" or anything else (an error)
    dotted: str  # path after the source, "" for the whole object
    where: str  # "env", "command", "image", "mount", "when", "child_config"
    guarded: bool = False


@dataclass
class _Checker:
    manifest: Manifest
    loader: _Loader
    findings: list[Finding] = field(default_factory=list)

    @property
    def file(self) -> str:
        return str(self.manifest.path)

    def add(self, path: str, rule: str, message: str) -> None:
        lint = rule in LINTS
        self.findings.append(
            Finding(
                path=path,
                rule=rule,
                message=message,
                file=self.file,
                severity="warning" if lint else "error",
            )
        )

    # --- the whole manifest ---------------------------------------------------------------
    def run(self) -> list[Finding]:
        data = self.manifest.data
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                self.add(json_path(key), "unknown_top_level_key", f"{key!r} is not a manifest key")
        self._version()
        features = self._features()
        if "config_schema" in data:
            for f in check_config_schema(
                data["config_schema"], json_path("config_schema"), self.file
            ):
                self.findings.append(f)
        endpoints = self._endpoints()
        self._capabilities(endpoints)
        self._program_shape()
        uses = list(self._uses())
        self._check_uses(uses)
        self._mounts(features)
        self._exports()
        self._bindings(features)
        self._children(features)
        self._lints(uses)
        return self.findings

    def _gate(self, feature: str, path: str) -> None:
        need = _GATES[feature]
        version = self.manifest.version
        if version is not None and version < need:
            self.add(
                path,
                "version_gate",
                f"{feature!r} needs manifest_version >= {'.'.join(map(str, need))}",
            )

    def _version(self) -> None:
        value = self.manifest.data.get("manifest_version")
        if value is None:
            self.add(
                json_path("manifest_version"), "manifest_version", "manifest_version is required"
            )
        elif not isinstance(value, str) or not _VERSION.match(value):
            self.add(json_path("manifest_version"), "manifest_version", f"{value!r} is not SemVer")
        elif not (0, 1, 0) <= self.manifest.version < (1, 0, 0):  # type: ignore[operator]
            self.add(
                json_path("manifest_version"),
                "manifest_version",
                f"{value} is outside >=0.1.0,<1.0.0",
            )
        for key in ("use", "overlays"):
            if key in self.manifest.data:
                self._gate(key, json_path(key))

    def _features(self) -> set[str]:
        value = self.manifest.data.get("experimental_features", [])
        if not isinstance(value, list):
            self.add(json_path("experimental_features"), "experimental_feature", "must be a list")
            return set()
        for i, name in enumerate(value):
            if name not in EXPERIMENTAL_FEATURES:
                self.add(
                    json_path("experimental_features", i),
                    "experimental_feature",
                    f"unknown experimental feature {name!r}",
                )
        return {str(v) for v in value}

    def _endpoints(self) -> set[str]:
        program = self.manifest.section("program")
        network = _obj(program.get("network"))
        names: set[str] = set()
        for i, endpoint in enumerate(network.get("endpoints") or []):
            name = endpoint.get("name") if isinstance(endpoint, dict) else None
            p = json_path("program", "network", "endpoints", i)
            if not isinstance(name, str):
                self.add(p, "endpoint_name", "an endpoint needs a name")
            elif name in names:
                self.add(
                    child(p, "name"),
                    "duplicate_endpoint",
                    f"endpoint name {name!r} is declared twice",
                )
            else:
                names.add(name)
        return names

    def _capabilities(self, endpoints: set[str]) -> None:
        slots, provides = self.manifest.section("slots"), self.manifest.section("provides")
        for section, entries in (
            ("slots", slots),
            ("provides", provides),
            ("components", self.manifest.section("components")),
            ("exports", self.manifest.section("exports")),
        ):
            for name in entries:
                if "." in name:
                    self.add(json_path(section, name), "name_dot", f"{name!r} must not contain '.'")
        for name in sorted(set(slots) & set(provides)):
            self.add(
                json_path("provides", name),
                "slot_provide_conflict",
                f"{name!r} is both a slot and a provide",
            )
        for section, entries in (("slots", slots), ("provides", provides)):
            for name, decl in entries.items():
                p = json_path(section, name)
                kind = decl.get("kind") if isinstance(decl, dict) else None
                if kind not in CAPABILITY_KINDS:
                    self.add(
                        child(p, "kind"),
                        "capability_kind",
                        f"kind {kind!r} is not one of {sorted(CAPABILITY_KINDS)}",
                    )
        for name, decl in provides.items():
            p = json_path("provides", name)
            if not isinstance(decl, dict):
                continue
            for key in sorted(set(decl) - {"kind", "profile", "endpoint"}):
                self.add(
                    child(p, key), "provide_key", f"provides entries are strict: {key!r} is unknown"
                )
            if decl.get("kind") == "storage":
                self.add(
                    child(p, "kind"), "capability_kind", "provides cannot declare kind storage"
                )
            endpoint = decl.get("endpoint")
            if endpoint is None:
                self.add(p, "provide_endpoint", "a provide must name an endpoint")
            elif endpoint not in endpoints:
                self.add(
                    child(p, "endpoint"),
                    "provide_endpoint",
                    f"endpoint {endpoint!r} is not declared in program.network.endpoints",
                )

    def _program_shape(self) -> None:
        if "program" not in self.manifest.data:
            return
        program = self.manifest.data["program"]
        p = json_path("program")
        if not isinstance(program, dict):
            self.add(p, "program_shape", "program must be an object")
            return
        variants = [k for k in ("image", "path", "vm") if k in program]
        if len(variants) != 1:
            self.add(p, "program_shape", "program must declare exactly one of image, path or vm")
        if "entrypoint" in program and "image" not in program:
            self.add(child(p, "entrypoint"), "program_shape", "entrypoint is only valid with image")
        if "args" in program and "path" not in program:
            self.add(child(p, "args"), "program_shape", "args is only valid with path")
        if "image" in program and "entrypoint" not in program:
            self.add(p, "program_shape", "an image program needs an entrypoint")

    # --- interpolation and references -----------------------------------------------------
    def _uses(self) -> Iterator[_Use]:
        program = self.manifest.section("program")
        base = json_path("program")
        if isinstance(program.get("image"), str):
            yield from _interpolations(program["image"], child(base, "image"), "image", False)
        command_key = "entrypoint" if "entrypoint" in program else "args"
        command = program.get(command_key)
        items = (
            command if isinstance(command, list) else [command] if isinstance(command, str) else []
        )
        for i, item in enumerate(items):
            p = (
                child(base, command_key, i)
                if isinstance(command, list)
                else child(base, command_key)
            )
            yield from self._templated(item, p, "command")
        env = _obj(program.get("env"))
        for name, value in env.items():
            yield from self._templated(value, child(base, "env", name), "env")
        for name, decl in self.manifest.section("components").items():
            if isinstance(decl, dict) and "config" in decl:
                yield from _walk_strings(decl["config"], json_path("components", name, "config"))

    def _templated(self, value: Any, p: str, where: str) -> Iterator[_Use]:
        if isinstance(value, str):
            yield from _interpolations(value, p, where, False)
            return
        if not isinstance(value, dict):
            self.add(p, "program_shape", "must be a string or a {when|each, ...} object")
            return
        if "when" in value:
            self._gate("when", child(p, "when"))
            when = value["when"]
            source, _, dotted = str(when).partition(".")
            yield _Use(child(p, "when"), source, dotted, "when", True)
        if "each" in value:
            self._gate("each", child(p, "each"))
        for key in ("value", "argv", "arg"):
            inner = value.get(key)
            for text, q in (
                [(inner, child(p, key))]
                if isinstance(inner, str)
                else [(s, child(p, key, i)) for i, s in enumerate(inner)]
                if isinstance(inner, list)
                else []
            ):
                if isinstance(text, str):
                    yield from _interpolations(text, q, where, "when" in value or "each" in value)

    def _check_uses(self, uses: list[_Use]) -> None:
        schema = self.manifest.data.get("config_schema")
        slots = self.manifest.section("slots")
        for use in uses:
            if use.source == "config":
                if not use.dotted:
                    continue
                if schema is None:
                    self.add(
                        use.path,
                        "unresolved_config",
                        f"config.{use.dotted}: the manifest has no config_schema",
                    )
                    continue
                resolves, optional = resolve_config_path(schema, use.dotted)
                if not resolves:
                    self.add(
                        use.path,
                        "unresolved_config",
                        f"config.{use.dotted} is not declared in config_schema",
                    )
                elif optional and not use.guarded and use.where in ("env", "command"):
                    lint = (
                        "optional_env_config" if use.where == "env" else "optional_command_config"
                    )
                    self.add(
                        use.path, lint, f"references optional config `{use.dotted}` without `when`"
                    )
            elif use.source == "slots":
                if not use.dotted:
                    continue
                name, _, rest = use.dotted.partition(".")
                decl = slots.get(name)
                if decl is None:
                    self.add(use.path, "unresolved_slot", f"slots.{name} is not a declared slot")
                elif rest and rest not in SLOT_FIELDS:
                    self.add(
                        use.path,
                        "unresolved_slot",
                        f"slots.{name}.{rest}: slots expose only {sorted(SLOT_FIELDS)}",
                    )
                elif isinstance(decl, dict) and decl.get("kind") == "storage":
                    self.add(
                        use.path,
                        "unresolved_slot",
                        f"storage slot {name!r} cannot be interpolated; mount it",
                    )
                elif (
                    use.where == "when"
                    and isinstance(decl, dict)
                    and not decl.get("optional")
                    and not decl.get("multiple")
                ):
                    self.add(
                        use.path,
                        "required_slot_when",
                        f"`when` on required slot {name!r} is always true",
                    )
            elif use.source == "item":
                if not use.guarded:
                    self.add(
                        use.path,
                        "unresolved_item",
                        "${item.*} is only valid inside an `each` expansion",
                    )
            else:
                self.add(
                    use.path,
                    "interpolation_source",
                    f"unknown interpolation source {use.source!r} (config, slots or item)",
                )

    def _mounts(self, features: set[str]) -> None:
        program = self.manifest.section("program")
        mounts = _list(program.get("mounts"))
        schema = self.manifest.data.get("config_schema")
        for i, mount in enumerate(mounts):
            p = json_path("program", "mounts", i)
            if not isinstance(mount, dict):
                self.add(p, "mount", "a mount is an object {path, from}")
                continue
            target, source = mount.get("path"), mount.get("from")
            if not (
                isinstance(target, str) and target.startswith("/") and ".." not in target.split("/")
            ):
                self.add(child(p, "path"), "mount", "mount paths are absolute without '..'")
            kind, _, name = str(source).partition(".")
            if kind == "framework":
                self._framework(name, child(p, "from"), features)
            elif kind == "config":
                if name:
                    resolves, optional = (
                        resolve_config_path(schema, name) if schema is not None else (False, False)
                    )
                    if not resolves:
                        self.add(
                            child(p, "from"),
                            "unresolved_config",
                            f"config.{name} is not declared in config_schema",
                        )
                    elif optional:
                        self.add(
                            child(p, "from"),
                            "optional_mount_config",
                            f"mounts optional config `{name}`",
                        )
            elif kind == "slots":
                decl = self.manifest.section("slots").get(name)
                if not isinstance(decl, dict) or decl.get("kind") != "storage":
                    self.add(
                        child(p, "from"), "mount", f"slots.{name} is not a declared storage slot"
                    )
            elif kind == "resources":
                if name not in self.manifest.section("resources"):
                    self.add(child(p, "from"), "mount", f"resources.{name} is not declared")
            else:
                self.add(child(p, "from"), "mount", f"unknown mount source {source!r}")

    def _framework(self, name: str, p: str, features: set[str]) -> None:
        feature = FRAMEWORK_CAPABILITIES.get(name)
        if feature is None:
            self.add(
                p, "framework_capability", f"framework.{name} is not a known framework capability"
            )
        elif feature not in features:
            self.add(
                p,
                "framework_capability",
                f"framework.{name} needs experimental_features: [{feature!r}]",
            )

    def _exports(self) -> None:
        slots, provides = self.manifest.section("slots"), self.manifest.section("provides")
        children = self.manifest.section("components")
        for name, target in self.manifest.section("exports").items():
            p = json_path("exports", name)
            text = str(target)
            kind, dot, rest = text.partition(".")
            if text.startswith("#"):
                child_name = text[1:].partition(".")[0]
                if child_name not in children or "." not in text:
                    self.add(
                        p,
                        "export_target",
                        f"{text!r}: #{child_name} is not a declared child export",
                    )
            elif kind == "framework":
                self.add(p, "export_target", "framework cannot be exported")
            elif dot and kind in ("provides", "slots"):
                if rest not in (provides if kind == "provides" else slots):
                    self.add(p, "export_target", f"{text!r} is not declared")
            elif dot and kind == "self":
                self.add(
                    p,
                    "deprecated_export_self_target",
                    f"use provides.{rest} or slots.{rest} instead of {text!r}",
                )
                if rest not in provides and rest not in slots:
                    self.add(p, "export_target", f"{text!r} is not declared")
            elif not dot and (text in provides or text in slots):
                continue
            else:
                self.add(p, "export_target", f"{text!r} is not a provide, slot or child export")

    def _bindings(self, features: set[str]) -> None:
        bindings = self.manifest.data.get("bindings", [])
        if not isinstance(bindings, list):
            self.add(json_path("bindings"), "binding", "bindings must be a list")
            return
        for i, binding in enumerate(bindings):
            p = json_path("bindings", i)
            parsed = _binding_parts(binding)
            if parsed is None:
                self.add(
                    p,
                    "binding",
                    "a binding is {to: '#child.slot', from: ...} (or the explicit form)",
                )
                continue
            (to_ref, slot), (from_ref, capability) = parsed
            self._binding_target(to_ref, slot, child(p, "to"))
            self._binding_source(from_ref, capability, child(p, "from"), features)

    def _binding_target(self, ref: str, slot: str, p: str) -> None:
        if not ref.startswith("#") or not slot:
            self.add(
                p,
                "binding",
                f"`to` must be '#<child>.<slot>', not {ref + ('.' + slot if slot else '')!r}",
            )
        elif ref[1:] not in self.manifest.section("components"):
            self.add(p, "binding", f"{ref} is not a declared child component")
        elif "." in slot:
            self.add(p, "name_dot", f"slot name {slot!r} must not contain '.'")

    def _binding_source(self, ref: str, capability: str, p: str, features: set[str]) -> None:
        sections = {"slots": "slots", "provides": "provides", "resources": "resources"}
        if ref.startswith("#"):
            if ref[1:] not in self.manifest.section("components") or not capability:
                self.add(p, "binding", f"{ref}.{capability}: not a declared child export")
        elif ref == "framework":
            self._framework(capability, p, features)
        elif ref in sections:
            if capability not in self.manifest.section(sections[ref]):
                self.add(p, "binding", f"{ref}.{capability} is not declared")
        elif ref == "self":
            self.add(
                p,
                "deprecated_binding_self_source",
                f"use provides.{capability} or slots.{capability} instead of self",
            )
            if capability not in self.manifest.section(
                "provides"
            ) and capability not in self.manifest.section("slots"):
                self.add(p, "binding", f"self.{capability} is not declared")
        else:
            self.add(
                p,
                "binding",
                f"`from` must be #child.<export>, slots.*, provides.*, resources.* or framework.*, not {ref!r}",
            )

    # --- link-time checks against local child manifests ------------------------------------
    def _children(self, features: set[str]) -> None:
        bound: dict[str, set[str]] = {}
        for binding in self.manifest.data.get("bindings") or []:
            parsed = _binding_parts(binding)
            if parsed is not None and parsed[0][0].startswith("#"):
                bound.setdefault(parsed[0][0][1:], set()).add(parsed[0][1])
        for name, decl in self.manifest.section("components").items():
            p = json_path("components", name)
            ref = decl.get("manifest") if isinstance(decl, dict) and "manifest" in decl else decl
            url = ref.get("url") if isinstance(ref, dict) else ref
            if not isinstance(url, str):
                self.add(p, "child_manifest", "a child needs a manifest reference")
                continue
            if "://" in url and not url.startswith("file://"):
                continue  # remote: the linker fetches it; we do not
            child_path = (self.manifest.path.parent / url.removeprefix("file://")).resolve()
            manifest, error = self.loader.load(child_path)
            if manifest is None:
                self.add(p, "child_manifest", f"cannot load {url}: {error}")
                continue
            missing = set(map(str, manifest.data.get("experimental_features") or [])) - features
            if missing:
                self.add(
                    p,
                    "child_feature",
                    f"child needs experimental features {sorted(missing)} the parent does not enable",
                )
            for slot, slot_decl in manifest.section("slots").items():
                if (
                    isinstance(slot_decl, dict)
                    and not slot_decl.get("optional")
                    and slot not in bound.get(name, set())
                ):
                    self.add(p, "unbound_slot", f"required slot {name}.{slot} is not bound")
            config = decl.get("config") if isinstance(decl, dict) else None
            self._child_config(manifest, config, child(p, "config"))
        self._binding_kinds()

    def _child_config(self, manifest: Manifest, config: Any, p: str) -> None:
        schema = manifest.data.get("config_schema")
        if not isinstance(schema, dict):
            return
        given = config if isinstance(config, dict) else {}
        props = _obj(schema.get("properties"))
        if schema.get("additionalProperties") is False:
            for key in sorted(set(given) - set(props)):
                self.add(
                    child(p, key), "child_config", f"{key!r} is not in the child's config_schema"
                )
        for key in _list(schema.get("required")):
            if key not in given and not (
                isinstance(props.get(key), dict) and "default" in props[key]
            ):
                self.add(p, "child_config", f"required config {key!r} is missing")

    def _binding_kinds(self) -> None:
        for i, binding in enumerate(self.manifest.data.get("bindings") or []):
            parsed = _binding_parts(binding)
            if parsed is None:
                continue
            (to_ref, slot), (from_ref, capability) = parsed
            target = self._child_manifest(to_ref)
            p = json_path("bindings", i)
            slot_kind = None
            if target is not None:
                decl = target.section("slots").get(slot)
                if not isinstance(decl, dict):
                    self.add(
                        child(p, "to"),
                        "binding_slot",
                        f"{to_ref}.{slot}: the child declares no slot {slot!r}",
                    )
                    continue
                slot_kind = decl.get("kind")
            source_kind = self._source_kind(from_ref, capability, child(p, "from"))
            if slot_kind and source_kind and slot_kind != source_kind:
                self.add(
                    p,
                    "binding_kind",
                    f"{to_ref}.{slot} is {slot_kind}, but {from_ref}.{capability} is {source_kind}",
                )

    def _source_kind(self, ref: str, capability: str, p: str) -> str | None:
        if ref == "framework":
            return "docker" if capability == "docker" else None
        if ref in ("slots", "provides", "resources"):
            decl = self.manifest.section(ref).get(capability)
            return decl.get("kind") if isinstance(decl, dict) else None
        source = self._child_manifest(ref) if ref.startswith("#") else None
        if source is None:
            return None
        target = source.section("exports").get(capability)
        if target is None:
            self.add(p, "binding_source", f"{ref} exports no {capability!r}")
            return None
        kind, dot, rest = str(target).partition(".")
        name = rest if dot and kind in ("provides", "slots", "self") else str(target)
        decl = source.section("provides").get(name) or source.section("slots").get(name)
        return decl.get("kind") if isinstance(decl, dict) else None

    def _child_manifest(self, ref: str) -> Manifest | None:
        decl = self.manifest.section("components").get(ref[1:]) if ref.startswith("#") else None
        ref_value = decl.get("manifest") if isinstance(decl, dict) and "manifest" in decl else decl
        url = ref_value.get("url") if isinstance(ref_value, dict) else ref_value
        if not isinstance(url, str) or ("://" in url and not url.startswith("file://")):
            return None
        return self.loader.load(
            (self.manifest.path.parent / url.removeprefix("file://")).resolve()
        )[0]

    # --- lints ------------------------------------------------------------------------------
    def _lints(self, uses: list[_Use]) -> None:
        data = self.manifest.data
        slots, provides = self.manifest.section("slots"), self.manifest.section("provides")
        used_slots: set[str] = set()
        for use in uses:
            if use.source == "slots":
                if use.dotted:
                    used_slots.add(use.dotted.partition(".")[0])
                else:
                    used_slots |= set(slots)
        program = self.manifest.section("program")
        for mount in program.get("mounts") or []:
            if isinstance(mount, dict) and str(mount.get("from", "")).startswith("slots."):
                used_slots.add(str(mount["from"]).partition(".")[2])
        exported: set[str] = set()
        for target in self.manifest.section("exports").values():
            kind, dot, rest = str(target).partition(".")
            exported.add(rest if dot and kind in ("provides", "slots", "self") else str(target))
        bound_sources: set[str] = set()
        for binding in data.get("bindings") or []:
            parsed = _binding_parts(binding)
            if parsed is not None and parsed[1][0] in ("slots", "provides", "self"):
                bound_sources.add(parsed[1][1])
        for name in slots:
            if name not in used_slots | exported | bound_sources:
                self.add(json_path("slots", name), "unused_slot", f"slot {name!r} is never used")
        for name in provides:
            if name not in exported | bound_sources:
                self.add(
                    json_path("provides", name),
                    "unused_provide",
                    f"provide {name!r} is never exported or bound",
                )
        if "program" in data and not any(n in exported | bound_sources for n in provides):
            self.add(
                json_path("program"),
                "unused_program",
                "the program serves no exported or bound provide",
            )
        used_config = {
            u.dotted.partition(".")[0] for u in uses if u.source == "config" and u.dotted
        }
        if any(u.source == "config" and not u.dotted for u in uses):
            return
        for m in program.get("mounts") or []:
            if isinstance(m, dict) and str(m.get("from", "")).startswith("config"):
                name = str(m["from"]).partition(".")[2].partition(".")[0]
                if not name:
                    return
                used_config.add(name)
        for name in property_names(data.get("config_schema")):
            if name not in used_config:
                self.add(
                    json_path("config_schema", "properties", name),
                    "unused_config",
                    f"config {name!r} is never referenced",
                )


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _interpolations(text: str, p: str, where: str, guarded: bool) -> Iterator[_Use]:
    for match in _INTERPOLATION.finditer(text):
        source, _, dotted = match.group(1).strip().partition(".")
        yield _Use(p, source, dotted, where, guarded)


def _walk_strings(value: Any, p: str) -> Iterator[_Use]:
    if isinstance(value, str):
        for use in _interpolations(value, p, "child_config", False):
            if use.source == "config":
                yield use
    elif isinstance(value, dict):
        for key, sub in value.items():
            yield from _walk_strings(sub, child(p, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from _walk_strings(sub, child(p, i))


def _split_ref(value: Any) -> tuple[str, str]:
    text = str(value) if isinstance(value, str) else ""
    ref, _, rest = text.partition(".")
    return ref, rest


def _binding_parts(binding: Any) -> tuple[tuple[str, str], tuple[str, str]] | None:
    if (
        not isinstance(binding, dict)
        or not isinstance(binding.get("to"), str)
        or not isinstance(binding.get("from"), str)
    ):
        return None
    to_ref, slot = _split_ref(binding["to"])
    from_ref, capability = _split_ref(binding["from"])
    slot = str(binding.get("slot", slot) or "")
    capability = str(binding.get("capability", capability) or "")
    return (to_ref, slot), (from_ref, capability)


class _Loader:
    """Loads and caches manifests (parse errors are reported once, by the file's own check)."""

    def __init__(self) -> None:
        self._cache: dict[Path, tuple[Manifest | None, str]] = {}

    def load(self, path: Path) -> tuple[Manifest | None, str]:
        key = path.resolve()
        if key not in self._cache:
            self._cache[key] = _parse(path)
        return self._cache[key]


def _parse(path: Path) -> tuple[Manifest | None, str]:
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
    match = _VERSION.match(version_text) if isinstance(version_text, str) else None
    version = (int(match[1]), int(match[2]), int(match[3])) if match else None
    return Manifest(path, data, version), ""


def check_manifests(files: Iterable[Path]) -> list[Finding]:
    loader = _Loader()
    findings: list[Finding] = []
    for path in files:
        manifest, error = loader.load(path)
        if manifest is None:
            rule = "duplicate_key" if "Duplicate key" in error else "parse"
            findings.append(Finding(path="$", rule=rule, message=error, file=str(path)))
            continue
        findings.extend(_Checker(manifest, loader).run())
    return findings


def deny_lints(findings: list[Finding], deny: Iterable[str]) -> list[Finding]:
    """``-D warnings`` makes every warning an error; ``-D <lint>`` only that lint."""
    names = {d.removeprefix("manifest::") for d in deny}
    unknown = names - LINTS - {"warnings"}
    if unknown:
        raise ValueError(
            f"-D: unknown lint(s) {sorted(unknown)}; use 'warnings' or one of {sorted(LINTS)}"
        )
    return [
        f.model_copy(update={"severity": "error"})
        if f.severity == "warning" and ("warnings" in names or f.rule in names)
        else f
        for f in findings
    ]
