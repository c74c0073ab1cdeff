"""A pass counts only if it holds on the image plus the agent's work product.

At the verifier's start, once the agent's processes are dead and the tamper look passed
(:meth:`~worker.sandbox.base.Sandbox.kill_upload_exec`'s ``after_gate``), :func:`capture` sorts
the agent's changes (:mod:`worker.trial.work_product`) and writes the work product to a tar from
outside the sandbox. The verifier then grades the
agent's sandbox as before. When that gives a reward above 0 the trial starts a fresh sandbox of
the same image, applies the work product, and runs the same hardened verifier there: the lower
of the two rewards counts, and the difference is the evidence. A trial that does not pass (a
``nop``) costs nothing more. docs/sandboxes.md, "Work product".
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import posixpath
import re
import tarfile
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from worker.sandbox.archive import ExportReport, keep_only, remove_quietly
from worker.sandbox.base import (
    INSTRUCTION_PATH,
    ROOT_ENV,
    ROOT_USER,
    Sandbox,
    SandboxError,
    SandboxSpec,
)
from worker.sandbox.scripts import shell_script
from worker.trial.verifier import REWARD_FILES
from worker.trial.work_product import (
    CODE_SUFFIXES,
    REASONS,
    Excluded,
    Ground,
    ModuleEntry,
    References,
    WorkProduct,
    classify,
    data_folders,
    exclude_site_packages,
    exclude_unnamed,
    image_module_hits,
    image_module_queries,
    image_module_script,
    link_escapes,
    linked_folder_rules,
    module_folders,
    module_name,
    node_shadow_queries,
    python_references,
    shadow_candidates,
    shell_references,
    site_packages,
    under,
    unnamed_candidates,
    unreached_modules,
    unreached_site_packages,
)

_VERIFIER_SCRIPTS: Final = "worker.trial.verifier_scripts"
EVIDENCE_MAX: Final = 100  # excluded paths kept in result.json (all are counted)
# How much of the agent's code in its module folders is read for the names it uses.
CODE_FILE_MAX: Final = 256 << 10
CODE_TOTAL_MAX: Final = 8 << 20
ENV_MARK: Final = "--- environment ---"
SCRIPTS_MARK: Final = "--- javascript ---"
# Folders of the image's JavaScript files listed at most; past it every folder counts as one.
SCRIPT_DIRS_MAX: Final = 20_000
_NOT_SCRIPT_PLACES: Final = " -o ".join(
    [
        *(f"-path {root}" for root in ("/proc", "/sys", "/dev", "/run", "/usr", "/etc", "/var")),
        *(f"-path {root}" for root in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")),
        *(f"-path {root}" for root in ("/boot", "/logs", "/tests", "/solution")),
        "-path '/tmp/skillsbench-*'",
        "-path '/.skillsbench-*'",
        *(f"-name {name}" for name in ("node_modules", "site-packages", "dist-packages", ".git")),
    ]
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The listing of the image's PATH, Python module folders and environment (one exec per task,
# cached by the caller).
IMAGE_MODULES_SCRIPT: Final = (
    'echo "PATH=$PATH"; '
    "for d in /usr/lib/python3* /usr/lib/python3*/site-packages /usr/lib/python3*/dist-packages "
    "/usr/lib/python3*/lib-dynload /usr/lib/python3/dist-packages /usr/local/lib/python3* "
    "/usr/local/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages "
    "/usr/local/lib/python3*/lib-dynload /opt/*/lib/python3*/site-packages /opt/*/lib/python3*; "
    'do [ -d "$d" ] && ls -1 "$d"; done 2>/dev/null; '
    # the folders of the image's JavaScript files, outside the system, node_modules and Python
    # environments: node resolves their bare imports up through node_modules and package.json
    f'echo "{SCRIPTS_MARK}"; find / -maxdepth 12 \\( {_NOT_SCRIPT_PLACES} \\) -prune -o -type f '
    "\\( -name '*.js' -o -name '*.mjs' -o -name '*.cjs' \\) -print 2>/dev/null | "
    f"sed 's|/[^/]*$||' | sort -u | head -n {SCRIPT_DIRS_MAX + 1}; "
    # and the image's environment (its ENV lines): settings that name the verifier's inputs
    f'echo "{ENV_MARK}"; env; true'
)


# Every folder the verifier's Python could import from once test.sh ran (its installs, uv's
# tool environments in HOME's cache), one "folder<TAB>entry" line each, for its entries and for
# the top-level names its distributions' RECORD/top_level.txt list (a module deleted while the
# verifier ran, by the agent's code it imported, is still named); after the verifier, in
# the agent's sandbox, for a pass whose work product holds modules (worker/trial/work_product.py,
# shadow_candidates).
TEST_TIME_MODULES_SCRIPT: Final = (
    "{ find /usr /opt /root /home /app /srv /tmp /var /workspace -maxdepth 10 "
    "-path '/tmp/skillsbench-*' -prune -o "  # the verifier's own bytecode tree mirrors them all
    "\\( -name site-packages -o -name dist-packages -o -name lib-dynload \\) -type d -prune "
    "-print 2>/dev/null; ls -d /usr/lib/python3* /usr/local/lib/python3* 2>/dev/null; } | "
    'while IFS= read -r d; do [ -d "$d" ] || continue; for e in "$d"/*; do '
    '[ -e "$e" ] && printf \'%s\\t%s\\n\' "$d" "${e##*/}"; done; '
    # and what the installed distributions say they hold, should a module be gone since
    'for r in "$d"/*.dist-info/RECORD "$d"/*.egg-info/top_level.txt; do [ -f "$r" ] && '
    "sed -e 's|[/,].*||' \"$r\" | sort -u | while IFS= read -r n; do "
    '[ -n "$n" ] && printf \'%s\\t%s\\n\' "$d" "$n"; done; done; '
    # and, of a distribution installed from a local folder (PEP 610's direct_url.json: test.sh's
    # `pip3 install .` of the agent's project), that folder: "folder<TAB>name<TAB>file URL path"
    'for u in "$d"/*.dist-info/direct_url.json; do [ -f "$u" ] || continue; '
    's=$(sed -n \'s|.*"url": *"file://\\([^"]*\\)".*|\\1|p\' "$u" | head -n 1); '
    '[ -n "$s" ] && [ -f "${u%/*}/RECORD" ] || continue; '
    "sed -e 's|[/,].*||' \"${u%/*}/RECORD\" | sort -u | while IFS= read -r n; do "
    '[ -n "$n" ] && printf \'%s\\t%s\\t%s\\n\' "$d" "$n" "$s"; done; done; done; true'
)


@dataclass
class Capture:
    """The agent's work product as the verifier's start found it."""

    product: WorkProduct
    reward_names: frozenset[str] = frozenset()  # reward file names its work product holds
    # Its modules a name installed by test.sh could turn into shadows (checked after a pass).
    candidates: dict[str, tuple[str, str]] = field(default_factory=dict)
    archive: Path | None = None
    report: ExportReport | None = None
    # uv-managed interpreters its environments run on, which the image lacks maybe:
    # (install folder, key), installed by the image's uv before it is laid (install_interpreters).
    interpreters: list[tuple[str, str]] = field(default_factory=list)

    def evidence(self) -> dict[str, Any]:
        excluded = self.product.excluded
        rules = sorted({item.rule for item in excluded})
        doc: dict[str, Any] = {
            "applied": len(self.product.applied),
            "excluded": [item.as_dict() for item in excluded[:EVIDENCE_MAX]],
            "n_excluded": len(excluded),
            "rules": {rule: REASONS[rule] for rule in rules},
        }
        if self.report is not None:
            doc["archive_bytes"] = self.report.bytes
            doc["not_exported"] = [
                {"path": path, "why": why} for path, why in self.report.skipped[:EVIDENCE_MAX]
            ]
        return doc


@dataclass(frozen=True)
class ImageFacts:
    """What the work product rule needs of the image: its PATH, Python module names and the
    rest of its environment."""

    path_dirs: tuple[str, ...] = ()
    modules: frozenset[str] = frozenset()
    env: tuple[tuple[str, str], ...] = ()
    # Folders holding JavaScript files of the image's; None: too many to list (all count).
    script_dirs: tuple[str, ...] | None = ()


def image_facts(listing: str) -> ImageFacts:
    """:data:`IMAGE_MODULES_SCRIPT`'s output read."""
    lines = listing.splitlines()
    path_dirs: tuple[str, ...] = ()
    if lines and lines[0].startswith("PATH="):
        path_dirs = tuple(d for d in lines.pop(0)[5:].split(":") if d.startswith("/"))
    env: list[tuple[str, str]] = []
    if ENV_MARK in lines:
        at = lines.index(ENV_MARK)
        for line in lines[at + 1 :]:  # a value's own line breaks give lines without a name
            name, equals, value = line.partition("=")
            if equals and _ENV_NAME.fullmatch(name):
                env.append((name, value))
        del lines[at:]
    script_dirs: tuple[str, ...] | None = ()
    if SCRIPTS_MARK in lines:
        at = lines.index(SCRIPTS_MARK)
        found = [line for line in lines[at + 1 :] if line.startswith("/")]
        script_dirs = None if len(found) > SCRIPT_DIRS_MAX else tuple(found)
        del lines[at:]
    names = (module_name(line.strip()) for line in lines)
    return ImageFacts(path_dirs, frozenset(name for name in names if name), tuple(env), script_dirs)


async def capture(
    sandbox: Sandbox, ground: Ground, archive: Path, max_bytes: int, *, always_export: bool = False
) -> Capture | None:
    """Sort the agent's changes; export the work product when a regrade could differ (or
    ``always_export``: the agent's sandbox will not be graded). None when the backend cannot
    list its changes."""
    changes = await sandbox.work_changes()
    if changes is None:
        return None
    product = await asyncio.to_thread(classify, changes, ground)  # large lists: off the loop
    # The agent's files, wherever the rule puts them (the harness's own places are not among
    # them: the verifier's folder is emptied before test.sh runs).
    agents = [*(c.path for c in product.applied if c.kind != "deleted")]
    agents += [e.path for e in product.excluded if e.change != "deleted"]
    names = frozenset(
        posixpath.basename(p) for p in agents if posixpath.basename(p) in REWARD_FILES
    )
    found = Capture(product, reward_names=names, candidates=shadow_candidates(product, ground))
    kept = [c.path for c in product.applied if c.kind != "deleted"]
    links = await sandbox.link_targets(kept) if kept else {}
    if links is not None:  # links that reach what the harness places later: left out
        escaping = {p for p, target in links.items() if link_escapes(p, target, ground.skills_dir)}
        for change in [c for c in product.applied if c.path in escaping]:
            product.applied.remove(change)
            product.exclude(change, "harness-link")
        # and a link that the regrade's copy makes a folder the rules leave out (one named like
        # a file of the tests or a script, a skill folder the tests name), or that puts one
        # below it: judged where its copy will be
        live = {p: t for p, t in links.items() if p not in escaping}
        applied = [c.path for c in product.applied if c.kind != "deleted"]
        named = await asyncio.to_thread(linked_folder_rules, live, applied, ground)
        for change in [c for c in product.applied if c.path in named]:
            product.applied.remove(change)
            product.exclude(change, named[change.path])
        kept = [p for p in kept if p not in escaping and p not in named]
    await _exclude_image_modules(sandbox, product, ground)
    unnamed = unnamed_candidates(product, ground)
    site = site_packages(product, ground) if ground.named is not None else {}
    if (
        not always_export
        and not product.needs_regrade
        and links is not None
        and not found.candidates
        and not unnamed
        and not site
    ):
        return found

    def link_ok(path: str, target: str) -> bool:
        if link_escapes(path, target, ground.skills_dir):
            product.excluded.append(Excluded(path, "added", "harness-link"))
            return False
        return True

    found.report = await sandbox.export_changes(kept, archive, max_bytes=max_bytes, link_ok=link_ok)
    found.archive = archive
    found.interpreters = await asyncio.to_thread(managed_interpreters, archive, product)
    if (unnamed or site) and ground.named is not None:
        entries = await asyncio.to_thread(module_entries, archive, product, ground)
        exclude_unnamed(product, unnamed_paths(entries, ground.named, unnamed))
        exclude_site_packages(product, unreached_site_packages(product, ground, site))
    return found


_QUERY_CHUNK: Final = 200  # queried entries per exec (a command line stays short)


async def _exclude_image_modules(sandbox: Sandbox, product: WorkProduct, ground: Ground) -> None:
    """Leave out the agent's modules that win over the image's in a folder of the image
    (``image-module``, :func:`image_module_queries`), looked for in the agent's sandbox once its
    processes are gone; where the look fails nothing is left out by it."""
    queries = {**node_shadow_queries(product, ground), **image_module_queries(product, ground)}
    if not queries:
        return
    added = {c.path for c in product.applied if c.kind == "added"}
    items = sorted(queries.items())
    hits: list[str] = []
    for start in range(0, len(items), _QUERY_CHUNK):
        chunk = dict(items[start : start + _QUERY_CHUNK])
        try:
            result = await sandbox.exec(
                ["/bin/sh", "-c", image_module_script(chunk)], user="0:0", timeout_sec=60
            )
        except SandboxError:
            return
        if result.exit_code != 0 or result.timed_out or result.truncated:
            return
        hits += image_module_hits(chunk, set(result.stdout.splitlines()), added)
    for change in [c for c in product.applied if under(c.path, hits)]:
        product.applied.remove(change)
        product.exclude(change, "image-module")


def unnamed_paths(
    entries: dict[str, ModuleEntry], named: References, candidates: Collection[str]
) -> list[str]:
    """What to leave out of the candidate entries (``unnamed_candidates``): the importable
    files the tests and the code they reach do not name (``unreached_modules``)."""
    of_entry = {p: top for top, entry in entries.items() for p in entry.import_paths}
    return [p for p in unreached_modules(entries, named) if of_entry.get(p) in candidates]


def module_entries(archive: Path, product: WorkProduct, ground: Ground) -> dict[str, ModuleEntry]:
    """The top-level entries of the verifier's module folders in the exported work product, with
    what their code names (read from the archive, up to :data:`CODE_TOTAL_MAX`; code past it
    names nothing, so a module only it names is left out)."""
    folders = module_folders(ground)
    added = {c.path for c in product.applied if c.kind == "added"}
    # A link is laid as a copy of what it points at (materialize_links): one to a folder of the
    # work product that holds no module at any depth (`/root/output -> /outputs`) is data.
    data = data_folders(product.applied)
    importable: dict[str, list[str]] = {}
    code: dict[str, list[tuple[str, References]]] = {}
    budget = CODE_TOTAL_MAX
    with tarfile.open(archive) as tar:
        for member in tar:
            path = "/" + member.name.lstrip("/").rstrip("/")
            tops = [
                top
                for folder in folders
                if under(path, [folder]) and (top := _entry(folder, path)) is not None
            ]
            if not tops:
                continue
            name = posixpath.basename(path)
            is_code = (
                (member.issym() and _link_target(path, member.linkname) not in data)
                or member.islnk()
                or (member.isfile() and module_name(name) is not None and not name.isidentifier())
            )
            text = ""
            if member.isfile() and budget > 0 and name.endswith(CODE_SUFFIXES):
                head = _read_head(tar, member, min(CODE_FILE_MAX, budget))
                budget -= len(head)
                text = head.decode("utf-8", "replace")
            refs = _code_references(name, text) if text else None
            for top in tops:
                importable.setdefault(top, [])
                if is_code:
                    importable[top].append(path)
                if refs is not None:
                    code.setdefault(top, []).append((name, refs))
    return {
        top: ModuleEntry(
            name=posixpath.basename(top),
            module=module_name(posixpath.basename(top)),
            importable=bool(paths) and module_name(posixpath.basename(top)) is not None,
            added=top in added,
            code=tuple(code.get(top, ())),
            import_paths=tuple(paths),
        )
        for top, paths in importable.items()
    }


def _link_target(path: str, target: str) -> str:
    """Where a link points, by name (a ``..`` after another link is not the kernel's answer, but
    such a target only ever misses a data folder, keeping the link code)."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(path), target))


# A uv-managed interpreter in a home: <home>/.local/share/uv/python/<key>/bin. The folder is the
# agent's (home-config: never carried, or a planted interpreter would run the verifier's uvx,
# which prefers managed ones); its name says which genuine one uv installs in its place.
_MANAGED_PYTHON = re.compile(
    r"^((?:/root|/home/[A-Za-z0-9._-]+)/\.local/share/uv/python)/"
    r"((?:cpython|pypy|graalpy)-[0-9][A-Za-z0-9._+-]*)(?:/|$)"
)
_VENV_HOME = re.compile(r"^\s*home\s*=\s*(\S+)\s*$", re.MULTILINE)


def managed_interpreters(archive: Path, product: WorkProduct) -> list[tuple[str, str]]:
    """The uv-managed interpreters the work product's Python environments run on (their
    ``pyvenv.cfg`` ``home``), as (install folder, key): ``/app/lib/.venv`` made by ``uv venv
    --python 3.12`` on ``~/.local/share/uv/python/cpython-3.12.12-linux-x86_64-gnu``."""
    applied = {c.path for c in product.applied if c.kind != "deleted"}
    found: dict[tuple[str, str], None] = {}
    with tarfile.open(archive) as tar:
        for member in tar:
            path = "/" + member.name.lstrip("/")
            if not (member.isfile() and path.endswith("/pyvenv.cfg") and path in applied):
                continue
            text = _read_head(tar, member, 64 << 10).decode("utf-8", "replace")
            for home in _VENV_HOME.findall(text):
                match = _MANAGED_PYTHON.match(posixpath.normpath(home))
                if match is not None:
                    found[(match.group(1), match.group(2))] = None
    return list(found)


# Run in the fresh sandbox before the work product is laid: the image's own uv installs the
# interpreter from its own source (the verifier's environment may point it at a mirror), with
# no link in a PATH folder (~/.local/bin/python3.X would shadow the image's python3.X).
INSTALL_INTERPRETER: Final = (
    'folder=$1; key=$2; [ -e "$folder/$key/bin" ] && exit 0; '
    'uv=$(command -v uv || echo "$HOME/.local/bin/uv"); '
    '[ -x "$uv" ] || { echo "the image has no uv" >&2; exit 127; }; '
    'UV_PYTHON_INSTALL_DIR="$folder" UV_PYTHON_INSTALL_BIN=0 exec "$uv" python install "$key"'
)
INSTALL_TIMEOUT_SEC: Final = 600


async def install_interpreters(
    sandbox: Sandbox, interpreters: list[tuple[str, str]], env: dict[str, str]
) -> list[str]:
    """Install each uv-managed interpreter the work product's environments need with the
    image's uv, so that they run on a genuine one; what happened, as notes."""
    notes = []
    for folder, key in interpreters:
        result = await sandbox.exec(
            ["/bin/sh", "-c", INSTALL_INTERPRETER, "sh", folder, key],
            env=env,
            user="0:0",
            timeout_sec=INSTALL_TIMEOUT_SEC,
            max_output_bytes=64 << 10,
        )
        if result.exit_code == 0:
            notes.append(f"{key}, the interpreter of the work product's environment, is uv's own")
        else:
            detail = " ".join((result.stderr or result.stdout).split())[-300:]
            notes.append(
                f"{key}, the interpreter of the work product's environment, could not be "
                f"installed with the image's uv (exit {result.exit_code}): {detail}"
            )
    return notes


def _code_references(name: str, text: str) -> References | None:
    """What a code file of the agent's names: Python by its syntax tree (a file that does not
    parse names nothing), a notebook by its code cells, a shell script as shell."""
    if name.endswith((".sh", ".bash")):
        return shell_references(text)
    if name.endswith(".ipynb"):
        try:
            cells = json.loads(text).get("cells") or []
            text = "\n".join(
                "".join(c.get("source") or "") for c in cells if c.get("cell_type") == "code"
            )
        except (ValueError, AttributeError, TypeError):
            return None
    return python_references(text)


def _entry(folder: str, path: str) -> str | None:
    """The entry of ``folder`` that ``path`` is in or is; None for the folder itself."""
    rest = path[len(folder) :].lstrip("/") if folder != "/" else path.lstrip("/")
    if not rest:
        return None
    return posixpath.join(folder, rest.split("/", 1)[0])


def _read_head(tar: tarfile.TarFile, member: tarfile.TarInfo, limit: int) -> bytes:
    handle = tar.extractfile(member)
    if handle is None:
        return b""
    with handle:
        return handle.read(limit)


@dataclass
class Regrade:
    """What the fresh sandbox said."""

    reward: float
    notes: list[str] = field(default_factory=list)
    verifier: dict[str, Any] = field(default_factory=dict)


async def fresh_sandbox(
    backend: type[Sandbox],
    spec: SandboxSpec,
    trial_dir: Path,
    *,
    role: str = "regrade",
    **changes: Any,
) -> Sandbox:
    """A new sandbox of the trial's image, its own state folder, nothing placed but the
    instruction. ``role`` names it (``regrade``; ``separate-verifier``, whose ``changes`` to
    the spec give it the verifier's own image and settings: worker/trial/artifacts.py)."""
    fields: dict[str, Any] = {
        "trial_id": f"{spec.trial_id}-{role}",
        "state_dir": trial_dir / role / "sandbox",
        "files": {k: v for k, v in spec.files.items() if k == INSTRUCTION_PATH},
    }
    fresh = dataclasses.replace(spec, **{**fields, **changes})
    await backend.task_init(fresh)
    sandbox = backend(fresh)
    try:
        await sandbox.start()
    except BaseException:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(sandbox.stop(), 60)
        raise
    return sandbox


async def apply(sandbox: Sandbox, found: Capture) -> list[str]:
    """Lay the work product on the fresh sandbox (what is still applied of what was exported:
    a rule decided after the export, such as a test-time shadow, takes entries out), its links
    made content (:func:`materialize_links`); what it could not write, as notes."""
    assert found.archive is not None
    links = await asyncio.to_thread(archive_links, found.archive)
    unlisted = [p for p in links if "\n" in p]  # links.sh reads a path a line: left out here
    for change in [c for c in found.product.applied if c.path in unlisted]:
        found.product.applied.remove(change)
        found.product.exclude(change, "link")
    keep = {c.path for c in found.product.applied}
    links = [p for p in links if p in keep]
    deleted = [c.path for c in found.product.applied if c.kind == "deleted"]
    archive = await asyncio.to_thread(keep_only, found.archive, keep)
    try:
        result = await sandbox.apply_changes(archive, deleted)
    finally:
        remove_quietly(archive)
        remove_quietly(found.archive)
    notes = []
    if result.exit_code != 0:
        detail = " ".join(result.stderr.split())[-300:]
        notes.append(f"the work product did not apply whole (exit {result.exit_code}): {detail}")
    return notes + await materialize_links(sandbox, found.product, links)


def archive_links(archive: Path) -> list[str]:
    """The symbolic links among the work product's entries, as sandbox paths."""
    with tarfile.open(archive) as tar:
        members = [("/" + m.name.lstrip("/"), m.issym()) for m in tar]
    paths = {path for path, _ in members}
    return [path for path, link in members if link and not link_kept(path, paths)]


def link_kept(path: str, entries: Collection[str]) -> bool:
    """Links that stay links on the regrade: a package manager's own (below ``node_modules``:
    ``.bin`` entries and workspace packages, whose code resolves its imports from where the link
    points) and a virtual environment's interpreter and ``lib64``, whose ``pyvenv.cfg`` beside
    them the work product holds. None of them is a place a verifier writes its files to."""
    parts = path.split("/")
    if "node_modules" in parts[:-1]:
        return True
    folder, name = posixpath.split(path)
    if name == "lib64":
        return posixpath.join(folder, "pyvenv.cfg") in entries
    root, bin_name = posixpath.split(folder)
    if bin_name == "bin" and name.startswith(("python", "pypy")):
        return posixpath.join(root, "pyvenv.cfg") in entries
    return False


# How much the links of one work product may copy on the regrade (KiB, links followed).
LINK_COPY_MAX_KIB: Final = 512 << 10
LINK_MAX: Final = 2_000
_LINK_LINE = re.compile(r"^skillsbench-link (copied|dangling|dropped|too-large) (/.*)$")


async def materialize_links(sandbox: Sandbox, product: WorkProduct, links: list[str]) -> list[str]:
    """Make each of ``links`` (laid on the fresh sandbox) what it points at there: a copy of a
    file or folder, or nothing (verifier_scripts/links.sh says why). A link's meaning is decided
    when it is followed, and the verifier follows it after making or copying files of its own:
    a link to where its ground truth will be, or one where it writes, hands the agent those.
    Links removed are recorded as left out (``link``). Past the copy cap, or when the script
    could not finish, :class:`SandboxError` (a link left a link could alias what the verifier
    makes: no pass)."""
    if not links:
        return []
    if len(links) > LINK_MAX:
        raise SandboxError(f"it holds {len(links)} links, more than {LINK_MAX} to lay as copies")
    result = await sandbox.exec(
        [
            "/bin/sh",
            "-c",
            shell_script(_VERIFIER_SCRIPTS, "links.sh"),
            "sh",
            str(LINK_COPY_MAX_KIB),
            str(LINK_MAX),
        ],
        cwd="/",
        env=ROOT_ENV,
        user=ROOT_USER,
        timeout_sec=600,
        stdin="".join(f"{p}\n" for p in links).encode("utf-8", "surrogateescape"),
    )
    copied = 0
    left_out = []
    for line in result.stdout.splitlines():
        match = _LINK_LINE.match(line)
        if match is None:
            continue
        if match.group(1) == "copied":
            copied += 1
        else:
            left_out.append(Excluded(match.group(2), "added", "link"))
    product.excluded.extend(left_out)
    notes = []
    if copied:
        notes.append(f"{copied} link(s) of the work product laid as copies of what they point at")
    if left_out:
        shown = ", ".join(item.path for item in left_out[:5])
        notes.append(f"{len(left_out)} link(s) to nothing or past the copy cap left out: {shown}")
    if result.exit_code == 3:
        raise SandboxError(
            f"its links point at more than the copy cap ({LINK_COPY_MAX_KIB} KiB, {LINK_MAX} links)"
        )
    if result.exit_code != 0 or result.timed_out:
        # A link left a link could alias what the verifier makes: no pass on this sandbox.
        detail = " ".join(result.stderr.split())[-300:]
        raise SandboxError(
            f"its links could not all be made content (exit {result.exit_code}): {detail}"
        )
    return notes
