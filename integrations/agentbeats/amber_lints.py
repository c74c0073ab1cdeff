"""Amber's lints (``manifest::*`` codes): warnings that ``-D warnings`` (or ``-D <code>``) turns
into errors. The rules follow Amber v0.4 (``compiler/src/lint.rs`` and the scenario-level
suppressions in ``compiler/src/lib.rs``)."""

from __future__ import annotations

from typing import Any

from integrations.agentbeats.amber_manifest import AmberManifestCheck, Use, as_obj, binding_parts
from integrations.agentbeats.amber_schema import property_names
from leaderboard.findings import child, json_path


def used_slots(c: AmberManifestCheck, uses: list[Use]) -> set[str]:
    """The slots the program reads (interpolations, ``when``, mounts)."""
    slots = c.manifest.section("slots")
    used: set[str] = set()
    for use in uses:
        if use.source == "slots":
            if use.dotted:
                used.add(use.dotted.partition(".")[0])
            else:
                used |= set(slots)
    for mount in c.manifest.section("program").get("mounts") or []:
        if isinstance(mount, dict) and str(mount.get("from", "")).startswith("slots."):
            used.add(str(mount["from"]).partition(".")[2])
    return used


def check_lints(c: AmberManifestCheck, uses: list[Use]) -> None:
    data = c.manifest.data
    slots, provides = c.manifest.section("slots"), c.manifest.section("provides")
    program_slots = used_slots(c, uses)
    # A root with a program gets every slot of its own bound weak from outside by Amber's linker.
    root_program = c.context.root and "program" in data
    exported: set[str] = set()
    for target in c.manifest.section("exports").values():
        kind, dot, rest = str(target).partition(".")
        exported.add(rest if dot and kind in ("provides", "slots", "self") else str(target))
    bound_sources: set[str] = set()
    for binding in data.get("bindings") or []:
        parsed = binding_parts(binding)
        if parsed is not None and parsed[1][0] in ("slots", "provides", "self"):
            bound_sources.add(parsed[1][1])
    for name, decl in slots.items():
        if isinstance(decl, dict) and decl.get("optional"):
            continue  # an optional slot may stay unused
        if c.context.linked and (name in c.context.weak_slots or root_program):
            continue  # bound weak (by the parent, or from outside for a root with a program)
        if name not in program_slots | exported | bound_sources:
            c.add(json_path("slots", name), "manifest::unused_slot", f"slot {name!r} is never used")
    for name in provides:
        if name not in exported | bound_sources:
            c.add(
                json_path("provides", name),
                "manifest::unused_provide",
                f"provide {name!r} is never exported or bound",
            )
    external = set(slots) if root_program else c.context.external_slots
    externally_rooted = c.context.linked and bool(program_slots & external)
    if (
        "program" in data
        and not externally_rooted
        and not any(n in exported | bound_sources for n in provides)
    ):
        c.add(
            json_path("program"),
            "manifest::unused_program",
            "the program serves no exported or bound provide",
        )
    _unused_use(c)
    _duplicate_resolvers(c)
    _unused_config(c, uses)


def _unused_use(c: AmberManifestCheck) -> None:
    overlays = c.manifest.data.get("overlays")
    referenced = {
        str(o).removeprefix("#").partition(".")[0]
        for o in (overlays if isinstance(overlays, list) else [])
    }
    for name in c.manifest.section("use"):
        if name not in referenced:
            c.add(
                json_path("use", name),
                "manifest::unused_use",
                f"use #{name} is never referenced from overlays",
            )


def _duplicate_resolvers(c: AmberManifestCheck) -> None:
    for env_name, decl in c.manifest.section("environments").items():
        resolvers = as_obj(decl).get("resolvers")
        seen: set[str] = set()
        for i, resolver in enumerate(resolvers if isinstance(resolvers, list) else []):
            if str(resolver) in seen:
                c.add(
                    child(json_path("environments", env_name, "resolvers"), i),
                    "manifest::duplicate_environment_resolver",
                    f"environment {env_name!r} declares resolver {resolver!r} more than once",
                )
            seen.add(str(resolver))


def _unused_config(c: AmberManifestCheck, uses: list[Use]) -> None:
    data = c.manifest.data
    program = c.manifest.section("program")
    schema = data.get("config_schema")
    used_config = {
        name
        for u in uses
        if u.source == "config" and u.dotted
        for name in [_used_property(schema, u.dotted)]
        if name
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
            c.add(
                json_path("config_schema", "properties", name),
                "manifest::unused_config",
                f"config {name!r} is never referenced",
            )


def _used_property(schema: Any, dotted: str) -> str | None:
    """The top-level property a use of ``config.<dotted>`` marks used. A use marks a schema leaf
    only at or above it: ``jobs_dir.sub`` does not use the string ``jobs_dir``."""
    name, dot, _ = dotted.partition(".")
    if not dot:
        return name
    props = schema.get("properties") if isinstance(schema, dict) else None
    sub = props.get(name) if isinstance(props, dict) else None
    nested = sub.get("properties") if isinstance(sub, dict) else None
    return name if isinstance(nested, dict) and nested else None
