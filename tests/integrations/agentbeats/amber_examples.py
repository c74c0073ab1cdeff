"""The six example manifests as the real ``amber check`` can read them offline, and the real
Amber CLI where one is installed (shared by the mutation and ``manifests check`` tests)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import json5

from tests.support import PUBLISHED_DATA, REPO_ROOT

EXAMPLES = REPO_ROOT / "integrations" / "agentbeats"
GATEWAY = PUBLISHED_DATA / "amber" / "agentbeats-gateway__amber-manifest.json5"
NO_AMBER = (
    "no Amber CLI: set $AMBER or put amber on PATH (build RDI-Foundation/amber v0.4: "
    "cargo build --release -p amber-cli)"
)


def local_examples(folder: Path) -> list[Path]:
    """The six examples written to ``folder``, the scenarios' remote gateway replaced by its
    published copy as the local child ./gateway.json5 (so no check reaches the network)."""
    written = []
    for path in sorted(EXAMPLES.glob("*.json5")):
        doc = json5.loads(path.read_text())
        gateway = doc.get("components", {}).get("gateway")
        if isinstance(gateway, dict) and str(gateway.get("manifest", "")).startswith("https://"):
            gateway["manifest"] = "./gateway.json5"
        target = folder / path.name
        target.write_text(json.dumps(doc, indent=2))
        written.append(target)
    shutil.copy(GATEWAY, folder / "gateway.json5")
    return written


def apply_op(doc: Any, op: list[Any]) -> None:
    """One mutation op: ["set", path, value] | ["del", path] | ["append", path, value] |
    ["pop", path, index]."""
    kind, path = op[0], op[1]
    node = doc
    for key in path[:-1]:
        node = node[key]
    last = path[-1]
    if kind == "set":
        node[last] = op[2]
    elif kind == "del":
        del node[last]
    elif kind == "append":
        node[last].append(op[2])
    elif kind == "pop":
        node[last].pop(op[2])
    else:
        raise ValueError(f"unknown op {kind!r}")


def real_amber() -> str | None:
    """The installed Amber CLI: ``$AMBER`` if it is executable, else ``amber`` on PATH."""
    named = os.environ.get("AMBER")
    return named if named and os.access(named, os.X_OK) else shutil.which("amber")
