"""Amber's lints: warnings that ``-D warnings`` (or ``-D <lint>``) turns into errors."""

from __future__ import annotations

from integrations.agentbeats.amber_manifest import AmberManifestCheck, Use, binding_parts
from integrations.agentbeats.amber_schema import property_names
from leaderboard.findings import json_path


def check_lints(c: AmberManifestCheck, uses: list[Use]) -> None:
    data = c.manifest.data
    slots, provides = c.manifest.section("slots"), c.manifest.section("provides")
    used_slots: set[str] = set()
    for use in uses:
        if use.source == "slots":
            if use.dotted:
                used_slots.add(use.dotted.partition(".")[0])
            else:
                used_slots |= set(slots)
    program = c.manifest.section("program")
    for mount in program.get("mounts") or []:
        if isinstance(mount, dict) and str(mount.get("from", "")).startswith("slots."):
            used_slots.add(str(mount["from"]).partition(".")[2])
    exported: set[str] = set()
    for target in c.manifest.section("exports").values():
        kind, dot, rest = str(target).partition(".")
        exported.add(rest if dot and kind in ("provides", "slots", "self") else str(target))
    bound_sources: set[str] = set()
    for binding in data.get("bindings") or []:
        parsed = binding_parts(binding)
        if parsed is not None and parsed[1][0] in ("slots", "provides", "self"):
            bound_sources.add(parsed[1][1])
    for name in slots:
        if name not in used_slots | exported | bound_sources:
            c.add(json_path("slots", name), "unused_slot", f"slot {name!r} is never used")
    for name in provides:
        if name not in exported | bound_sources:
            c.add(
                json_path("provides", name),
                "unused_provide",
                f"provide {name!r} is never exported or bound",
            )
    if "program" in data and not any(n in exported | bound_sources for n in provides):
        c.add(
            json_path("program"),
            "unused_program",
            "the program serves no exported or bound provide",
        )
    used_config = {u.dotted.partition(".")[0] for u in uses if u.source == "config" and u.dotted}
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
                "unused_config",
                f"config {name!r} is never referenced",
            )
