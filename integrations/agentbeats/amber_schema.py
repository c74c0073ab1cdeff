"""Amber's ``config_schema`` profile, and resolving ``config.<path>`` against a schema.

Amber accepts a deterministic subset of JSON Schema: an object root, snake_case property names
without ``__`` (the separator of ``AMBER_CONFIG_<A>__<B>`` variables), boolean
``additionalProperties`` and none of the combinators.
"""

from __future__ import annotations

import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from leaderboard.findings import Finding, child

PROPERTY_NAME = re.compile(r"^(?!.*__)[a-z][a-z0-9_]*$")
UNSUPPORTED_KEYWORDS = frozenset(
    {
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "propertyNames",
        "dependentSchemas",
        "dependentRequired",
        "unevaluatedProperties",
        "unevaluatedItems",
        "$dynamicRef",
        "$recursiveRef",
    }
)
_DRAFT_2020_12 = re.compile(r"^https?://json-schema\.org/draft/2020-12/schema#?$")


def _types(node: dict[str, Any]) -> list[str]:
    value = node.get("type")
    if isinstance(value, str):
        return [value]
    return [t for t in value if isinstance(t, str)] if isinstance(value, list) else []


def check_config_schema(schema: Any, path: str, file: str) -> list[Finding]:
    """Findings (rule ``config_schema``) for everything outside Amber's schema profile."""
    out: list[Finding] = []

    def add(p: str, message: str) -> None:
        out.append(Finding(path=p, rule="config_schema", message=message, file=file))

    if not isinstance(schema, dict):
        add(path, "config_schema must be an object")
        return out
    if "object" not in _types(schema):
        add(child(path, "type"), 'the root schema must be object-shaped (type: "object")')

    def keyword_type(node: dict[str, Any], p: str, key: str, kind: type, name: str) -> bool:
        if key in node and not isinstance(node[key], kind):
            add(child(p, key), f"{key} must be {name}")
            return False
        return True

    def walk(node: Any, p: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, child(p, i))
            return
        if not isinstance(node, dict):
            return
        if "$schema" in node and not (
            isinstance(node["$schema"], str) and _DRAFT_2020_12.match(node["$schema"])
        ):
            add(child(p, "$schema"), "only JSON Schema draft 2020-12 is supported")
        for key, kind, name in (
            ("properties", dict, "an object"),
            ("required", list, "an array"),
            ("$defs", dict, "an object"),
            ("definitions", dict, "an object"),
            ("allOf", list, "an array"),
            ("prefixItems", list, "an array"),
        ):
            keyword_type(node, p, key, kind, name)
        for key in sorted(UNSUPPORTED_KEYWORDS & set(node)):
            add(child(p, key), f"{key!r} is not supported by Amber's config_schema profile")
        if "additionalProperties" in node and not isinstance(node["additionalProperties"], bool):
            add(child(p, "additionalProperties"), "additionalProperties must be a boolean")
        if "secret" in node and not isinstance(node["secret"], bool):
            add(child(p, "secret"), "secret must be a boolean")
        ref = node.get("$ref")
        if ref is not None and not (isinstance(ref, str) and (ref == "#" or ref.startswith("#/"))):
            add(child(p, "$ref"), "$ref must be a local JSON pointer (# or #/...)")
        props = node.get("properties")
        if ("properties" in node or "required" in node) and "object" not in _types(node):
            add(p, 'a schema with properties or required must have type "object"')
        if isinstance(props, dict):
            for name, sub in props.items():
                if not PROPERTY_NAME.match(name):
                    add(
                        child(p, "properties", name),
                        f"property name {name!r} must match {PROPERTY_NAME.pattern}",
                    )
                walk(sub, child(p, "properties", name))
        required = node.get("required")
        for i, name in enumerate(required if isinstance(required, list) else []):
            if not (isinstance(name, str) and PROPERTY_NAME.match(name)):
                add(
                    child(p, "required", i), f"required entry {name!r} is not a valid property name"
                )
        for key in ("items", "contains", "prefixItems", "$defs", "definitions", "allOf"):
            if key in node:
                sub = node[key]
                if isinstance(sub, dict) and key in ("$defs", "definitions"):
                    for name, d in sub.items():
                        walk(d, child(p, key, name))
                else:
                    walk(sub, child(p, key))

    walk(schema, path)
    if not out:
        out += _meta_schema(schema, path, file) + [
            Finding(path=path, rule="config_schema", message=problem, file=file)
            for problem in ref_problems(schema)
        ]
    return out


def _meta_schema(schema: dict[str, Any], path: str, file: str) -> list[Finding]:
    """Amber builds a JSON Schema validator from the schema, which checks it against the draft
    2020-12 meta-schema (``"type": "strng"``, ``"enum": "x"`` and the like are errors)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = path
        for part in exc.path:
            where = child(where, part if isinstance(part, int) else str(part))
        return [Finding(path=where, rule="config_schema", message=exc.message, file=file)]
    return []


def resolve_config_path(schema: Any, dotted: str) -> tuple[bool, bool]:
    """(resolves, optional) for ``a.b.c`` against ``schema``.

    A segment is optional when it is neither required nor defaulted; an object without declared
    properties (or with ``additionalProperties: true``) accepts any deeper path. A path whose own
    schema has a default is never optional: Amber's defaults create the objects above it.
    """
    node: Any = schema
    optional = False
    for segment in dotted.split("."):
        if not isinstance(node, dict):
            return False, optional
        props = node.get("properties")
        if isinstance(props, dict) and segment in props:
            required = node.get("required")
            required = required if isinstance(required, list) else []
            sub = props[segment]
            if segment not in required and not (isinstance(sub, dict) and "default" in sub):
                optional = True
            node = sub
            continue
        open_object = node.get("additionalProperties") is True or not isinstance(props, dict)
        return open_object and "object" in _types(node), True
    return True, optional and not (isinstance(node, dict) and "default" in node)


def property_names(schema: Any) -> list[str]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return list(props) if isinstance(props, dict) else []


def _pointer(schema: Any, ref: str) -> Any:
    node: Any = schema
    for raw in ref.removeprefix("#").split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise KeyError(ref)
    return node


def ref_problems(schema: Any) -> list[str]:
    """Local ``$ref``s Amber v0.4 refuses: one that resolves to nothing (its JSON Schema
    validator cannot be built: ``manifest::invalid_config_schema``), and one that reaches itself
    through the schema (its config analysis, which collects every property's defaults, fails on
    a cyclic ``$ref``). Non-local refs are refused by the profile walk."""
    problems: set[str] = set()

    def walk(node: Any, stack: tuple[str, ...]) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, stack)
            return
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and (ref == "#" or ref.startswith("#/")):
            if ref in stack:
                problems.add(f"$ref {ref} is cyclic (Amber cannot collect its defaults)")
            else:
                try:
                    target = _pointer(schema, ref)
                except KeyError:
                    problems.add(f"$ref {ref} resolves to nothing")
                else:
                    walk(target, (*stack, ref))
        props = node.get("properties")
        if isinstance(props, dict):
            for sub in props.values():
                walk(sub, stack)
        for key in ("items", "prefixItems", "allOf"):
            if key in node:
                walk(node[key], stack)

    walk(schema, ())
    return sorted(problems)
