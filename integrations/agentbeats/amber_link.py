"""Link-time checks against local child manifests: what the Amber linker verifies once it has
loaded the children (remote children are the linker's business and are skipped).
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from referencing.exceptions import Unresolvable

from integrations.agentbeats.amber_manifest import (
    AmberManifest,
    AmberManifestCheck,
    LintContext,
    as_list,
    as_obj,
    binding_parts,
)
from leaderboard.findings import child, json_path


def check_children(c: AmberManifestCheck, features: set[str]) -> None:
    bound: dict[str, set[str]] = {}
    for binding in c.manifest.data.get("bindings") or []:
        parsed = binding_parts(binding)
        if parsed is not None and parsed[0][0].startswith("#"):
            if _needs_weak(c, binding, parsed[1]):
                continue  # refused (external_slot_requires_weak): the child slot stays unbound
            bound.setdefault(parsed[0][0][1:], set()).add(parsed[0][1])
    for name, decl in c.manifest.section("components").items():
        p = json_path("components", name)
        config = decl.get("config") if isinstance(decl, dict) else None
        for where, text in _strings(config, child(p, "config")):
            if "${slots." in text.replace(" ", ""):
                c.add(
                    where,
                    "linker::invalid_config",
                    "slot interpolation is not allowed in component config templates",
                )
        ref = decl.get("manifest") if isinstance(decl, dict) and "manifest" in decl else decl
        url = ref.get("url") if isinstance(ref, dict) else ref
        if not isinstance(url, str):
            c.add(p, "child_manifest", "a child needs a manifest reference")
            continue
        if "://" in url and not url.startswith("file://"):
            continue  # remote: the linker fetches it; we do not
        child_path = (c.manifest.path.parent / url.removeprefix("file://")).resolve()
        manifest, error = c.loader.load(child_path)
        if manifest is None:
            c.add(p, "child_manifest", f"cannot load {url}: {error}")
            continue
        missing = set(map(str, manifest.data.get("experimental_features") or [])) - features
        if missing:
            c.add(
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
                c.add(p, "linker::unbound_slot", f"required slot {name}.{slot} is not bound")
        config = decl.get("config") if isinstance(decl, dict) else None
        _child_config(c, manifest, config, child(p, "config"))
    _binding_kinds(c)
    if c.context.root:
        _root_slots(c)


def _root_slots(c: AmberManifestCheck) -> None:
    """The linker on the root: its slots are filled from outside (external), so a binding that
    carries one into a child must be weak; a required root slot that neither the root's program,
    a binding nor an export uses is never filled."""
    slots = c.manifest.section("slots")
    sources: set[str] = set()
    for i, binding in enumerate(c.manifest.data.get("bindings") or []):
        parsed = binding_parts(binding)
        if parsed is None or parsed[1][0] not in ("slots", "self") or parsed[1][1] not in slots:
            continue
        (to_ref, slot), (_, name) = parsed
        sources.add(name)
        if _needs_weak(c, binding, parsed[1]):
            c.add(
                json_path("bindings", i),
                "linker::external_slot_requires_weak",
                f"binding into {to_ref}.{slot} must be weak (weak: true): it depends on the "
                f"external slot {name!r}",
            )
    for export, target in c.manifest.section("exports").items():
        text = str(target)
        if text.startswith("#") and "." in text:
            ref, _, name = text.partition(".")
            source = _child_manifest(c, ref)
            if source is not None and name not in source.section("exports"):
                c.add(
                    json_path("exports", export),
                    "linker::invalid_export",
                    f"{text}: {ref} exports no {name!r}",
                )
            continue
        kind, dot, rest = text.partition(".")
        name = rest if dot and kind in ("slots", "self") else str(target)
        if (not dot or kind in ("slots", "self")) and name in slots:
            sources.add(name)
            c.add(
                json_path("exports", export),
                "linker::invalid_export",
                f"export {export!r} resolves to the root's external slot {name!r}, which cannot "
                "be exported",
            )
    if "program" in c.manifest.data:
        return  # the root's program declares every root slot external
    for name, decl in slots.items():
        if not as_obj(decl).get("optional") and name not in sources:
            c.add(
                json_path("slots", name),
                "linker::unbound_slot",
                f"slot {name!r} of the root component is never bound (non-optional slots must "
                "be filled)",
            )


def _needs_weak(c: AmberManifestCheck, binding: Any, source: tuple[str, str]) -> bool:
    """A root binding that carries one of the root's own (external) non-storage slots into a
    child without ``weak: true``."""
    if not c.context.root or source[0] not in ("slots", "self"):
        return False
    decl = c.manifest.section("slots").get(source[1])
    if decl is None or as_obj(decl).get("kind") == "storage":
        return False
    return not (isinstance(binding, dict) and binding.get("weak") is True)


def _strings(value: Any, p: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(p, value)]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _strings(v, child(p, k))]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _strings(v, child(p, i))]
    return []


def child_contexts(c: AmberManifestCheck) -> list[tuple[AmberManifest, LintContext]]:
    """The local children of ``c``'s manifest, each with the context its lints run in."""
    weak: dict[str, set[str]] = {}
    external: dict[str, set[str]] = {}
    for binding in c.manifest.data.get("bindings") or []:
        parsed = binding_parts(binding)
        if parsed is None or not parsed[0][0].startswith("#"):
            continue
        (to_ref, slot), (from_ref, _) = parsed
        if isinstance(binding, dict) and binding.get("weak") is True:
            weak.setdefault(to_ref[1:], set()).add(slot)
        if c.context.root and from_ref == "slots":
            external.setdefault(to_ref[1:], set()).add(slot)
    out = []
    for name in c.manifest.section("components"):
        manifest = _child_manifest(c, f"#{name}")
        if manifest is not None:
            context = LintContext(
                root=False,
                weak_slots=frozenset(weak.get(name, ())),
                external_slots=frozenset(external.get(name, ())),
                linked=c.context.linked,
            )
            out.append((manifest, context))
    return out


def _child_config(c: AmberManifestCheck, manifest: AmberManifest, config: Any, p: str) -> None:
    schema = manifest.data.get("config_schema")
    if not isinstance(schema, dict):
        return
    given = config if isinstance(config, dict) else {}
    props = as_obj(schema.get("properties"))
    if schema.get("additionalProperties") is False:
        for key in sorted(set(given) - set(props)):
            c.add(child(p, key), "child_config", f"{key!r} is not in the child's config_schema")
    for key in as_list(schema.get("required")):
        if key not in given and not (isinstance(props.get(key), dict) and "default" in props[key]):
            c.add(p, "child_config", f"required config {key!r} is missing")
    _child_config_types(c, schema, given, p)


def _literal(value: Any) -> bool:
    """A value with no ``${...}`` anywhere: known before run time, so its type can be checked."""
    if isinstance(value, str):
        return "${" not in value
    if isinstance(value, dict):
        return all(_literal(v) for v in value.values())
    if isinstance(value, list):
        return all(_literal(v) for v in value)
    return True


def _child_config_types(
    c: AmberManifestCheck, schema: dict[str, Any], given: dict[str, Any], p: str
) -> None:
    """Amber validates a child's config against its schema (``linker::invalid_config``); an
    interpolated value is known only at run time, so only literal values are checked here."""
    literal = {k: v for k, v in given.items() if _literal(v)}
    relaxed = {k: v for k, v in schema.items() if k != "required"}
    try:
        validator = Draft202012Validator(relaxed)
        errors = list(validator.iter_errors(literal))
    except (Unresolvable, RecursionError):
        return  # a broken schema is the child's own config_schema error
    for error in errors:
        where = child(p, str(error.path[0])) if error.path else p
        c.add(where, "child_config", f"invalid config: {error.message}")


def _binding_kinds(c: AmberManifestCheck) -> None:
    for i, binding in enumerate(c.manifest.data.get("bindings") or []):
        parsed = binding_parts(binding)
        if parsed is None:
            continue
        (to_ref, slot), (from_ref, capability) = parsed
        target = _child_manifest(c, to_ref)
        p = json_path("bindings", i)
        slot_kind = None
        if target is not None:
            decl = target.section("slots").get(slot)
            if not isinstance(decl, dict):
                c.add(
                    child(p, "to"),
                    "binding_slot",
                    f"{to_ref}.{slot}: the child declares no slot {slot!r}",
                )
                continue
            slot_kind = decl.get("kind")
        source_kind = _source_kind(c, from_ref, capability, child(p, "from"))
        if slot_kind and source_kind and slot_kind != source_kind:
            c.add(
                p,
                "binding_kind",
                f"{to_ref}.{slot} is {slot_kind}, but {from_ref}.{capability} is {source_kind}",
            )


def _source_kind(c: AmberManifestCheck, ref: str, capability: str, p: str) -> str | None:
    if ref == "framework":
        return "docker" if capability == "docker" else None
    if ref in ("slots", "provides", "resources"):
        decl = c.manifest.section(ref).get(capability)
        return decl.get("kind") if isinstance(decl, dict) else None
    source = _child_manifest(c, ref) if ref.startswith("#") else None
    if source is None:
        return None
    target = source.section("exports").get(capability)
    if target is None:
        c.add(p, "binding_source", f"{ref} exports no {capability!r}")
        return None
    kind, dot, rest = str(target).partition(".")
    name = rest if dot and kind in ("provides", "slots", "self") else str(target)
    decl = source.section("provides").get(name) or source.section("slots").get(name)
    return decl.get("kind") if isinstance(decl, dict) else None


def _child_manifest(c: AmberManifestCheck, ref: str) -> AmberManifest | None:
    decl = c.manifest.section("components").get(ref[1:]) if ref.startswith("#") else None
    ref_value = decl.get("manifest") if isinstance(decl, dict) and "manifest" in decl else decl
    url = ref_value.get("url") if isinstance(ref_value, dict) else ref_value
    if not isinstance(url, str) or ("://" in url and not url.startswith("file://")):
        return None
    return c.loader.load((c.manifest.path.parent / url.removeprefix("file://")).resolve())[0]
