"""The one reader of a trial's JSON-lines files (trajectories, model calls)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def json_lines(path: Path, *, strict: bool = True) -> Iterator[dict[str, Any]]:
    """The JSON objects of a ``.jsonl`` file (none when it is missing, or not a regular file: a
    folder or a pipe in its place is not read); a line that is not JSON (or nested too deeply to
    parse) names the file and line (``strict``), or is passed over (a file still being
    written)."""
    if not path.is_file():
        return
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            if strict:
                raise ValueError(f"{path}:{n}: not a JSON line") from None
            continue
        if isinstance(value, dict):
            yield value
