"""How to run our command again, as the user's shell will find it: the prefix of every ``next:``
hint, so a hint runs as written.

After ``make sync`` the console script sits in ``.venv/bin``, which is not on ``PATH``: a bare
``skillsbench-agentbeats`` would be "command not found". So the prefix follows how this process
was started: under ``uv run`` it is ``uv run skillsbench-agentbeats`` (with uv's own path when uv
is not on ``PATH``, e.g. the copy ``make`` fetched, ``.tools/bin/uv``); a console script on
``PATH`` is its bare name, one off ``PATH`` its path; ``python -m skillsbench_agentbeats`` is
that again, with the interpreter's path unless it is the one ``PATH`` finds. Paths inside the
current folder are shown relative to it. A leaf (stdlib only): every component's hints use it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

PROGRAM = "skillsbench-agentbeats"
MODULE = "skillsbench_agentbeats"


def command_prefix(
    environ: Mapping[str, str] | None = None,
    argv0: str | None = None,
    executable: str | None = None,
) -> str:
    """The shell words that run ``skillsbench-agentbeats`` from the current folder."""
    env = os.environ if environ is None else environ
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    path = env.get("PATH", os.defpath)
    if "UV_RUN_RECURSION_DEPTH" in env:  # set by `uv run` for what it starts
        uv = env.get("UV", "")
        shown = "uv" if not uv or _found_as("uv", uv, path) else _shown(uv)
        return f"{shown} run {PROGRAM}"
    if Path(argv0).name == PROGRAM:  # the console script
        return PROGRAM if _found_as(PROGRAM, argv0, path) else _shown(argv0)
    if _is_module_main(argv0) or not _on_path(PROGRAM, path):
        # `python -m skillsbench_agentbeats`, or in-process (tests, `python -m worker`):
        # the script beside this interpreter if there is one, else `python -m`.
        script = Path(executable).parent / PROGRAM
        if script.is_file() and os.access(script, os.X_OK):
            return PROGRAM if _found_as(PROGRAM, str(script), path) else _shown(str(script))
        python = next((n for n in ("python3", "python") if _found_as(n, executable, path)), None)
        return f"{python or _shown(executable)} -m {MODULE}"
    return PROGRAM


def _is_module_main(argv0: str) -> bool:
    parts = Path(argv0).parts
    return parts[-2:] == (MODULE, "__main__.py") or argv0 in ("-m", "-c")


def _on_path(name: str, path: str) -> bool:
    return shutil.which(name, path=path) is not None


def _found_as(name: str, wanted: str, path: str) -> bool:
    """``name`` on ``path`` is ``wanted`` itself (not merely the same file under a symlink: a
    venv's python links to the system one but is not the same interpreter)."""
    found = shutil.which(name, path=path)
    return found is not None and os.path.abspath(found) == os.path.abspath(wanted)


def _shown(program: str) -> str:
    """``program``'s path as the user can type it here: relative when inside the current folder."""
    absolute = Path(os.path.abspath(program))
    cwd = Path(os.getcwd())
    if absolute.is_relative_to(cwd):
        relative = str(absolute.relative_to(cwd))
        return shlex.quote(relative if "/" in relative else f"./{relative}")  # never a PATH lookup
    return shlex.quote(str(absolute))
