"""Shell scripts shipped as package data (``.sh`` files beside the code that runs them).

A script is never built by interpolation: values reach it as positional arguments (or stdin).
Several files may be joined into one script (a library of functions, then the part that calls
them); each file is shellcheck-clean on its own (``make lint``).
"""

from __future__ import annotations

import functools
from importlib import resources


@functools.cache
def shell_script(package: str, *names: str) -> str:
    """The text of ``names`` (files of ``package``), joined in order."""
    folder = resources.files(package)
    return "\n".join(folder.joinpath(name).read_text(encoding="utf-8") for name in names)
