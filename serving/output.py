"""Where a command writes what the user asked for (``-o/--output``, ``--json-report``, …).

One rule for every command, so a typo never leaves a stray folder (``-o /nonexistent-dir/t.html``
once made ``/nonexistent-dir``): a missing folder is created only inside the current folder
(``out/t.html``, ``results/NAME.json`` work as written); anywhere else the folder must exist, and
its absence is one clear error. An output folder the user named is itself created when its
parent exists. A leaf (stdlib only): every component's commands share it.
"""

from __future__ import annotations

from pathlib import Path


class OutputPathError(ValueError):
    """The output cannot be written there; the message names the option and the folder."""


def prepare_output_file(path: Path, option: str = "--output") -> Path:
    """Make ``path``'s folder ready for writing (see the module rule); returns ``path``."""
    if path.is_dir():
        raise OutputPathError(f"{option}: {path} is a folder, not a file")
    _ensure_folder(path.parent, option, named=False)
    return path


def prepare_output_dir(path: Path, option: str = "--output") -> Path:
    """Make the output folder ``path`` (the user named it, so it is created when its parent
    exists; missing folders above it only inside the current folder); returns ``path``."""
    _ensure_folder(path, option, named=True)
    return path


def _ensure_folder(folder: Path, option: str, *, named: bool) -> None:
    if folder.is_dir():
        return
    if folder.exists():
        raise OutputPathError(f"{option}: {folder} is not a folder")
    if _inside_cwd(folder) or (named and folder.parent.is_dir()):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputPathError(f"{option}: cannot create {folder}: {exc.strerror}") from None
        return
    missing = folder
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    raise OutputPathError(
        f"{option}: folder {missing} does not exist (create it first: missing folders are "
        "made only inside the current folder)"
    )


def _inside_cwd(folder: Path) -> bool:
    cwd = Path.cwd().resolve()
    return (cwd / folder).resolve().is_relative_to(cwd)
