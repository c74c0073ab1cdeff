"""Static checks of Amber component manifests: what ``amber check`` verifies, minus the linker's
network fetches.

Parse-time rules (errors) live here; the linker's rules we can apply to local child manifests
are in ``amber_link``, Amber's lints (warnings) in ``amber_lints``. Every finding names the file,
the JSON path and the rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from integrations.agentbeats.amber_link import check_children, child_contexts
from integrations.agentbeats.amber_lints import check_lints
from integrations.agentbeats.amber_manifest import (
    CAPABILITY_KINDS,
    DENYABLE_LINTS,
    EXPERIMENTAL_FEATURES,
    FATAL_RULES,
    FRAMEWORK_CAPABILITIES,
    LIST_SECTIONS,
    OBJECT_SECTIONS,
    RULES,
    SLOT_FIELDS,
    TOP_LEVEL_KEYS,
    VERSION_GATES,
    VERSION_PATTERN,
    AmberManifest,
    AmberManifestCheck,
    LintContext,
    Loader,
    Use,
    as_list,
    as_obj,
    binding_parts,
    interpolations,
    walk_strings,
)
from integrations.agentbeats.amber_schema import check_config_schema, resolve_config_path
from leaderboard.findings import Finding, child, json_path

__all__ = ["RULES", "check_manifests", "deny_lints"]


class _Checker(AmberManifestCheck):
    """Parse-time rules for one manifest, then the link checks and the lints."""

    # --- the whole manifest ---------------------------------------------------------------
    def run(self) -> list[Finding]:
        data = self.manifest.data
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                self.add(json_path(key), "unknown_top_level_key", f"{key!r} is not a manifest key")
        self._version()
        self._section_types()
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
        check_children(self, features)
        check_lints(self, uses)
        return self.findings

    def _section_types(self) -> None:
        data = self.manifest.data
        for key in OBJECT_SECTIONS:
            if key in data and not isinstance(data[key], dict):
                self.add(json_path(key), "section_type", f"{key} must be an object")
        for key in LIST_SECTIONS:
            if key in data and not isinstance(data[key], list):
                self.add(json_path(key), "section_type", f"{key} must be a list")

    def _gate(self, feature: str, path: str) -> None:
        need = VERSION_GATES[feature]
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
        elif not isinstance(value, str) or not VERSION_PATTERN.match(value):
            self.add(json_path("manifest_version"), "manifest_version", f"{value!r} is not SemVer")
        elif not (0, 1, 0) <= self.manifest.version < (1, 0, 0):  # type: ignore[operator]
            self.add(
                json_path("manifest_version"),
                "manifest_version",
                f"{value} is outside >=0.1.0,<1.0.0",
            )
        # Amber gates only a non-empty section: `overlays: []` is fine under 0.3.0.
        uses, overlays = self.manifest.data.get("use"), self.manifest.data.get("overlays")
        if uses:
            self._gate("use", json_path("use"))
        if overlays:
            self._gate("overlays", json_path("overlays", 0) if isinstance(overlays, list) else "$")

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
        network = as_obj(program.get("network"))
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
        elif "image" in program and program["entrypoint"] in ([], ""):
            self.add(child(p, "entrypoint"), "program_shape", "the entrypoint is empty")

    # --- interpolation and references -----------------------------------------------------
    def _uses(self) -> Iterator[Use]:
        program = self.manifest.section("program")
        base = json_path("program")
        if isinstance(program.get("image"), str):
            yield from interpolations(program["image"], child(base, "image"), "image", False)
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
        env = as_obj(program.get("env"))
        for name, value in env.items():
            yield from self._templated(value, child(base, "env", name), "env")
        for section in ("components", "use"):
            for name, decl in self.manifest.section(section).items():
                if isinstance(decl, dict) and "config" in decl:
                    yield from walk_strings(decl["config"], json_path(section, name, "config"))

    def _templated(self, value: Any, p: str, where: str) -> Iterator[Use]:
        if isinstance(value, str):
            yield from interpolations(value, p, where, False)
            return
        if not isinstance(value, dict):
            self.add(p, "program_shape", "must be a string or a {when|each, ...} object")
            return
        if "when" in value:
            self._gate("when", child(p, "when"))
            when = value["when"]
            source, _, dotted = str(when).partition(".")
            yield Use(child(p, "when"), source, dotted, "when", True)
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
                    yield from interpolations(text, q, where, "when" in value or "each" in value)

    def _check_uses(self, uses: list[Use]) -> None:
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
                        "manifest::optional_env_config"
                        if use.where == "env"
                        else "manifest::optional_command_config"
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
                    in_env = use.path.startswith(json_path("program", "env"))
                    self.add(
                        use.path,
                        "manifest::required_slot_when_env"
                        if in_env
                        else "manifest::required_slot_when",
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
        mounts = as_list(program.get("mounts"))
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
                            "manifest::optional_mount_config",
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
                    "manifest::deprecated_export_self_target",
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
            parsed = binding_parts(binding)
            if parsed is None:
                self.add(
                    p,
                    "binding",
                    "a binding is {to: '#child.slot', from: ...} (or the explicit form)",
                )
                continue
            if "weak" in binding and not isinstance(binding["weak"], bool):
                self.add(child(p, "weak"), "binding", "weak must be true or false")
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
                "manifest::deprecated_binding_self_source",
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


def check_manifests(files: Iterable[Path]) -> list[Finding]:
    """Each file is checked as the root of ``amber check``: its own rules, then its local children
    (recursively) in the context their parent gives them. A finding reported twice (a child listed
    on its own and as a child) is kept once."""
    loader = Loader()
    findings: list[Finding] = []
    seen: set[tuple[str | None, str, str, str]] = set()
    for path in files:
        manifest, error = loader.load(path)
        if manifest is None:
            rule = "duplicate_key" if "Duplicate key" in error else "parse"
            found = [Finding(path="$", rule=rule, message=error, file=str(path))]
        else:
            found = _check_tree(manifest, loader, LintContext(), ())
            if any(f.rule in FATAL_RULES for f in found):
                # Amber stops at a manifest it cannot parse: no lint is printed for this root.
                found = [f for f in found if f.severity == "error"]
            elif any(f.severity == "error" for f in found):
                # Linking failed: Amber lints the manifest tree without the scenario's
                # suppressions (weak-bound slots, externally rooted programs).
                found = _check_tree(manifest, loader, LintContext(linked=False), ())
        for finding in found:
            key = (finding.file, finding.path, finding.rule, finding.message)
            if key not in seen:
                seen.add(key)
                findings.append(finding)
    return findings


def _check_tree(
    manifest: AmberManifest, loader: Loader, context: LintContext, chain: tuple[Path, ...]
) -> list[Finding]:
    checker = _Checker(manifest, loader, context)
    findings = checker.run()
    here = manifest.path.resolve()
    for child_manifest, child_context in child_contexts(checker):
        if child_manifest.path.resolve() not in (*chain, here):  # a cycle is loaded once
            findings += _check_tree(child_manifest, loader, child_context, (*chain, here))
    return findings


def lint_code(name: str) -> str:
    """``unused_slot`` or ``manifest::unused_slot`` -> ``manifest::unused_slot``."""
    return name if "::" in name else f"manifest::{name}"


def deny_lints(findings: list[Finding], deny: Iterable[str]) -> list[Finding]:
    """``-D warnings`` makes every warning an error; ``-D <code>`` (Amber's lint code, e.g.
    ``manifest::unused_slot``; the bare name works too) only that lint."""
    names = {d if d == "warnings" else lint_code(d) for d in deny}
    unknown = names - DENYABLE_LINTS - {"warnings"}
    if unknown:
        raise ValueError(
            f"-D: unknown lint(s) {sorted(unknown)}; use 'warnings' or one of "
            f"{sorted(DENYABLE_LINTS)}"
        )
    return [
        f.model_copy(update={"severity": "error"})
        if f.severity == "warning" and ("warnings" in names or f.rule in names)
        else f
        for f in findings
    ]
