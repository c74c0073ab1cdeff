"""A finding: one violated rule at one JSON path, shared by the readiness and manifest checkers.

Checkers collect every finding instead of stopping at the first, so an operator fixes a document
in one pass.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["error", "warning"]
_BARE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    rule: str
    message: str
    severity: Severity = "error"
    file: str | None = None

    def render(self) -> str:
        where = f"{self.file}: {self.path}" if self.file else self.path
        return f"{self.severity}: {where}: [{self.rule}] {self.message}"


def json_path(*parts: str | int) -> str:
    """``$.a.b[0]["odd key"]`` for the given keys and indexes."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _BARE_KEY.match(part):
            out += f".{part}"
        else:
            out += '["' + part.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return out


def child(path: str, *parts: str | int) -> str:
    """Extend an existing path (``json_path`` output) with more parts."""
    return path + json_path(*parts)[1:]


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


class EvidenceCollector:
    """Collects findings for a JSON document; ``keys`` checks approved and required keys."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, path: str, rule: str, message: str) -> None:
        self.findings.append(Finding(path=path, rule=rule, message=message))

    def keys(
        self, obj: dict[str, Any], path: str, allowed: frozenset[str], required: frozenset[str]
    ) -> None:
        for key in sorted(set(obj) - allowed):
            self.add(child(path, key), "unknown_key", f"{key!r} is not an approved key here")
        for key in sorted(required - set(obj)):
            self.add(child(path, key), "missing_key", f"{key!r} is required")
