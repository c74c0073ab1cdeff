"""What of the agent's changes is its work product, and what must come from the image.

A shared verifier (``tests/test.sh`` run in the agent's own sandbox, as all 87 SkillsBench tasks
do) starts its toolchain (``sh``, ``apt-get``, ``curl``, ``uv``/``uvx``, ``pip``, ``python3``,
``pytest``, ``git``, ``node``, ``mvn``) on ground the agent had in its hands. Each of those tools
reads inputs nobody names on its command line: configuration (system, XDG and user, dotfiles),
caches, hooks, plugin registries, module search paths that start in the working directory. A
list of such paths is never complete, so the rule is stated the other way round: the work
product is everything the agent changed *except* these classes, which must come from the image:

* ``system``: the system folders (``/usr``, ``/etc``, ``/var``, ``/bin``, ``/lib*``, ...):
  programs, libraries, installed packages, configuration, package managers' state and hooks;
* ``home-config``: every dot entry of a home folder (``~/.config``, ``~/.cache``, ``~/.local``,
  ``~/.curlrc``, ``~/.pip``, ``~/.npmrc``, ``~/.gitconfig``, ``~/.venv``, ...);
* ``toolchain``: inside a Python environment or a ``PATH`` folder the image already had (a
  conda prefix under ``/opt``, say): new or changed modules, programs, plugin metadata;
* ``ground-config``: where the verifier starts (its working directory, the folders above it, and
  ``/``, the tests' parent): hidden entries and the project and configuration files that tools
  read from there by themselves (:data:`GROUND_FILES`);
* ``ground-module``: a module or package in the working directory (``python3 -m`` puts it first
  on ``sys.path``) named like one the verifier's Python resolves or installs (the standard
  library, the image's site folders, the test runner's family, what ``test.sh`` installs);
* ``unnamed-module``: what Python could import of a module the agent added to those folders
  that neither the tests nor the agent's code they reach import or run (an optional
  import, ``pickle``'s ``org.python.core``, would find it first): decided on the exported work
  product (:func:`unreached_modules`);
* ``verifier-output``: a file test.sh's own commands write (``ssconvert -S in.xlsx sheet.csv``
  makes ``sheet.csv.0``, ...), which the tests would otherwise read from the agent;
* ``node-module``: a ``node_modules`` or ``package.json`` where node resolves the imports of a
  script that is not the agent's (the image's JavaScript, the tests' own scripts run with node);
* ``harness-link``: a symbolic link that reaches what the harness places later (``/tests``,
  ``/logs``, ``/solution``) or the kernel's views (``/proc``, ``/sys``, ``/dev``).

A task may declare more work product (``[verifier].work_product``: paths or folders), which
wins over these rules. Bytecode caches and shell histories are ``benign``: left out, but no
reason to regrade. docs/sandboxes.md ("Work product") says why each real verifier shape is safe
under this rule. Pure: callers give the change list and the facts of the image.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import posixpath
import re
import shlex
import sys
import urllib.parse
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from worker.sandbox.tamper import OPT_RUNTIME, Change, opt_toolchain

HARNESS_ROOTS: Final = ("/logs", "/tests", "/solution", "/instruction.md")
# Where the harness itself writes in a sandbox (the docker stage, the pycache prefix).
HARNESS_PREFIXES: Final = ("/.skillsbench-", "/tmp/skillsbench-", "/tmp/.skillsbench-")
KERNEL_ROOTS: Final = ("/proc", "/sys", "/dev", "/run")
SYSTEM_ROOTS: Final = (
    "/usr",
    "/etc",
    "/var",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
)
# /var's place for temporary files is the agent's like /tmp.
SYSTEM_EXCEPTIONS: Final = ("/var/tmp",)
# Files the grading tools read by themselves from the folder they start in or from its parents
# (pytest's rootdir, ini and conftest discovery; Python packaging; uv's project discovery; node's
# module resolution, whose nearest package.json gives a script's package scope: its "type", its
# "imports" map and, by its "name" and "exports", what a bare import of that name resolves to).
# A project's own build files (pom.xml, Makefile, lakefile) are not here: a test.sh that builds
# the agent's project names that project itself, and real tasks' work products include them
# (spring-boot-jakarta-migration's pom.xml); nor are node's where test.sh runs npm there
# (NODE_PROJECT_FILES).
GROUND_FILES: Final = frozenset(
    {
        "pytest.ini",
        "pytest.toml",
        "pyproject.toml",
        "tox.ini",
        "setup.cfg",
        "setup.py",
        "conftest.py",
        "sitecustomize.py",
        "usercustomize.py",
        "uv.toml",
        "uv.lock",
        "pylock.toml",
        "Pipfile",
        "Pipfile.lock",
        "poetry.lock",
        "pdm.lock",
        "node_modules",
        "package.json",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
    }
)
# The test runner's family: modules a pytest-based verifier imports or installs.
RUNNER_MODULES: Final = frozenset(
    {
        "pytest",
        "_pytest",
        "py",
        "pluggy",
        "iniconfig",
        "packaging",
        "pip",
        "_distutils_hack",
        "setuptools",
        "pkg_resources",
        "wheel",
        "tomli",
        "tomllib",
        "exceptiongroup",
        "colorama",
        "pygments",
        "typing_extensions",
        "coverage",
        "hypothesis",
        "xdist",
        "execnet",
    }
)
# Names outside the standard library that it imports in a try, for other platforms or as an
# option (pickle and copy: org.python.core; platform: java.lang, _winreg, vms_lib; logging:
# win32evtlog; distutils: docutils, win32api): under `python3 -m pytest` a module of the
# working directory by that name runs inside the verifier whatever the tests say. Read off
# CPython 3.11's library (its try blocks' imports).
STDLIB_OPTIONAL_IMPORTS: Final = frozenset(
    {
        "org",
        "java",
        "_winreg",
        "vms_lib",
        "win32api",
        "win32con",
        "win32evtlog",
        "win32evtlogutil",
        "docutils",
    }
)
BENIGN_NAMES: Final = frozenset(
    {
        ".bash_history",
        ".python_history",
        ".lesshst",
        ".viminfo",
        ".wget-hsts",
        ".sh_history",
        ".ash_history",
    }
)
# A distribution's metadata (entry points: pytest11 plugins), .pth and egg links: what Python
# and importlib.metadata read from every folder of sys.path by themselves.
DISTRIBUTION_METADATA: Final = (".dist-info", ".egg-info", ".egg-link", ".egg", ".pth")
# A system site folder's top-level entry: /usr[/local]/lib/python3.X/{site,dist}-packages/NAME,
# or a user site's (``pip install --user``): <home>/.local/lib/python3.X/site-packages/NAME.
_SYSTEM_SITE_ENTRY = re.compile(
    r"^(/usr(?:/local)?/lib/python3(?:\.[0-9]+)?/(?:site|dist)-packages"
    r"|(?:/root|/home/[^/]+)/\.local/lib/python3(?:\.[0-9]+)?/site-packages)/([^/]+)(/|$)"
)
_MODULE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\.py|\.pyc|\.pyw|(\.[A-Za-z0-9_-]+)?\.so)?$")
# A site folder and the environment root it belongs to: <root>/lib/python3.X/site-packages.
_ENV_SITE = re.compile(r"^(.*?)/lib(?:64)?/python[0-9][0-9.]*(?:/(?:site|dist)-packages)?(/|$)")
_INSTALL_LINE = re.compile(
    r"(?:pip3?|python3?\s+-m\s+pip|uv\s+pip)\s+install\s+([^\n;&|]*)|--with\s+([^\s;&|]+)"
    r"|uv\s+add\s+([^\n;&|]*)"
)

REASONS: Final = {
    "system": "the system folders (programs, libraries, packages, configuration, package "
    "state) come from the image",
    "home-config": "a home folder's configuration, caches and installs (its dot entries) come "
    "from the image",
    "toolchain": "a Python environment or a PATH folder the image has comes from the image",
    "ground-config": "tool configuration and project files where the verifier starts (its "
    "working directory, the folders above it, /) come from the image",
    "ground-module": "a module in the verifier's working directory named like one its Python "
    "resolves or installs",
    "test-time-shadow": "a module of the agent's named like one the verifier's Python found once "
    "test.sh had installed its tools (a dependency of what it installs, say)",
    "verifier-input": "a folder the verifier's own configuration names (a wheelhouse, a package "
    "index, a cache its environment points at) holds what the image had",
    "unnamed-module": "a module or package in the verifier's module folders that neither the "
    "tests nor the agent's code they reach import or run: only an import the verifier's own tools make by "
    "themselves (an optional import) could find it there, and that must find the image's",
    "test-name": "named like the task's own test code (test.sh, its test modules): a verifier "
    "that searches for its tests must find only those in /tests; or a folder named like a file "
    "of the tests, where test.sh's copy of that file would land inside",
    "skill": "a skill folder the tests name comes from the image: they may validate with its "
    "library from the first of several places that exists",
    "script-folder": "a folder named like a script (x.py, x.mjs): a verifier that copies its own "
    "script there would copy it inside, and its run of that path run the folder's entry point",
    "image-module": "a module put in a folder of the image, outside the places the agent's "
    "work goes, that wins the image's own imports there: a package folder or an extension "
    "beside a module of the image's of the same name, or a module named like a library of the "
    "image's in a folder that is no package (one an image library puts on sys.path as it runs); "
    "for node, a new file beside one of the image's that a relative require takes first "
    "(parts.js before parts.json, lib.js before lib/)",
    "verifier-output": "a file test.sh's own commands write (a converter's output, a "
    "redirection's target): the verifier makes it, and the agent's copy would be read as the "
    "verifier's should the command fail",
    "node-module": "a node_modules folder or a package.json put where node resolves the "
    "imports of a script of the image's or of the tests' (in the script's folder or one above "
    "it): it would win the script's bare imports, its package scope or its self-reference",
    "harness-link": "a link to what the harness places (tests, logs, solution) or to the "
    "kernel's views",
    "link": "a link of the work product is laid as a copy of what it points at when the "
    "verifier starts: one to nothing (or to what the verifier makes or copies later), a FIFO, "
    "a device or a folder above it is left out",
    "benign": "bytecode caches, shell histories and folders of the image changed only by "
    "what is in them (never read by the verifier themselves)",
}


@dataclass(frozen=True)
class References:
    """What a text names that Python could import or a shell could run.

    ``modules``: what it imports or runs as a module (``import x``, ``from x``, ``python3 -m
    x``, ``x.py``, ``import_module("x")``); ``places``: names it uses as a folder or a bare
    word (``/root/x/``, ``"x"``), which keep an entry but not the code inside it; ``files``:
    whole file names (``run.sh``, ``answer.json``)."""

    modules: frozenset[str] = frozenset()
    places: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()
    # Read strictly, for whether the verifier runs code of the agent's at all: what it imports
    # (statements, import calls, ``-m``; never a file name in a message) and the programs it
    # runs (``python3 /app/run.py``, ``subprocess.run(["/root/answer"])``, ``./run.sh``):
    # absolute paths as they are, relative ones by their file name.
    imports: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()

    def __or__(self, other: References) -> References:
        return References(
            self.modules | other.modules,
            self.places | other.places,
            self.files | other.files,
            self.imports | other.imports,
            self.runs | other.runs,
        )


# What a shell text (test.sh, a script of the agent's the tests run) names: `python3 -m x`,
# `import x` in a `python3 -c`, a module file (`x.py`, `x.cpython-311-x86_64-linux-gnu.so`), a
# folder (`/root/x/`), a file name. Every repetition is bounded: the agent's text is read too,
# and an unbounded one is quadratic on a crafted run (`+a+a+a…`: minutes of the worker's loop).
_IMPORT_REF = re.compile(r"\b(?:import|from)[ \t]+([A-Za-z_][A-Za-z0-9_]{0,127})")
_RUN_MODULE_REF = re.compile(r"(?<![\w-])-m[ \t]*([A-Za-z_][A-Za-z0-9_]{0,127})")
_MODULE_FILE_REF = re.compile(
    r"(?<![\w.+-])([A-Za-z_][A-Za-z0-9_]{0,127})"
    r"(?:\.(?:py|pyc|pyw|pyx|pyi)\b|\.[A-Za-z0-9_-]{0,64}\.?so\b)"
)
_FOLDER_REF = re.compile(r"(?<![\w.+-])([A-Za-z_][A-Za-z0-9_]{0,127})/")
_FILE_REF = re.compile(r"(?<![\w.+-])([A-Za-z0-9_][A-Za-z0-9_.+-]{0,254}\.[A-Za-z0-9_+-]{1,32})")
# Python's ways to run a program (subprocess, os, pexpect), its command the first argument.
_RUN_CALLS: Final = frozenset(
    {"run", "call", "check_call", "check_output", "Popen", "system", "popen", "getoutput"}
    | {"getstatusoutput", "spawn", "execv", "execvp", "execl", "execlp", "create_subprocess_exec"}
    | {"create_subprocess_shell", "run_process", "open_process", "spawnl", "spawnlp"}
)
_ARGV_CALLS: Final = frozenset({"create_subprocess_exec", "execl", "execlp", "spawnl", "spawnlp"})
# Python's ways to import by a name given as a string.
_IMPORT_CALLS: Final = frozenset(
    {"import_module", "__import__", "find_spec", "run_module", "importorskip"}
)


# A remote resource's address (``https://astral.sh/uv/0.9.7/install.sh``): its file names are
# the remote host's, never a file of the agent's (an agent's ``/root/install.sh`` is not run by
# a test.sh that pipes that URL's body into sh). ``file://`` names a local place: kept.
_REMOTE_URL = re.compile(r"\b(?!file:)[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s\"'`<>]{0,4096}")


def _groups(pattern: re.Pattern[str], text: str) -> set[str]:
    return {g for m in pattern.finditer(text) for g in m.groups() if g}


def shell_references(text: str) -> References:
    """What a shell text names (test.sh, a script the tests run, a file of tests/ that is not
    Python); never a remote address's parts."""
    text = _REMOTE_URL.sub(" ", text)
    imports = _groups(_IMPORT_REF, text) | _groups(_RUN_MODULE_REF, text)
    modules = imports | _groups(_MODULE_FILE_REF, text)
    # `cd /root/app && python3 main.py`: the folder it enters is a place of the files it runs
    entered = {posixpath.basename(d.rstrip("/")) for d in _groups(_ENTERED, text)}
    return References(
        frozenset(modules),
        frozenset(_groups(_FOLDER_REF, text) | {d for d in entered if d}),
        frozenset(_groups(_FILE_REF, text)),
        frozenset(imports),
        frozenset(shell_runs(text)),
    )


_ENTERED = re.compile(r"(?:^|[\s;&|(])(?:cd|pushd)[ \t]+[\"']?([^\s\"';&|)]{1,4096})")
# A command line's segments, and the words before a program that are not it.
_SEGMENT = re.compile(r"[;&|\n`(){}]|\$\(")
_WRAPPERS: Final = frozenset(
    {"exec", "sudo", "nohup", "env", "time", "command", "xargs", "then", "do", "else", "if"}
    | {"while", "until", "!", "setsid", "stdbuf", "nice"}
)
_INTERPRETER = re.compile(
    r"^(?:python[0-9.]*|pypy[0-9.]*|bash|sh|dash|zsh|ksh|node|nodejs|perl|ruby|Rscript)$"
)
# Options of an interpreter that take the next word as their value.
_VALUE_OPTIONS: Final = frozenset({"-W", "-X", "--check-hash-based-pycs", "-r"})


def shell_runs(text: str) -> set[str]:
    """The programs a shell text runs (:attr:`References.runs`): the script an interpreter
    runs (``python3 -u /app/run.py``), a command given by its path (``./run.sh``,
    ``/root/answer``)."""
    runs: set[str] = set()
    for segment in _SEGMENT.split(text[:1_000_000]):
        words = [w.strip("\"'") for w in segment.split()[:64]]
        words = [w for w in words if w]
        _add_run(words, runs)
    return runs


def _add_run(words: Sequence[str], runs: set[str]) -> None:
    i = 0
    while i < len(words) and (words[i] in _WRAPPERS or "=" in words[i].split("/")[0]):
        i += 1
    if i < len(words) and words[i] == "timeout":
        i += 2
    if i < len(words) and words[i] == "uv" and words[i + 1 : i + 2] == ["run"]:
        i += 2
    if i >= len(words):
        return
    program = words[i]
    if _INTERPRETER.match(posixpath.basename(program)):
        j = i + 1
        while j < len(words) and words[j].startswith("-"):
            if words[j] in ("-c", "-m", "-e"):
                return  # code or a module (its name is among the imports)
            j += 2 if words[j] in _VALUE_OPTIONS else 1
        if j < len(words):
            _add_program(words[j], runs)
    elif "/" in program:
        _add_program(program, runs)


def _add_program(word: str, runs: set[str]) -> None:
    if word.startswith("/"):
        runs.add(posixpath.normpath(word))
    elif word and not word.startswith(("$", "~", "-")):
        runs.add(posixpath.basename(word))


def python_references(source: str) -> References | None:
    """What Python code names, read from its syntax tree: what it imports (statements, and
    ``import_module("x")``-like calls), and in its strings the module files, folders and
    files it names (``"/root/x.py"``, ``["python3", "-m", "x"]``, the name a constant of it
    holds: ``["python3", "-m", PACKAGE]``). Never its comments, nor a
    word in a string: ``"import org"`` in a message imports nothing. None when it is not
    Python."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    modules: set[str] = set()
    found = References()
    # Names bound to a string (`PACKAGE = "answer_cli"`), for a run or an import by that name.
    constants: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                for target in targets:
                    if isinstance(target, ast.Name):
                        constants[target.id] = value.value

    def string(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        return None

    def leading(node: ast.expr) -> str | None:
        """A name's known start: ``"plugins." + name``, ``f"plugins.{name}"``, a constant."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return leading(node.left)
        if isinstance(node, ast.JoinedStr) and node.values:
            return string(node.values[0])
        return string(node)

    runs: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            called = leading(node.args[0]) if name in _IMPORT_CALLS else None
            if called and called.split(".")[0].isidentifier():
                modules.add(called.split(".")[0])  # a package whose modules it picks by name
            if name in _RUN_CALLS:
                first = node.args[0]
                if name in _ARGV_CALLS:  # the program and its arguments, one by one
                    _add_run([w for a in node.args[:64] if (w := string(a))], runs)
                elif isinstance(first, (ast.List, ast.Tuple)):
                    words = [string(e) or "" for e in first.elts]
                    _add_run([w for w in words[:64] if w], runs)
                elif (command := string(first)) is not None:
                    runs |= shell_runs(command)
        elif isinstance(node, (ast.List, ast.Tuple)):
            items = [string(e) for e in node.elts]
            for flag, word in itertools.pairwise(items):
                if flag == "-m" and word:
                    modules.add(word.split(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = _REMOTE_URL.sub(" ", node.value[:100_000])
            refs = References(
                frozenset(_groups(_MODULE_FILE_REF, text) | _groups(_RUN_MODULE_REF, text)),
                frozenset(_groups(_FOLDER_REF, text)),
                frozenset(_groups(_FILE_REF, text)),
                frozenset(_groups(_RUN_MODULE_REF, text)),
            )
            found = found | refs
    return found | References(
        modules=frozenset(modules), imports=frozenset(modules), runs=frozenset(runs)
    )


def references(text: str, name: str = "") -> References:
    """What a file of the task's tests names: Python by its syntax tree, anything else (or
    Python that does not parse) as shell. Generous on purpose: a name read wrongly only
    keeps more of the work product."""
    if name.endswith(".py"):
        found = python_references(text)
        if found is not None:
            return found
    return shell_references(text)


# The files whose text says what a reached entry's code names: Python, shell, notebooks, by
# their names only. An output the tests read (answer.json, a #!-headed answer.txt) is the
# agent's text: it names nothing, or an agent could name its own modules through it.
CODE_SUFFIXES: Final = (".py", ".pyw", ".pyx", ".sh", ".bash", ".ipynb")


@dataclass(frozen=True)
class ModuleEntry:
    """A top-level entry of a verifier's module folder that the agent added or changed."""

    name: str  # its file name
    module: str | None  # the name an import finds it by, if any
    importable: bool  # a module file, or a folder (or link) holding code Python can import
    added: bool  # new (not the image's entry with something changed in it)
    # Its code files (the entry itself, or those in the folder) and what each names.
    code: tuple[tuple[str, References], ...] = ()
    # What Python could import of it (modules, bytecode, extensions, links): what an unreached
    # entry loses; its data files stay (a test that searches for its answer still finds it).
    import_paths: tuple[str, ...] = ()


def module_folders(ground: Ground) -> frozenset[str]:
    """The folders Python may import the agent's modules from while the verifier runs: where it
    starts (``python3 -m`` puts it first on ``sys.path``) and the tests' ``sys.path`` folders."""
    return frozenset(
        posixpath.normpath(s) for s in (ground.workdir, *ground.extra_starts, *ground.module_paths)
    )


def unnamed_candidates(product: WorkProduct, ground: Ground) -> dict[str, str]:
    """The new modules of the work product in a module folder whose name the tests do not
    name themselves (``entry path -> module name``): whether the agent's code the tests reach
    names them is read from their text (:func:`unreached_modules`)."""
    if ground.named is None:
        return {}
    folders = module_folders(ground)
    added = {c.path for c in product.applied if c.kind == "added"}
    found: dict[str, str] = {}
    for change in product.applied:
        folder, name = posixpath.split(change.path)
        if change.kind != "added" or folder not in folders or change.path not in added:
            continue
        module = module_name(name)
        if module is None or module == "__pycache__" or module in ground.named.modules:
            continue
        if ground.declared and under(change.path, ground.declared):
            continue
        found[change.path] = module
    return found


def unreached_modules(entries: Mapping[str, ModuleEntry], named: References) -> list[str]:
    """What Python could import of the new entries that neither ``named`` nor the code they
    reach names, transitively: a test imports ``solution`` (or runs ``/root/run.sh``), whose
    code imports ``helpers``, which is kept too. An entry is reached by its module name (an
    import, ``-m``, ``x.py``) or its whole file name; a folder named as a place only
    (``/root/out/``) keeps its data, and of its code only the files named by their whole name
    (whose code is then read)."""
    reached, known = reach(entries, named)
    hit: list[str] = []
    for path, entry in sorted(entries.items()):
        if not entry.added or not entry.importable or path in reached:
            continue
        placed = entry.module is not None and entry.module in known.places
        hit += [
            p
            for p in entry.import_paths
            if not (placed and p != path and _named_below(p[len(path) + 1 :], known))
        ]
    return hit


def reach(entries: Mapping[str, ModuleEntry], named: References) -> tuple[set[str], References]:
    """The entries ``named`` and the code they reach name, transitively, and all those names."""
    reached: set[str] = set()
    read: set[tuple[str, str]] = set()  # (entry, code file) whose names are known
    known = named
    grew = True
    while grew:
        grew = False
        for path, entry in entries.items():
            imported = entry.name in known.files or (
                entry.module is not None and entry.module in known.modules
            )
            if imported and path not in reached:
                reached.add(path)
                grew = True
            placed = entry.module is not None and entry.module in known.places
            for file, refs in entry.code:
                if (path, file) in read:
                    continue
                if path in reached or (placed and _named_file(file, known)):
                    read.add((path, file))
                    known = known | refs
                    grew = True
    return reached, known


def site_packages(product: WorkProduct, ground: Ground) -> dict[str, str]:
    """The packages the agent installed into a system or user site folder under a name nothing
    else has (:func:`new_site_package`) that the work product carries: ``top entry -> module``."""
    added = {c.path for c in product.applied if c.kind == "added"}
    found: dict[str, str] = {}
    for change in product.applied:
        top = new_site_package(change.path, added, ground.shadow_names)
        if top is not None and top == change.path:
            module = module_name(posixpath.basename(top))
            if module is not None:
                found[top] = module
    return found


def runs_agent_code(product: WorkProduct, ground: Ground, site: Mapping[str, str]) -> bool:
    """Whether the verifier runs code of the agent's at all, read strictly
    (:attr:`References.imports` and :attr:`References.runs` of the tests and test.sh): it
    imports a module of the agent's from its module folders (one the agent added or changed)
    or one of its site packages ``site``, or runs a program of the agent's (an absolute path
    as named, a relative one by its file name, never one named like a file of the tests). A
    name in a message, a file the tests read as text, a word of ``ls`` open nothing: only
    what runs does."""
    named = ground.named
    if named is None:
        return False
    if any(module in named.imports for module in site.values()):
        return True
    folders = module_folders(ground)
    relative = {r for r in named.runs if not r.startswith("/")} - ground.test_files
    for change in product.applied:
        if change.kind == "deleted":
            continue
        folder, name = posixpath.split(change.path)
        module = module_name(name)
        if folder in folders and module is not None and module in named.imports:
            return True
        if change.path in named.runs or name in relative:
            return True
    return False


def unreached_site_packages(
    product: WorkProduct, ground: Ground, site: Mapping[str, str]
) -> list[str]:
    """The site packages (:func:`site_packages`) to leave out: all of them, unless the verifier
    runs code of the agent's (:func:`runs_agent_code`). A library the tests import tries
    optional modules nobody lists (requests' ``simplejson``, urllib3's ``brotlicffi``, pandas'
    ``numexpr``), and Python finds one the agent installed by itself: its code would run
    inside the grader though the tests never name it. Once the verifier runs code of the
    agent's, that code runs inside the grader anyway, and everything it installed is kept (a
    dependency may be imported from compiled code, which no reading sees)."""
    if not site or runs_agent_code(product, ground, site):
        return []
    return sorted(site)


def exclude_site_packages(product: WorkProduct, tops: Iterable[str]) -> None:
    """Move everything below the site packages ``tops`` to the excluded ones: an installed
    package is left out whole (a folder left behind would import as an empty namespace
    package, and a library that tries it would break on it)."""
    roots = set(tops)
    if not roots:
        return
    for change in [c for c in product.applied if any(a in roots for a in ancestors(c.path))]:
        product.applied.remove(change)
        product.exclude(change, "unnamed-module")


def _named_below(relative: str, known: References) -> bool:
    """Whether a file inside a folder named as a place is named: itself, or a package folder on
    its way (``plugins/six.py`` when the code imports ``plugins``, by a computed name too)."""
    return any(_named_file(part, known) for part in relative.split("/") if part)


def _named_file(name: str, known: References) -> bool:
    """Whether a file in a folder named as a place is named itself: by its whole name, or as a
    module the code imports (``sys.path.insert(0, "/root/proj/lib"); import helper``: inside
    another entry it is importable only through such a path)."""
    module = module_name(name)
    return name in known.files or (module is not None and module in known.modules)


def exclude_unnamed(product: WorkProduct, paths: Iterable[str]) -> None:
    """Move the work product's ``paths`` (an unreached entry's :attr:`ModuleEntry.import_paths`)
    to the excluded ones."""
    hit = set(paths)
    for change in [c for c in product.applied if c.path in hit]:
        product.applied.remove(change)
        product.exclude(change, "unnamed-module")


@dataclass(frozen=True)
class Ground:
    """The facts of one trial that the rule needs."""

    workdir: str
    skills_dir: str | None = None
    declared: tuple[str, ...] = ()  # [verifier].work_product
    # Folders test.sh changes into (``cd /app``): verifier starting points besides the workdir.
    extra_starts: tuple[str, ...] = ()
    # Folders the tests put on Python's module path (``PYTHONPATH=`` in test.sh,
    # ``sys.path.insert(0, "/root/workspace")`` in a test module).
    module_paths: tuple[str, ...] = ()
    # Top-level module names the image's Python resolves (its stdlib and site folders).
    image_modules: frozenset[str] = frozenset()
    # Module names test.sh installs (``pip install X``, ``uvx --with X``, ``uv add X``).
    installed_modules: frozenset[str] = frozenset()
    path_dirs: tuple[str, ...] = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin")
    # Whether the verifier's Python keeps its bytecode under the trial's fresh
    # PYTHONPYCACHEPREFIX (no -I/-E in test.sh, no task override): then no __pycache__ folder
    # is ever read, and the agent's are left out without a regrade.
    pycache_isolated: bool = True
    # Whether test.sh builds the project it starts in (``pip install .``, ``uv sync``): then
    # that project's own files there (pyproject.toml, setup.py, setup.cfg) are what it names.
    builds_project: bool = False
    # Whether test.sh runs npm there (``npm install``, ``npm run build``): then the node
    # project's own files (package.json, its lock files) are what it names.
    builds_node_project: bool = False
    # Folders the verifier's configuration names ([verifier].env values, test.sh's
    # --find-links and file:// indexes): what its installers read there is the image's.
    input_dirs: tuple[str, ...] = ()
    # The names of the task's test code (tests/test.sh, its test_*.py and *_test.py): a
    # verifier that looks for its tests (``find / -name test_outputs.py | head -1``) must not
    # find the agent's.
    test_names: frozenset[str] = frozenset()
    # Every file name of the task's tests/: a folder of the agent's by such a name is where
    # test.sh's `cp /tests/<name> <dir>/` would land inside (and `python3 <dir>` run the
    # folder's __main__.py).
    test_files: frozenset[str] = frozenset()
    # The skill folders the tests name (:func:`skill_places`): they may validate with a skill's
    # library from the first of several places that exists; relative ones anywhere.
    skill_places: frozenset[str] = frozenset()
    # Files test.sh's own commands write (:func:`verifier_outputs`; ``X.*``: every ``X.<n>``).
    verifier_outputs: tuple[str, ...] = ()
    # Folders node resolves imports from that are not the agent's: those of the image's
    # JavaScript files and of the tests' own scripts test.sh runs with node (None: every
    # folder counts, the image had too many to list).
    node_dirs: tuple[str, ...] | None = ()
    # What the task's tests import and run (:func:`references`): a module the agent put in a
    # module folder counts as work product only if they, or its code they reach, name it. None: the ``unnamed-module`` rule is off (the facts are unknown).
    named: References | None = None

    @functools.cached_property
    def node_scopes(self) -> frozenset[str]:
        """Every folder at or above one of :attr:`node_dirs` but ``/`` (its own rules)."""
        return frozenset(a for d in self.node_dirs or () for a in ancestors(d)[:-1])

    @functools.cached_property
    def shadow_names(self) -> frozenset[str]:
        """Lower case: compared so (``PyPDF2`` is what ``pip install pypdf2`` installs)."""
        return self.anywhere_shadow_names | {name.lower() for name in self.image_modules}

    @functools.cached_property
    def anywhere_shadow_names(self) -> frozenset[str]:
        """Lower case: the names every verifier's Python imports by itself or through its test
        runner, whatever its module path (the standard library, its optional imports, the test
        runner's family, what test.sh installs): a module of the agent's by such a name is left
        out wherever it is (``ground-module``), since no reading of test.sh can list every
        folder a Python of the verifier's starts in or is pointed at."""
        names = (
            frozenset(sys.stdlib_module_names)
            | STDLIB_OPTIONAL_IMPORTS
            | RUNNER_MODULES
            | self.installed_modules
        )
        return frozenset(name.lower() for name in names)


@dataclass(frozen=True)
class Excluded:
    path: str
    change: str
    rule: str

    def as_dict(self) -> dict[str, str]:
        text = self.path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return {"path": text, "change": self.change, "rule": self.rule}


@dataclass
class WorkProduct:
    """The agent's changes sorted: what is applied on a fresh copy of the image, what not."""

    applied: list[Change] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)

    @property
    def needs_regrade(self) -> bool:
        """Whether grading in the agent's sandbox could differ from grading the image plus
        the work product: anything left out that is not benign."""
        return any(item.rule != "benign" for item in self.excluded)

    def exclude(self, change: Change, rule: str) -> None:
        self.excluded.append(Excluded(change.path, change.kind, rule))


def under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def ancestors(path: str) -> list[str]:
    """``path`` and every folder above it, ``/`` last."""
    path = posixpath.normpath(path)
    found = [path]
    while path != "/":
        path = posixpath.dirname(path)
        found.append(path)
    return found


# An absolute path or a file:// URL in a value of the verifier's environment or after an
# installer's index option in test.sh.
_ABSOLUTE = re.compile(r"(?:file://)?(/[^\s:;,\"'=]+)")
_INDEX_OPTION = re.compile(
    r"(?:--find-links|--index-url|--extra-index-url|--index|--default-index)[=\s]+"
    r"[\"']?(?:file://)?(/[^\s\"';&|]+)"
    r"|\b(?:PIP|UV)_[A-Z_]*(?:FIND_LINKS|INDEX_URL|INDEX|CACHE_DIR|CONFIG_FILE)=[\"']?"
    r"(?:file://)?(/[^\s\"';&|]+)"
)
# pip's and uv's short forms (-f DIR, -i URL) only on an installer's own command: elsewhere in a
# test.sh they are a shell test (`[ -f /root/x.py ]`) or another tool's option (`sed -i`).
_INSTALLER_COMMAND = re.compile(
    r"\b(?:pip3?|uv\s+pip|uv|python3?(?:\.\d+)?\s+-m\s+pip)\s+(?:install|add|sync|download)\b"
    r"[^\n;&|]*"
)
_SHORT_INDEX_OPTION = re.compile(r"(?<!\S)-[fi](?:=|\s+)[\"']?(?:file://)?(/[^\s\"';&|]+)")
_INSTALLER_KEY = re.compile(
    r"^(?:PIP|UV|NPM_CONFIG|YARN|CONDA|POETRY|PDM|HATCH|PIPX)_|INDEX|FIND_LINKS|CACHE|CONFIG|"
    r"REGISTRY|MIRROR"
)
_NOT_INPUT_DIRS: Final = ("/", "/tmp", "/root", "/home", "/usr", "/usr/local")
# The image's own settings for the tools of the real verifier shapes (pip, uv, curl, git, npm):
# the installers' own and where a tool reads its configuration, data or user packages. Not
# every name with CONFIG or CACHE in it, as [verifier].env's: an image's `APP_CONFIG` may name
# the very file the task asks the agent to fix.
_IMAGE_TOOL_KEY = re.compile(
    r"^(?:PIP|UV|NPM_CONFIG|YARN|CONDA|POETRY|PDM|HATCH|PIPX)_|CACHE|"
    r"^(?:XDG_(?:CONFIG|CACHE|DATA)_HOME|XDG_CONFIG_DIRS|CURL_HOME|WGETRC|PYTHONUSERBASE|"
    r"GIT_CONFIG_(?:GLOBAL|SYSTEM)|NODE_PATH|"
    # the model and data caches libraries the tests import load from (torch.hub's
    # checkpoints, Hugging Face's, NLTK's corpora, matplotlib's): outside a home's dot
    # folders (home-config), an image may put them in /tmp or the working directory's sibling
    r"TORCH_HOME|HF_HOME|SENTENCE_TRANSFORMERS_HOME|KERAS_HOME|NLTK_DATA|MPLCONFIGDIR)$"
)


def names_of_tests(test_files: Iterable[str]) -> frozenset[str]:
    """The names of test code among the task's test files (:attr:`Ground.test_names`)."""
    return frozenset(
        name
        for name in (posixpath.basename(f) for f in test_files)
        if name == "test.sh"
        or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))
    )


def file_names(names: Iterable[str]) -> frozenset[str]:
    """The names of a task's test files (:attr:`Ground.test_files`): what test.sh copies by name
    (``cp /tests/gen_ground_truth.mjs /root/``)."""
    return frozenset(name for name in names if name and "/" not in name)


# Where the agent runtimes keep skills (``~/.claude/skills``, opencode's ``~/.opencode/skill``,
# a task's own ``environment/skills``): a skill is a folder directly below one of these.
SKILL_FOLDERS: Final = frozenset({"skills", "skill"})
# A path a text names that runs through a skills folder to a skill (and maybe on).
_SKILL_PLACE = re.compile(
    r"(?<![\w.-])((?:/|\./)?(?:[\w.+-]{1,128}/){0,16}?(?:skills|skill)/[\w.+-]{1,128})(?![\w.+-])"
)


def skill_places(text: str) -> frozenset[str]:
    """The skill folders a text of the tests names (``/app/environment/skills/dialogue_graph``
    of ``'/app/environment/skills/dialogue_graph/scripts'``; relative ones as written): where
    the tests may take a skill's library from (:attr:`Ground.skill_places`)."""
    found = set()
    for match in _SKILL_PLACE.finditer(text[:4_000_000]):
        place = match.group(1)
        if place.startswith("./"):
            place = place[2:]
        if ".." not in place.split("/"):
            found.add(place)
    return frozenset(found)


def input_dirs(test_script: str, verifier_env: Mapping[str, str]) -> tuple[str, ...]:
    """Folders the verifier's configuration names (:attr:`Ground.input_dirs`): every absolute
    path in a ``[verifier].env`` value of an installer's setting (``PIP_*``, ``UV_*``, an
    index, a cache, a configuration file), and test.sh's ``--find-links``/``--index-url
    file://``/``PIP_FIND_LINKS=`` folders. Folders so wide that naming them says nothing (``/``,
    ``/tmp``, a home, ``/usr``) are not taken; the other rules look after them."""
    found: list[str] = []
    for key, value in verifier_env.items():
        if _INSTALLER_KEY.search(key.upper()):  # not PYTHONPATH: the agent's modules go there
            found += [m.group(1) for m in _ABSOLUTE.finditer(value)]
    for match in _INDEX_OPTION.finditer(test_script):
        found.append(match.group(1) or match.group(2))
    for command in _INSTALLER_COMMAND.finditer(test_script):
        found += [m.group(1) for m in _SHORT_INDEX_OPTION.finditer(command.group(0))]
    dirs = {posixpath.normpath("/" + d.lstrip("/")) for d in found}
    return tuple(sorted(d for d in dirs if d not in _NOT_INPUT_DIRS and not d.startswith("/tmp/")))


# Converters whose last operand is the file they write (and OUT.<n>, OUT-<n>.<ext>: `ssconvert
# -S IN OUT` writes one file a sheet, OUT.0, OUT.1, ...: reserves-at-risk-calc,
# shock-analysis-demand, weighted-gdp-calc; pdftoppm's pages), given an input operand first.
_CONVERTERS: Final = frozenset(
    {"ssconvert", "convert", "magick", "ffmpeg", "pdftotext", "pdftoppm", "pdftocairo", "sox"}
)
_OUTPUT_OPTIONS: Final = frozenset({"-o", "--output", "-O", "--output-document", "--outfile"})
# Their -o/-O/--output names a file they write.
_OUTPUT_TOOLS: Final = frozenset({"pandoc", "curl", "wget", "unoconv", "sort", "jq", "yq"})
_HEREDOC = re.compile(r"<<-?\s*([\"']?)([A-Za-z_][A-Za-z0-9_]*)\1")
_COMMAND_BREAKS: Final = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;", "|&"})
_KEYWORDS: Final = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}"})
_NOT_OUTPUTS: Final = ("/dev", "/proc", *HARNESS_ROOTS)


def verifier_outputs(test_script: str, workdir: str) -> tuple[str, ...]:
    """What test.sh's own commands write (:attr:`Ground.verifier_outputs`): the target of a
    redirection (``> file``, ``>> file``) or of ``tee``, the file a converter writes (``cd
    /root/output; ssconvert -S rar_result.xlsx sheet.csv``: ``/root/output/sheet.csv`` and
    ``/root/output/sheet.csv.*``; ``OUT-*`` too: pdftoppm's pages), and a download's ``-o``/``-O``. A file the verifier makes is
    the verifier's: an agent's file in its place is what the tests would read should the command
    fail (``|| true``), as if the verifier had written it. Relative paths are taken from the
    folder test.sh is in by then (its ``cd``s followed in order); heredoc bodies are skipped."""
    values = shell_values(test_script)
    found: list[str] = []
    _script_outputs(test_script, posixpath.normpath(workdir), values, found, depth=0)
    outputs = {
        p
        for p in found
        if not under(p.removesuffix(".*").removesuffix("-*"), _NOT_OUTPUTS)
        and p.rstrip(".*-") not in ("", "/")
    }
    return tuple(sorted(outputs))


def _script_outputs(
    test_script: str, cwd: str, values: Mapping[str, list[str]], found: list[str], depth: int
) -> str:
    """:func:`verifier_outputs` of one script (a ``bash -c`` string's too); its last folder."""
    lines = test_script.replace("\\\n", " ").splitlines()
    skip_until: str | None = None
    for line in lines:
        if skip_until is not None:
            if line.strip() == skip_until:
                skip_until = None
            continue
        if (doc := _HEREDOC.search(line)) is not None:
            skip_until = doc.group(2)
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            lexer.commenters = "#"
            tokens = list(lexer)
        except ValueError:
            continue
        # A write guarded by a test of its own target (`[ -f x ] || echo none > x`) makes the
        # file only where the agent did not: the agent's is its own then.
        guarded = set(_GUARD.findall(line))
        command: list[str] = []
        for token in [*tokens, ";"]:
            if token in _COMMAND_BREAKS:
                before = len(found)
                cwd = _outputs_of(command, cwd, values, found, depth)
                if guarded:
                    found[before:] = [f for f in found[before:] if not _is_guarded(f, guarded, cwd)]
                command = []
            else:
                command.append(token)
    return cwd


_GUARD = re.compile(r"(?:\[\[?|\btest)\s+!?\s*-[efsr]\s+[\"']?([^\s\"';&|\]]+)")
_SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh"})
_OFFICE: Final = frozenset({"soffice", "libreoffice", "lowriter", "localc", "loimpress"})


def _is_guarded(output: str, guarded: set[str], cwd: str) -> bool:
    names = {posixpath.normpath(posixpath.join(cwd, g)) for g in guarded}
    return output.removesuffix(".*").removesuffix("-*") in names or output in names


def _outputs_of(
    words: list[str], cwd: str, values: Mapping[str, list[str]], found: list[str], depth: int
) -> str:
    """Adds what one simple command writes to ``found``; the folder test.sh is in after it."""

    def place(word: str) -> str | None:
        options = [w for w in expand(word, values) if w and "$" not in w and "`" not in w]
        if not options:
            return None
        return posixpath.normpath(posixpath.join(cwd, options[0]))

    plain: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        if word in (">", ">>", ">|", "&>", "&>>") or (word[:-1].isdigit() and word[-1:] == ">"):
            if at + 1 < len(words) and (target := place(words[at + 1])) is not None:
                found.append(target)
            at += 2
            continue
        if word.isdigit() and at + 1 < len(words) and words[at + 1].startswith(">"):
            at += 1  # the fd of `2> file`, `2>&1`
            continue
        if word.startswith(">&") or word == "&":
            at += 1
            continue
        plain.append(word)
        at += 1
    while plain and (plain[0] in _KEYWORDS or _ASSIGNMENT.match(plain[0])):
        plain.pop(0)
    # wrappers that run the rest as a command: `xargs [-I{}] prog`, `env X=1 prog`, `$CONV`
    while plain and posixpath.basename(plain[0]) in ("xargs", "env", "nohup", "timeout", "time"):
        head = posixpath.basename(plain.pop(0))
        while plain and (plain[0].startswith("-") or _ASSIGNMENT.match(plain[0])):
            option = plain.pop(0)
            if head == "xargs" and option in ("-I", "-n", "-P", "-d", "-L") and plain:
                plain.pop(0)
        if head == "timeout" and plain:
            plain.pop(0)  # its duration
    if not plain:
        return cwd
    programs = [w for w in expand(plain[0], values) if w and "$" not in w] or [plain[0]]
    program, args = posixpath.basename(programs[0]), plain[1:]
    if program in _SHELLS and depth < 3:
        for option, script in itertools.pairwise(args):
            if option in ("-c", "-lc", "-ec", "-xc", "-euc"):
                _script_outputs(script, cwd, values, found, depth + 1)
        return cwd
    if program in _OFFICE:
        _office_outputs(args, place, found)
        return cwd
    if program in ("cd", "pushd") and args and args[0] != "-":
        return place(args[-1] if args[0] == "--" else args[0]) or cwd
    if program == "tee":
        found += [t for a in args if not a.startswith("-") and (t := place(a)) is not None]
    elif program in _CONVERTERS:
        operands = [a for a in args if not a.startswith("-")]
        if len(operands) >= 2 and (target := place(operands[-1])) is not None:
            found += [target, f"{target}.*", f"{target}-*"]
    elif program in _OUTPUT_TOOLS:
        for option, value in itertools.pairwise(args):
            if option in _OUTPUT_OPTIONS and (target := place(value)) is not None:
                found.append(target)
        for arg in args:
            if arg.startswith("--output=") and (target := place(arg[9:])) is not None:
                found.append(target)
    return cwd


def _office_outputs(args: list[str], place: Callable[[str], str | None], found: list[str]) -> None:
    """``soffice --headless --convert-to csv[:filter] --outdir DIR IN...``: DIR/<stem>.csv."""
    extension = outdir = None
    inputs: list[str] = []
    at = 0
    while at < len(args):
        arg = args[at]
        if arg in ("--convert-to", "--outdir") and at + 1 < len(args):
            if arg == "--convert-to":
                extension = args[at + 1].split(":", 1)[0]
            else:
                outdir = args[at + 1]
            at += 2
            continue
        if not arg.startswith("-"):
            inputs.append(arg)
        at += 1
    if extension is None:
        return
    for source in inputs:
        stem = posixpath.splitext(posixpath.basename(source))[0]
        folder = outdir if outdir is not None else "."
        if (target := place(posixpath.join(folder, f"{stem}.{extension}"))) is not None:
            found.append(target)


def is_verifier_output(path: str, outputs: Iterable[str]) -> bool:
    """Whether ``path`` is, or is inside, a file test.sh writes (:func:`verifier_outputs`)."""
    for output in outputs:
        if output.endswith((".*", "-*")):
            if path.startswith(output[:-1]) and len(path) > len(output) - 1:
                return True
        elif path == output or path.startswith(output + "/"):
            return True
    return False


@dataclass(frozen=True)
class ImageModuleQuery:
    """What makes one of the agent's new modules in a folder of the image an ``image-module``:
    one of ``siblings`` (shell globs) being the image's, or, where its name is one of the
    image's libraries, ``package_init`` missing (the folder is no package)."""

    siblings: tuple[str, ...] = ()
    package_init: str | None = None
    # Paths whose existence (not made by the agent) makes it one: a folder as ``D/X/.``.
    exact: tuple[str, ...] = ()


# CommonJS's require('./X') tries X, X.js, X.json, X.node, then the folder X/: a new file of
# the agent's earlier in that order wins over the image's later one.
_REQUIRE_ORDER: Final = ("", ".js", ".json", ".node")


def node_shadow_queries(product: WorkProduct, ground: Ground) -> dict[str, ImageModuleQuery]:
    """The agent's new files that may win a relative ``require`` over a file of the image's
    beside them, in a folder at or below one of the image's or the tests' scripts: ``parts.js``
    or an extensionless ``parts`` beside the image's ``parts.json``, ``lib.js`` beside its
    ``lib/`` (the tests' generator requires the image's input, which requires its neighbours)."""
    if ground.node_dirs == ():
        return {}
    added = {c.path for c in product.applied if c.kind == "added"}
    queries: dict[str, ImageModuleQuery] = {}
    for path in sorted(added):
        folder, name = posixpath.split(path)
        if folder in added or "node_modules" in path.split("/"):
            continue
        if ground.node_dirs is not None and not under(folder, ground.node_dirs):
            continue
        stem, suffix = posixpath.splitext(name)
        if suffix not in _REQUIRE_ORDER[1:]:
            stem, suffix = name, ""  # an extensionless file is tried first of all
        if not stem or stem.startswith("."):
            continue
        rank = _REQUIRE_ORDER.index(suffix)
        base = posixpath.join(folder, stem)
        later = [base + ext for ext in _REQUIRE_ORDER[rank + 1 :] if ext]
        queries[path] = ImageModuleQuery(exact=(*later, f"{base}/."))
    return queries


def image_module_queries(product: WorkProduct, ground: Ground) -> dict[str, ImageModuleQuery]:
    """The agent's new modules and packages in folders of the image (not one the agent made),
    outside the places its work goes (the working directory, the folders test.sh enters or
    puts on ``sys.path``: their own rules), with what to look for in the sandbox. Python's path
    finder takes a package folder before a module file of the same name in the same folder,
    and an extension before source: such a file wins over the image's without changing it
    (multilingual-video-dubbing's tests load ``/opt/SpeechMOS`` through torch.hub, which puts
    that folder first on ``sys.path`` while its model imports torchaudio)."""
    added = {c.path for c in product.applied if c.kind == "added"}
    own = [ground.workdir, *ground.extra_starts, *ground.module_paths]
    libraries = {name.lower() for name in ground.image_modules}
    inits = {posixpath.dirname(p) for p in added if posixpath.basename(p).startswith("__init__.")}
    queries: dict[str, ImageModuleQuery] = {}
    for path in sorted(added):
        folder, name = posixpath.split(path)
        module = module_name(name)
        if module is None or folder in added or under(path, own):
            continue
        package = path in inits
        if not package and not is_module_file(name):
            continue
        stem = shlex.quote(posixpath.join(folder, module))
        siblings: tuple[str, ...] = ()
        if package:
            siblings = (f"{stem}.py", f"{stem}.pyc", f"{stem}.so", f"{stem}.*.so")
        elif name.endswith(".so"):
            siblings = (f"{stem}.py", f"{stem}.pyc")
        package_init = (
            posixpath.join(folder, "__init__.py") if module.lower() in libraries else None
        )
        if siblings or package_init:
            queries[path] = ImageModuleQuery(siblings, package_init)
    return queries


def image_module_script(queries: Mapping[str, ImageModuleQuery]) -> str:
    """One shell command printing which of the queried paths exist (globs expanded)."""
    words = [w for q in queries.values() for w in q.siblings]
    words += [shlex.quote(q.package_init) for q in queries.values() if q.package_init]
    words += [shlex.quote(w) for q in queries.values() for w in q.exact]
    return "for p in " + " ".join(words) + '; do [ -e "$p" ] && printf "%s\\n" "$p"; done; true'


def image_module_hits(
    queries: Mapping[str, ImageModuleQuery], present: Collection[str], added: Collection[str]
) -> list[str]:
    """The queried entries that are ``image-module``s, given the paths found (``present``)."""
    found = set(present) - set(added)  # a sibling the agent made is no image's module
    hits = []
    for path, query in queries.items():
        folder = posixpath.dirname(path)
        module = module_name(posixpath.basename(path)) or ""
        stem = posixpath.join(folder, module) + "."
        beside = any(f.startswith(stem) and posixpath.dirname(f) == folder for f in found)
        no_package = query.package_init is not None and query.package_init not in present
        image = [e for e in query.exact if e in present and e.removesuffix("/.") not in added]
        if beside or no_package or image:
            hits.append(path)
    return hits


def image_python_paths(env: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The folders the image's own ``PYTHONPATH`` puts first on every Python's module path of
    the verifier's (dialogue-parser's image sets one): module folders like the working
    directory, whether or not the image made them (:attr:`Ground.module_paths`)."""
    found: list[str] = []
    for key, value in env:
        if key == "PYTHONPATH":
            found += [p for p in value.split(":") if p.startswith("/")]
    return tuple(dict.fromkeys(posixpath.normpath(p) for p in found))


def image_input_dirs(env: Iterable[tuple[str, str]], workdir: str) -> tuple[str, ...]:
    """What the image's own environment names for the verifier's tools (:attr:`Ground.input_dirs`):
    every absolute path in a setting of an installer or a tool of the verifier's, under ``/tmp``
    too (speaker-diarization-subtitles sets ``PIP_CONSTRAINT=/tmp/constraints.txt``: the
    agent must not add its own wheel to it). The agent cannot change test.sh's environment, only
    the files it names. Never the working directory or a folder above it (the agent's outputs)."""
    found: set[str] = set()
    for key, value in env:
        if _IMAGE_TOOL_KEY.search(key.upper()):
            found |= {posixpath.normpath(m.group(1)) for m in _ABSOLUTE.finditer(value)}
    above = set(ancestors(workdir))
    return tuple(sorted(d for d in found if d not in _NOT_INPUT_DIRS and d not in above))


# Distributions whose import name is not their name, among what real test.sh files install
# (and their common neighbours): the look after the verifier finds these too, unless the
# agent's module deleted the installed one first (red team 3, shadow-lib-hide).
IMPORT_NAMES: Final = {
    "pillow": ("PIL",),
    "python_docx": ("docx",),
    "python_pptx": ("pptx",),
    "opencv_python": ("cv2",),
    "opencv_python_headless": ("cv2",),
    "opencv_contrib_python": ("cv2",),
    "beautifulsoup4": ("bs4",),
    "pyyaml": ("yaml", "_yaml"),
    "scikit_learn": ("sklearn",),
    "scikit_image": ("skimage",),
    "pymupdf": ("fitz", "pymupdf"),
    "protobuf": ("google",),
    "python_dateutil": ("dateutil",),
    "pyjwt": ("jwt",),
    "attrs": ("attr", "attrs"),
    "hf_doc_builder": ("doc_builder",),
    "pyannote_metrics": ("pyannote",),
    "pyannote_audio": ("pyannote",),
    "faiss_cpu": ("faiss",),
    "mysql_connector_python": ("mysql",),
    "psycopg2_binary": ("psycopg2",),
    "pytorch_lightning": ("pytorch_lightning", "lightning"),
    "tensorflow_cpu": ("tensorflow",),
    "pycryptodome": ("Crypto",),
    "pyserial": ("serial",),
    "pyzmq": ("zmq",),
    "python_magic": ("magic",),
    "ruamel_yaml": ("ruamel",),
    "msgpack_python": ("msgpack",),
    "google_cloud_storage": ("google",),
    "xlsxwriter": ("xlsxwriter",),
}


def installed_modules(test_script: str) -> frozenset[str]:
    """The module names a test.sh installs, as import names (``pytest-json-ctrf`` →
    ``pytest_json_ctrf``); generous on purpose: a wrong extra name only leaves out more."""
    names: set[str] = set()
    for match in _INSTALL_LINE.finditer(test_script):
        for words in match.groups():
            for word in (words or "").split():
                if word.startswith("-") or "/" in word or word.startswith(("$", '"', "'")):
                    continue
                base = re.split(r"[\[=<>!~;@ ]", word, maxsplit=1)[0]
                if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", base):
                    name = base.lower().replace("-", "_").replace(".", "_")
                    names.add(name)
                    names.update(IMPORT_NAMES.get(name, ()))
                    # a pytest plugin's module is often its name's tail (pytest-json-ctrf:
                    # ``ctrf``), known here even if its code deletes it while the verifier runs
                    if name.startswith("pytest_") and len(name) > len("pytest_"):
                        names.update({name[len("pytest_") :], name.rsplit("_", 1)[1]})
    return frozenset(names)


# A project's own definition, which a test.sh that builds it (pip install .) reads by name.
PROJECT_FILES: Final = frozenset({"pyproject.toml", "setup.py", "setup.cfg"})
_BUILDS_PROJECT = re.compile(
    r"(?:pip3?|uv\s+pip|python3?\s+-m\s+pip)\s+install\b[^\n;&|]*?\s(?:-e\s+)?\./?(?=[\s;&|]|$)"
    r"|\buv\s+(?:sync|build)\b|python3?\s+-m\s+build\b",
    re.MULTILINE,
)


def builds_project(test_script: str) -> bool:
    """Whether test.sh builds the project of the folder it runs in (:attr:`Ground.builds_project`)."""
    return _BUILDS_PROJECT.search(test_script) is not None


# A node project's own definition, which a test.sh that runs npm (or yarn, pnpm) there reads by
# name: fix-visual-stability's `cd /app; npm install; npm run build`.
NODE_PROJECT_FILES: Final = frozenset(
    {"package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml"}
)
_BUILDS_NODE = re.compile(
    r"\b(?:npm|yarn|pnpm)\s+(?:[a-z-]+\s+)*?(?:install|ci|i|add|run|run-script|start|test|build|"
    r"exec|rebuild|pack)\b|\bnpx\s"
)


def builds_node_project(test_script: str) -> bool:
    """Whether test.sh runs npm on the node project where it starts
    (:attr:`Ground.builds_node_project`); ``node script.mjs`` alone does not."""
    return _BUILDS_NODE.search(test_script) is not None


def pycache_isolated(test_script: str, verifier_env: Mapping[str, str]) -> bool:
    """Whether nothing in test.sh or the task's verifier environment makes Python read the
    ``__pycache__`` folders beside modules (see :attr:`Ground.pycache_isolated`)."""
    if "PYTHONPYCACHEPREFIX" in verifier_env or "PYTHONPYCACHEPREFIX" in test_script:
        return False
    return re.search(r"python[0-9.]*\s+-[A-Za-z]*[IE]", test_script) is None


# A shell word's literal value assigned to a name (``APP_DIR=/app``, ``export X="/srv/a"``).
_ASSIGNMENT = re.compile(
    r"(?:^|[\s;&|(])(?:(?:export|local|readonly|declare(?:\s+-\w+)*)\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)=([\"']?)([^\s\"';&|()`$]*)\2(?=[\s;&|)]|$)",
    re.MULTILINE,
)
_VARIABLE = re.compile(
    r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=]([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))"
)
# Folders test.sh changes into: `cd DIR`, `pushd DIR` (quoted or not, through variables, inside
# a `bash -c '...'` string too).
_CHANGE_DIR = re.compile(r"(?:^|[\s;&|(\"'])(?:cd|pushd)\s+(?:--\s+)?([\"']?)([^\s\"';&|)]+)\1")
# Python run on a script: the script's folder is first on its module path. `python3 [-u ...]
# SCRIPT`, `uv run [--opts] SCRIPT.py`, and a `.py` run by its own path at a command's start.
_PYTHON_SCRIPT = re.compile(
    r"(?:^|[\s;&|(/\"'])python(?:3(?:\.\d+)?)?[ \t]+((?:-[A-Za-z]+[ \t]+)*)([\"']?)"
    r"([^\s\"';&|)<>-][^\s\"';&|)<>]*)\2"
)
_UV_RUN_SCRIPT = re.compile(
    r"\buv[ \t]+run[ \t]+(?:--?[A-Za-z][\w-]*(?:[= ](?!\S+\.py\b)\S+)?[ \t]+)*([\"']?)"
    r"([^\s\"';&|)]+\.py)\1"
)
_RUN_BY_PATH = re.compile(
    r"(?:^|[;&|(]|\b(?:then|do|else)\s)\s*([\"']?)((?:/|\./)[^\s\"';&|)]+\.py)\1", re.MULTILINE
)


# `NAME="${OTHER:-/literal}"`: the default is a value NAME takes.
_DEFAULT_ASSIGNMENT = re.compile(
    r"(?:^|[\s;&|(])(?:(?:export|local|readonly|declare(?:\s+-\w+)*)\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)=([\"']?)\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=]([^}\s\"'$`]*)\}\2"
    r"(?=[\s;&|)]|$)",
    re.MULTILINE,
)


def shell_values(test_script: str) -> dict[str, list[str]]:
    """Every literal value test.sh assigns to each name, in order (``$HOME`` is the verifier's
    home, ``/root``, unless test.sh sets it), and the default of ``NAME="${NAME:-/root/v}"``."""
    values: dict[str, list[str]] = {"HOME": ["/root"]}
    assignments = [(m.start(), m.group(1), m.group(3)) for m in _ASSIGNMENT.finditer(test_script)]
    assignments += [
        (m.start(), m.group(1), m.group(3)) for m in _DEFAULT_ASSIGNMENT.finditer(test_script)
    ]
    for _, name, value in sorted(assignments):
        if name == "HOME" and values["HOME"] == ["/root"]:
            values["HOME"] = []
        values.setdefault(name, []).append(value)
    return values


def expand(word: str, values: Mapping[str, list[str]], *, depth: int = 0) -> list[str]:
    """The values a shell word may take through the literal assignments ``values`` (each value
    of each name: a name assigned twice gives both); none when a name has no known value."""
    if word == "~" or word.startswith("~/"):
        word = "$HOME" + word[1:]
    match = _VARIABLE.search(word)
    if match is None:
        return [word]
    if depth > 4:
        return []
    name = match.group(1) or match.group(3)
    found: list[str] = []
    choices = values.get(name, [])[:8]
    if match.group(2) is not None:  # ${NAME:-default}: the default too
        choices = [*choices, match.group(2)]
    for value in choices:
        found += expand(
            word[: match.start()] + value + word[match.end() :], values, depth=depth + 1
        )
    return found[:32]


# uv told to work in a project folder without a cd: `uv --directory DIR run`, `uv run
# --project DIR`, `uv init DIR` (then `uv add` there through --directory).
_UV_INIT_VALUE = (
    r"(?:-p|--(?:python|name|build-backend|vcs|author-from|description|cache-dir|config-file|"
    r"color|index|index-url|default-index))"
)
_UV_FOLDER = re.compile(
    r"\buvx?\b[^\n;&|]*?[ \t]--(?:directory|project)(?:[ \t]+|=)([\"']?)([^\s\"';&|)]+)\1"
    rf"|\buv[ \t]+init[ \t]+(?:{_UV_INIT_VALUE}(?:=\S+|[ \t]+\S+)[ \t]+"
    rf"|(?!{_UV_INIT_VALUE}\b)--?[A-Za-z][\w-]*(?:=\S+)?[ \t]+)*"
    r"([\"']?)([^\s\"';&|)-][^\s\"';&|)]*)\3"
)


def start_folders(test_script: str) -> tuple[str, ...]:
    """Folders a test.sh changes into (``cd /app/lib``, ``pushd "$APP_DIR"`` with
    ``APP_DIR=/app``, ``cd "${DIR:-/root/verify}"``) or has uv work in (``uv --directory
    /root/verify run``, ``uv init /root/verify``); a relative one as written (the caller joins
    it to the workdir)."""
    values = shell_values(test_script)
    found: list[str] = []
    words = [m.group(2) for m in _CHANGE_DIR.finditer(test_script)]
    words += [m.group(2) or m.group(4) for m in _UV_FOLDER.finditer(test_script)]
    for word in words:
        for folder in expand(word, values):
            if folder and folder != "-" and "$" not in folder and "`" not in folder:
                found.append(posixpath.normpath(folder))
    return tuple(dict.fromkeys(found))


def script_folders(test_script: str, test_files: Collection[str] | None = None) -> tuple[str, ...]:
    """The folders of the Python scripts test.sh runs (``python3 /tmp/gen_truth.py``, ``uv run
    scripts/check.py``, ``/root/check.py``): Python puts a script's own folder first on its
    module path. With ``test_files`` (the names of the tests' files), only those of the tests'
    own scripts (``cp /tests/gen_truth.py /tmp/; python3 /tmp/gen_truth.py``): a script of the
    agent's that test.sh runs is graded code, which imports what it likes, and its folder is
    its project. A relative one as written (the caller joins it to the workdir)."""
    values = shell_values(test_script)
    words: list[str] = []
    for match in _PYTHON_SCRIPT.finditer(test_script):
        options = match.group(1).split()
        if any(o.startswith(("-m", "-c")) or o in ("-", "--") for o in options):
            continue
        words.append(match.group(3))
    words += [m.group(2) for m in _UV_RUN_SCRIPT.finditer(test_script)]
    words += [m.group(2) for m in _RUN_BY_PATH.finditer(test_script)]
    found: list[str] = []
    for word in words:
        for script in expand(word, values):
            if not script or "$" in script or "`" in script or script.startswith("-"):
                continue
            if test_files is not None and posixpath.basename(script) not in test_files:
                continue
            found.append(posixpath.normpath(posixpath.dirname(script) or "."))
    return tuple(dict.fromkeys(found))


# node run on a script: `node [--opts] SCRIPT` (`nodejs` too).
_NODE_SCRIPT = re.compile(
    r"(?:^|[\s;&|(/\"'])node(?:js)?[ \t]+((?:-[^\s]+[ \t]+)*)([\"']?)"
    r"([^\s\"';&|)<>-][^\s\"';&|)<>]*)\2"
)


def node_script_folders(test_script: str, test_files: Collection[str]) -> tuple[str, ...]:
    """The folders of the tests' own scripts test.sh runs with node (``cp
    /tests/gen_ground_truth.mjs /root/; node /root/gen_ground_truth.mjs``): node resolves their
    imports up from there. A script of the agent's that test.sh runs is graded code, whose
    project is its own. A relative one as written (the caller joins it to the workdir)."""
    values = shell_values(test_script)
    found: list[str] = []
    for match in _NODE_SCRIPT.finditer(test_script):
        for script in expand(match.group(3), values):
            if not script or "$" in script or "`" in script:
                continue
            if posixpath.basename(script) in test_files:
                found.append(posixpath.normpath(posixpath.dirname(script) or "."))
    return tuple(dict.fromkeys(found))


def module_paths(
    test_script: str,
    test_sources: Iterable[str] = (),
    verifier_env: Mapping[str, str] | None = None,
    test_files: Collection[str] | None = None,
) -> tuple[str, ...]:
    """Folders the tests put on Python's module path: ``PYTHONPATH`` in test.sh (through its
    variables) or in ``[verifier].env``, the folders of the tests' scripts test.sh runs
    (:func:`script_folders`), ``sys.path.insert``/``append`` of a literal in a test module. A
    relative one as written (the caller joins it to the workdir)."""
    values = shell_values(test_script)
    found: list[str] = []
    settings = re.findall(r"PYTHONPATH=[\"']?([^\s\"';]+)", test_script)
    settings += [v for k, v in (verifier_env or {}).items() if k == "PYTHONPATH"]
    for setting in settings:  # each part on its own: `/root/src:$PYTHONPATH` gives /root/src
        for part in setting.split(":"):
            for value in expand(part, values):
                found += [p for p in value.split(":") if p and "$" not in p]
    found += script_folders(test_script, test_files)
    for source in test_sources:
        found += re.findall(
            r"sys\.path\.(?:insert\(\s*-?\d+\s*,|append\()\s*[rRbBuU]?[\"'](/[^\"']*)[\"']", source
        )
    return tuple(dict.fromkeys(posixpath.normpath(p) for p in found))


def module_name(entry: str) -> str | None:
    match = _MODULE.match(entry)
    return match.group(1) if match else None


def data_folders(changes: Iterable[Change]) -> set[str]:
    """Folders among ``changes`` that hold no module file at any depth (an output folder named
    html/): such a folder is at most a namespace portion, which never shadows what a later
    sys.path folder has and adds nothing to import. A lone entry (a file, or a link whose
    target is not listed) is never one."""
    changes = [c for c in changes if c.kind != "deleted"]
    parents = {posixpath.dirname(c.path) for c in changes}
    # A module file, or an entry whose contents are not listed and whose name Python could
    # import as a package (a link to a folder of modules elsewhere: a portion of a namespace
    # package the image has, `google/protobuf`), makes every folder above it code.
    holders = {
        a
        for c in changes
        if is_module_file(name := posixpath.basename(c.path))
        or (c.path not in parents and name.isidentifier())
        for a in ancestors(posixpath.dirname(c.path))
    }
    return parents - holders


def is_module_file(name: str) -> bool:
    """A file name Python's path finder imports (``x.py``, ``x.pyc``, ``x.cpython-311-….so``)."""
    match = _MODULE.match(name)
    return match is not None and match.group(2) is not None


def is_distribution_metadata(name: str) -> bool:
    """``importlib.metadata`` finds distributions by suffix whatever its case
    (``Plug-1.0.DIST-INFO`` registers a pytest plugin like ``plug-1.0.dist-info``)."""
    return name.lower().endswith(DISTRIBUTION_METADATA)


def new_site_package(path: str, added: set[str], shadows: frozenset[str]) -> str | None:
    """The top-level entry of a system (or user) site folder that ``path`` is in or is, when the agent
    installed it anew (``pip install`` of a package the image lacks) under a module name that
    none of ``shadows`` has; None otherwise. Its metadata (``.dist-info``: entry points, the
    "already satisfied" of a later ``pip install``), ``.pth`` files and start-up hooks are
    never such a package: they stay the image's."""
    match = _SYSTEM_SITE_ENTRY.match(path)
    if match is None:
        return None
    top = f"{match.group(1)}/{match.group(2)}"
    name = match.group(2)
    if top not in added or is_distribution_metadata(name) or name == "__pycache__":
        return None
    module = module_name(name)
    if module is None or module.lower() in shadows or module in ("sitecustomize", "usercustomize"):
        return None
    return top


def _home_entry(path: str) -> str | None:
    """The name of the home folder's entry ``path`` is in (``.config`` for
    ``/root/.config/uv/uv.toml``), for ``/root`` and ``/home/<user>``."""
    parts = path.strip("/").split("/")
    if parts[0] == "root" and len(parts) >= 2:
        return parts[1]
    if parts[0] == "home" and len(parts) >= 3:
        return parts[2]
    return None


def classify(changes: Sequence[Change], ground: Ground) -> WorkProduct:
    """Sort ``changes`` (everything the agent changed since the sandbox started, as
    :meth:`~worker.sandbox.base.Sandbox.work_changes` lists it) by the rules above."""
    result = WorkProduct()
    added = {c.path for c in changes if c.kind == "added"}
    known = {c.path for c in changes}
    harness = [*HARNESS_ROOTS, *([ground.skills_dir] if ground.skills_dir else [])]
    starts = [ground.workdir, *ground.extra_starts]
    ground_dirs = {a for s in starts for a in ancestors(s)}
    module_dirs = {posixpath.normpath(s) for s in (*starts, *ground.module_paths)}
    shadows = ground.shadow_names
    excluded_roots: dict[str, str] = {}  # an excluded ground entry: all below it goes too
    parents = {posixpath.dirname(c.path) for c in changes}
    data = data_folders(changes) | regular_portions(changes, ground)
    # Regular packages of the agent's (their __init__ among the changes, not deleted).
    packages = {
        posixpath.dirname(c.path)
        for c in changes
        if c.kind != "deleted" and posixpath.basename(c.path).startswith("__init__.")
    }
    for change in changes:
        path = change.path
        if under(path, harness) or path.startswith(HARNESS_PREFIXES) or path == "/":
            continue
        if ground.declared and under(path, ground.declared):
            result.applied.append(change)
            continue
        if ground.input_dirs and under(path, ground.input_dirs):
            result.exclude(change, "verifier-input")
            continue
        outputs = ground.verifier_outputs
        if outputs and change.kind != "deleted" and is_verifier_output(path, outputs):
            result.exclude(change, "verifier-output")
            continue
        if change.kind != "deleted" and posixpath.basename(path) in ground.test_names:
            result.exclude(change, "test-name")
            continue
        named = folder_rule(path, ground, path in parents) if change.kind != "deleted" else None
        if named is not None:
            result.exclude(change, named)
            continue
        rule = _rule(
            path,
            change,
            ground,
            added,
            known,
            ground_dirs,
            module_dirs,
            shadows,
            data,
            parents,
            packages,
        )
        environment = rule in ("system", "home-config", "toolchain")
        if environment and change.kind == "modified" and path in parents:
            # A folder of the image marked only because an entry in it changed (a .pyc Python
            # wrote beside an image's module): the entries are sorted on their own, and the
            # folder itself is the image's either way.
            rule = "benign"
        if rule is None:
            # the nearest excluded entry above it, by its ancestors (a path's depth, not the
            # number of entries left out: 15,000 of each stalled the worker for minutes)
            for above in ancestors(path)[1:]:
                if above in excluded_roots:
                    rule = excluded_roots[above]
                    break
        if rule is None:
            result.applied.append(change)
            continue
        if rule in ("ground-config", "ground-module"):
            excluded_roots[path] = rule
        result.exclude(change, rule)
    return result


# Files a verifier may run by path, whose interpreter runs a folder's entry point instead when
# the path is a folder (``python3 x.py/`` runs ``x.py/__main__.py``, ``node x.js/`` its index).
SCRIPT_SUFFIXES: Final = (".py", ".pyw", ".pyz", ".pyc", ".js", ".mjs", ".cjs", ".ts", ".sh")


def folder_rule(path: str, ground: Ground, is_folder: bool) -> str | None:
    """The rule that leaves out ``path`` for a folder it is (``is_folder``) or is in: one named
    like a file of the tests (``test-name``) or like a script (``script-folder``), where a
    verifier's copy of a file would land inside and a run of it run the folder's entry point;
    one of a skill the tests name (``skill``). A package manager's own folders
    (``node_modules/chart.js``) aside."""
    parts = path.strip("/").split("/")
    if "node_modules" not in parts:
        folders = parts if is_folder else parts[:-1]
        if any(part in ground.test_files for part in folders):
            return "test-name"
        if any(part.endswith(SCRIPT_SUFFIXES) for part in folders):
            return "script-folder"
    if ground.skill_places and in_skill_place(path, ground.skill_places):
        return "skill"
    return None


def linked_folder_rules(
    links: Mapping[str, str], paths: Iterable[str], ground: Ground, *, limit: int = 200_000
) -> dict[str, str]:
    """The links that the rules leave out for what they will be on the regrade, which lays each
    as a copy of what it points at: every entry of the work product below a link's target is
    judged by :func:`classify` where the copy puts it, through links below it in turn (by name,
    up to ``limit`` entries). A link at ``/app`` (where test.sh runs ``cd /app; python3 -m
    pytest``) to the agent's ``/srv/x`` holding ``pytest/`` lays a ``ground-module`` there; one
    at ``/app/environment/skills`` to the agent's ``/tmp/sk`` holding ``checker/`` a ``skill``;
    one at ``/root/make.py`` to a folder a ``script-folder``. A link's rule is the first that
    leaves out anything of its copy but a benign entry (a copy is laid whole or not at all)."""
    ordered = sorted(set(paths))
    parents = {posixpath.dirname(p) for p in ordered}
    views: dict[str, str] = {}  # where an entry of a copy lands -> the link whose copy it is
    budget = limit
    for link, target in links.items():
        queue = [(link, _resolved(link, target), 0)]
        while queue and budget > 0:
            view, real, depth = queue.pop()
            if real in parents:
                views.setdefault(view, link)
            start = bisect.bisect_left(ordered, real + "/")
            for entry in itertools.islice(ordered, start, None):
                if not entry.startswith(real + "/") or budget <= 0:
                    break
                budget -= 1
                seen = view + entry[len(real) :]
                views.setdefault(seen, link)
                if entry in links and depth < 8:
                    queue.append((seen, _resolved(entry, links[entry]), depth + 1))
    if not views:
        return {}
    judged = classify([Change(view, "added") for view in views], ground)
    found: dict[str, str] = {}
    for item in judged.excluded:
        if item.rule != "benign":
            found.setdefault(views[item.path], item.rule)
    return found


def _resolved(link: str, target: str) -> str:
    return "/" + posixpath.normpath(posixpath.join(posixpath.dirname(link), target)).lstrip("/")


def in_skill_place(path: str, places: Iterable[str]) -> bool:
    """Whether ``path`` is in (or is) one of ``places``: an absolute one as a folder, a relative
    one wherever its components follow each other in ``path``."""
    parts = path.strip("/").split("/")
    for place in places:
        if place.startswith("/"):
            if under(path, [place]):
                return True
            continue
        want = place.strip("/").split("/")
        for start in range(len(parts) - len(want) + 1):
            if parts[start : start + len(want)] == want:
                return True
    return False


def _rule(
    path: str,
    change: Change,
    ground: Ground,
    added: set[str],
    known: set[str],
    ground_dirs: set[str],
    module_dirs: set[str],
    shadows: frozenset[str],
    data_folders: set[str],
    folders: Collection[str] = frozenset(),
    packages: Collection[str] = frozenset(),
) -> str | None:
    name = posixpath.basename(path)
    if name in BENIGN_NAMES or under(path, ["/var/log"]):
        return "benign"
    bytecode = "__pycache__" in path.strip("/").split("/")
    if bytecode and ground.pycache_isolated:
        return "benign"
    rule = _environment_rule(path, change, ground, added)
    if rule is not None:
        # Bytecode caches included where the verifier may read them (Python run with -I or
        # -E ignores the fresh PYTHONPYCACHEPREFIX and reads the __pycache__ beside a module).
        return rule
    if bytecode:
        return "benign"
    if new_site_package(path, added, ground.shadow_names) is not None:
        return None  # a site folder's new package: no tool reads it by itself (~/.local too)
    starts = {posixpath.normpath(s) for s in (ground.workdir, *ground.extra_starts)}
    project_files = (PROJECT_FILES if ground.builds_project else frozenset()) | (
        NODE_PROJECT_FILES if ground.builds_node_project else frozenset()
    )
    rule = _ground_rule(
        path,
        change,
        project_files,
        starts,
        added,
        known,
        ground_dirs,
        module_dirs,
        shadows,
        data_folders,
        ground.anywhere_shadow_names,
        folders,
        packages,
    )
    if rule is None and change.kind != "deleted":
        rule = _node_rule(path, ground, starts)
    return rule


def node_scope(path: str) -> str | None:
    """The folder whose scripts' module resolution ``path`` takes part in: ``D`` for
    ``D/node_modules`` and all below it (the first ``node_modules``), and for ``D/package.json``
    (the package scope of the scripts below ``D``: their ``"type"``, ``"imports"`` and the
    self-reference by ``"name"`` and ``"exports"``)."""
    parts = path.split("/")
    if "node_modules" in parts[1:]:
        return "/".join(parts[: parts.index("node_modules", 1)]) or "/"
    if parts[-1] == "package.json":
        return "/".join(parts[:-1]) or "/"
    return None


def _node_rule(path: str, ground: Ground, starts: set[str]) -> str | None:
    """``node-module``. Node resolves a bare import up from the importing script's folder
    through every ``node_modules``: one of the agent's answers the imports of any script run
    from below it, and no reading of test.sh lists every folder a script of the tests' is
    copied to and run from (a renamed copy, a glob, ``env -C``, a test's own subprocess), so
    every ``node_modules`` entry of the agent's is left out wherever it is; a project test.sh
    runs npm in remakes its own (``npm install``). Node also takes the nearest ``package.json``
    as a script's package scope (``"type"``, ``"imports"``, a self-reference by ``"name"`` and
    ``"exports"``): one of the agent's at or above a folder of the image's scripts or of the
    tests' scripts test.sh runs with node (threejs-structure-parser's generator loads the
    image's input /root/data/object.js, which imports three) is left out too, but the
    project's own where test.sh runs npm in the working directory
    (:data:`NODE_PROJECT_FILES`; an image service test.sh starts elsewhere, `cd
    /services/api-simulator && npm start`, is the image's)."""
    scope = node_scope(path)
    if scope is None:
        return None
    if posixpath.basename(path) != "package.json" or "node_modules" in path.split("/"):
        return "node-module"  # a node_modules entry (a package's own package.json too)
    if ground.node_dirs == ():
        return None
    if ground.node_dirs is not None and scope not in ground.node_scopes:
        return None
    own = scope == posixpath.normpath(ground.workdir) or scope not in ground.node_scopes
    if ground.builds_node_project and scope in starts and own:
        return None
    return "node-module"


def _environment_rule(path: str, change: Change, ground: Ground, added: set[str]) -> str | None:
    if under(path, KERNEL_ROOTS):
        return "system"
    if under(path, SYSTEM_ROOTS) and not under(path, SYSTEM_EXCEPTIONS):
        if new_site_package(path, added, ground.shadow_names) is not None:
            return None  # a package the agent installed under a name nothing else has
        return "system"
    home = _home_entry(path)
    if home is not None and home.startswith("."):
        if new_site_package(path, added, ground.shadow_names) is not None:
            return None  # a package installed with --user under a name nothing else has
        return "home-config"
    env = _ENV_SITE.match(path)
    if env is not None:
        root = env.group(1) or "/"
        if root not in added and not any(a in added for a in ancestors(root)[1:]):
            return "toolchain"
    folder = posixpath.dirname(path)
    if _on_image_path(folder, ground) or (change.kind == "added" and _on_image_path(path, ground)):
        # A folder of the image's PATH holds the image's programs, whether or not the image
        # made it (jax-computing-basics puts a `/app/kona` it never creates first on PATH):
        # a program the agent puts there is found before the image's, by test.sh's shell
        # and by the tools that look for an interpreter on PATH (uv, uvx). So is a folder
        # (or a link) the agent puts at such a place.
        return "toolchain"
    if under(path, ["/opt"]) and opt_toolchain(path, ground.path_dirs, lambda p: False):
        runtime = OPT_RUNTIME.match(path)
        if runtime is None or not any(a in added for a in ancestors(runtime.group(1))):
            return "toolchain"
    return None


def _ground_rule(
    path: str,
    change: Change,
    project_files: frozenset[str],
    start_dirs: set[str],
    added: set[str],
    known: set[str],
    ground_dirs: set[str],
    module_dirs: set[str],
    shadows: frozenset[str],
    data_folders: set[str],
    anywhere: frozenset[str] = frozenset(),
    folders: Collection[str] = frozenset(),
    packages: Collection[str] = frozenset(),
) -> str | None:
    folder = posixpath.dirname(path)
    if change.kind == "deleted":
        return None
    for base in ancestors(folder):
        entry = path if base == folder else _child(base, path)
        entry_name = posixpath.basename(entry)
        if base == "/" and entry in known and entry not in added:
            continue  # a top-level folder of the image (/app, /root): its own rules
        named = base in start_dirs and entry_name in project_files
        configures = entry_name.startswith(".") or entry_name in GROUND_FILES
        if base in ground_dirs and configures and not named:
            return "ground-config"
        if base in module_dirs and is_distribution_metadata(entry_name):
            # importlib.metadata reads every sys.path folder: a plugin registry (pytest11).
            return "ground-config"
        if base in module_dirs and (entry in added or entry not in known):
            module = module_name(entry_name)
            if module is not None and module.lower() in shadows and entry not in data_folders:
                return "ground-module"
        elif entry in added and not _in_environment(entry):
            # Anywhere else: a plugin registry (a pytest11 entry point) is read from whatever
            # folder a Python of the verifier's has on its path; a module named like one every
            # such Python imports shadows it there. Not a package's own submodule
            # (``mytool/types.py`` is ``mytool.types``).
            if is_distribution_metadata(entry_name):
                return "ground-config"
            if (
                entry_name.split(".", 1)[0].lower() in anywhere  # cheap first: most names are not
                and (is_module_file(entry_name) or entry in folders)
                and entry not in data_folders
                and base not in packages
            ):
                module = module_name(entry_name)
                if module is not None and module.lower() in anywhere:
                    return "ground-module"
    return None


# Folders of Python and node environments: what an environment the agent made holds (its
# site-packages with pytest, numpy) is read only by that environment's own interpreter.
_ENVIRONMENT_FOLDERS: Final = frozenset({"site-packages", "dist-packages", "node_modules"})


def _on_image_path(folder: str, ground: Ground) -> bool:
    """Whether ``folder`` is one of the image's PATH folders, but not one test.sh starts in
    (a PATH naming the working directory would leave every output of the agent out)."""
    return (
        folder in ground.path_dirs
        and folder != ground.workdir
        and (folder not in ground.extra_starts)
    )


def _in_environment(path: str) -> bool:
    return not _ENVIRONMENT_FOLDERS.isdisjoint(path.strip("/").split("/")[:-1])


# Names whose every module is a regular one (a file, or a folder with __init__): the standard
# library's and the test runner's family. Namespace packages elsewhere (google, zope) are not.
_REGULAR_NAMES: Final = frozenset(
    name.lower() for name in (*sys.stdlib_module_names, *RUNNER_MODULES)
)


def regular_portions(changes: Iterable[Change], ground: Ground) -> set[str]:
    """Folders among ``changes`` without an ``__init__`` (at most namespace portions) named like
    a module of the standard library or the test runner that the image has: Python's path
    finder passes a portion over for a regular module or package of that name in a later
    ``sys.path`` folder, so such a folder shadows nothing, nor can its modules be imported as
    ``<name>.<x>`` (``/root/html/`` holding an ``index.html`` and the ``build.py`` that made it).
    A name the image lacks (``tkinter`` without python3-tk) is not one: there the portion would
    be the package."""
    names = {n.lower() for n in ground.image_modules} & _REGULAR_NAMES
    if not names:
        return set()
    changes = [c for c in changes if c.kind != "deleted"]
    parents = {posixpath.dirname(c.path) for c in changes}
    packages = {
        posixpath.dirname(c.path)
        for c in changes
        if posixpath.basename(c.path).startswith("__init__.")
        or posixpath.basename(c.path) == "__init__"
    }
    found = set()
    for folder in parents - packages:
        module = module_name(posixpath.basename(folder))
        if module is not None and module.lower() in names:
            found.add(folder)
    return found


def _child(base: str, path: str) -> str:
    """The entry of folder ``base`` that ``path`` is in or is."""
    rest = path[len(base) :].lstrip("/") if base != "/" else path.lstrip("/")
    return posixpath.join(base, rest.split("/", 1)[0])


def link_escapes(link_path: str, target: str, skills_dir: str | None = None) -> bool:
    """Whether a link at ``link_path`` pointing at ``target`` reaches what the harness places
    (or a folder above it, or the kernel's views), or may: resolved by name, which is the
    kernel's answer only while no ``..`` follows a component that could itself be a link
    (``/srv/../tests`` is ``/tests``, but ``/root/d/../tests`` is too when ``/root/d`` links to
    ``/srv``). Such a target is never taken on trust; a relative target's leading ``..`` walk up
    from the link's own folder, a real one, and are. ``//x`` is ``/x`` to the kernel."""
    parts = [part for part in target.split("/") if part not in ("", ".")]
    walked = False
    for part in parts:
        if part != "..":
            walked = True
        elif walked or target.startswith("/"):
            return True
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link_path), target))
    resolved = "/" + resolved.lstrip("/")  # POSIX keeps a leading "//"; the kernel does not
    guarded = [*HARNESS_ROOTS, *KERNEL_ROOTS, *([skills_dir] if skills_dir else [])]
    if under(resolved, guarded):
        return True
    return any(under(root, [resolved]) for root in guarded)


def shadow_candidates(product: WorkProduct, ground: Ground) -> dict[str, tuple[str, str]]:
    """The agent's modules that a name only known once test.sh ran could make shadows: each
    module or package it put in the verifier's module folders (working directory, the tests'
    sys.path folders) and each package it installed anew into a system site folder, as
    ``entry path -> (module name, its folder)``."""
    added = {c.path for c in product.applied if c.kind == "added"}
    module_dirs = {
        posixpath.normpath(s) for s in (ground.workdir, *ground.extra_starts, *ground.module_paths)
    }
    found: dict[str, tuple[str, str]] = {}
    data = data_folders(product.applied) | regular_portions(product.applied, ground)
    for change in product.applied:
        if change.kind == "deleted":
            continue
        folder, name = posixpath.split(change.path)
        module = module_name(name)
        if folder in module_dirs and module is not None and change.path in added:
            if change.path in data:
                continue  # data only: nothing there to import
            found[change.path] = (module, folder)
        top = new_site_package(change.path, added, ground.shadow_names)
        if top == change.path and module is not None:
            found[top] = (module, folder)
    return found


def exclude_test_time_shadows(
    product: WorkProduct, candidates: Mapping[str, tuple[str, str]], found: Iterable[str]
) -> list[str]:
    """Move the candidates whose module name ``found`` lists (``"folder\tentry"`` lines: what the
    verifier's Python could import once test.sh ran) from another folder into the excluded
    ones, with everything below them; the entries moved. A ``"folder\tentry\tsource"`` line
    says the name there was installed from the local folder ``source`` (test.sh's ``cd
    /root/proj && pip3 install .``): a candidate inside it is that install's own code, not a
    shadow of it (the image-alone listing, where no folder of the agent's exists, still
    judges the name)."""
    where: dict[str, set[str]] = {}
    installed_from: dict[tuple[str, str], set[str]] = {}
    for line in found:
        folder, _, rest = line.rstrip("\n").partition("\t")
        entry, _, source = rest.partition("\t")
        module = module_name(entry)
        if module is None:
            continue
        where.setdefault(module, set()).add(folder)
        if source.startswith("/"):
            source = posixpath.normpath(urllib.parse.unquote(source))
            installed_from.setdefault((folder, module), set()).add(source)

    def shadowed(entry: str, name: str, folder: str, there: str) -> bool:
        if there == folder or under(there, [entry]):
            return False
        return not under(entry, installed_from.get((there, name), ()))

    hit = [
        entry
        for entry, (name, folder) in candidates.items()
        if any(shadowed(entry, name, folder, f) for f in where.get(name, ()))
    ]
    if hit:
        for change in [c for c in product.applied if under(c.path, hit)]:
            product.applied.remove(change)
            product.exclude(change, "test-time-shadow")
    return hit
