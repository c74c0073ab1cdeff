"""A small Dockerfile reader: enough of the format for sandboxes that do not run Docker.

It understands line continuations, comments, ``ARG``/``ENV`` substitution (``$X``, ``${X}``,
``${X:-default}``, ``${X:+alt}``), ``FROM``, ``WORKDIR``, ``ENV``, ``COPY``/``ADD`` and ``RUN``.
Everything else (``CMD``, ``LABEL``, ``EXPOSE``, ...) is kept as an instruction and ignored by
the local sandbox.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

_VAR = re.compile(
    r"\\\$|\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::(?P<op>[-+])(?P<word>[^}]*))?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


class DockerfileError(ValueError):
    """The Dockerfile cannot be read; the message names the line."""


@dataclass(frozen=True)
class Instruction:
    line: int  # 1-based line where the instruction starts
    keyword: str  # upper case
    args: str  # raw text after the keyword, continuations joined
    text: str  # the instruction as written (for messages)
    end_line: int = 0  # last physical line (continuations included)


@dataclass(frozen=True)
class Copy:
    """A ``COPY``/``ADD`` with its sources relative to the build context."""

    line: int
    sources: tuple[str, ...]
    dest: str  # absolute, resolved against the WORKDIR in force
    dest_is_dir: bool
    text: str


@dataclass(frozen=True)
class Run:
    """A ``RUN`` with the ``WORKDIR`` and environment in force where it appears."""

    line: int
    command: str  # shell form; the JSON form is joined with shlex quoting
    workdir: str
    text: str


@dataclass
class ImageRecipe:
    """What a Dockerfile asks for, in order, after ``ARG`` substitution."""

    base: str | None = None
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    stages: int = 0
    # COPY/ADD and RUN in file order: backends replay them interleaved.
    steps: list[Copy | Run] = field(default_factory=list)


def read_instructions(text: str) -> list[Instruction]:
    """Split a Dockerfile into instructions (continuations joined, comments dropped)."""
    out: list[Instruction] = []
    parts: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not parts):
            continue  # comments (also inside continuations) and blank lines
        if not parts:
            start = number
        continued = stripped.endswith("\\")
        parts.append(stripped[:-1].strip() if continued else stripped)
        if continued:
            continue
        out.append(_instruction(start, number, parts))
        parts = []
    if parts:
        out.append(_instruction(start, start + len(parts) - 1, parts))
    return out


def _instruction(line: int, end: int, parts: list[str]) -> Instruction:
    joined = " ".join(p for p in parts if p)
    keyword, _, args = joined.partition(" ")
    return Instruction(line, keyword.upper(), args.strip(), joined, end)


def is_skills_source(source: str) -> bool:
    """A COPY source that is the task's bundled ``skills/`` folder (or inside it)."""
    clean = posixpath.normpath(source.lstrip("./") or ".")
    return clean == "skills" or clean.startswith("skills/")


def skills_copy_lines(text: str) -> set[int]:
    """Physical line numbers of ``COPY``/``ADD`` instructions that copy only ``skills/``.

    A no-skills build drops them (as BenchFlow's no-skill mode does).
    """
    lines: set[int] = set()
    for inst in read_instructions(text):
        if inst.keyword not in ("COPY", "ADD"):
            continue
        try:
            copy = _copy(inst, {}, "/")
        except DockerfileError:
            continue
        if all(is_skills_source(src) for src in copy.sources):
            lines.update(range(inst.line, max(inst.end_line, inst.line) + 1))
    return lines


def substitute(value: str, variables: Mapping[str, str]) -> str:
    """Expand ``$X``/``${X}``/``${X:-d}``/``${X:+a}`` the way the Docker builder does."""

    def repl(match: re.Match[str]) -> str:
        if match.group(0) == "\\$":
            return "$"
        name = match.group("braced") or match.group("bare")
        current = variables.get(name)
        op = match.group("op")
        if op == "-":
            return current if current else substitute(match.group("word") or "", variables)
        if op == "+":
            return substitute(match.group("word") or "", variables) if current else ""
        return current or ""

    return _VAR.sub(repl, value)


def _words(args: str) -> list[str]:
    try:
        return shlex.split(args, posix=True)
    except ValueError as exc:
        raise DockerfileError(str(exc)) from None


def _key_values(args: str, keyword: str, line: int) -> list[tuple[str, str]]:
    """``ENV``/``ARG``/``LABEL`` pairs in both the ``k=v k2=v2`` and legacy ``k v`` forms."""
    words = _words(args)
    if not words:
        raise DockerfileError(f"line {line}: {keyword} needs arguments")
    if "=" not in words[0]:
        if keyword == "ARG":
            return [(words[0], "\0")]  # declared without a default
        name, _, rest = args.strip().partition(" ")
        return [(name, " ".join(_words(rest)) if rest.strip() else "")]
    pairs = []
    for word in words:
        name, sep, value = word.partition("=")
        if not sep:
            if keyword == "ARG":
                pairs.append((name, "\0"))
                continue
            raise DockerfileError(f"line {line}: {keyword} {word!r}: expected NAME=VALUE")
        pairs.append((name, value))
    return pairs


def _copy(inst: Instruction, variables: Mapping[str, str], workdir: str) -> Copy:
    args = inst.args
    flags: list[str] = []
    while args.startswith("--"):
        flag, _, args = args.partition(" ")
        flags.append(flag)
        args = args.lstrip()
    for flag in flags:
        name = flag.split("=", 1)[0]
        if name in ("--from", "--link", "--parents", "--exclude"):
            raise DockerfileError(f"line {inst.line}: {inst.keyword} {name} is not supported")
        # --chown/--chmod: ownership is ignored (everything is root in the local sandbox)
    if args.startswith("["):
        try:
            words = [str(w) for w in json.loads(args)]
        except json.JSONDecodeError as exc:
            raise DockerfileError(
                f"line {inst.line}: {inst.keyword}: bad JSON form: {exc}"
            ) from None
    else:
        words = _words(args)
    words = [substitute(w, variables) for w in words]
    if len(words) < 2:
        raise DockerfileError(f"line {inst.line}: {inst.keyword} needs a source and a destination")
    *sources, dest = words
    for src in sources:
        if "://" in src:
            raise DockerfileError(f"line {inst.line}: {inst.keyword} from a URL is not supported")
    dest_is_dir = (
        dest.endswith("/") or len(sources) > 1 or any(c in s for s in sources for c in "*?[")
    )
    resolved = posixpath.normpath(posixpath.join(workdir, dest))
    return Copy(inst.line, tuple(sources), resolved, dest_is_dir, inst.text)


def _run_command(inst: Instruction) -> str:
    args = inst.args
    while args.startswith("--"):  # RUN --mount=... / --network=...: ignored
        args = args.partition(" ")[2].lstrip()
    if args.startswith("["):
        try:
            return shlex.join(str(w) for w in json.loads(args))
        except json.JSONDecodeError:
            pass
    return args


def parse_dockerfile(path: Path, build_args: Mapping[str, str] | None = None) -> ImageRecipe:
    """Read ``path`` into an :class:`ImageRecipe`; raise :class:`DockerfileError` naming the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DockerfileError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return parse_dockerfile_text(text, build_args)
    except DockerfileError as exc:
        raise DockerfileError(f"{path}: {exc}") from None


def parse_dockerfile_text(text: str, build_args: Mapping[str, str] | None = None) -> ImageRecipe:
    given = dict(build_args or {})
    recipe = ImageRecipe()
    global_args: dict[str, str] = {}
    args: dict[str, str] = {}
    workdir = "/"
    for inst in read_instructions(text):
        variables = {**args, **recipe.env}
        kw = inst.keyword
        if recipe.stages == 0 and kw not in ("ARG", "FROM"):
            raise DockerfileError(f"line {inst.line}: {kw} before FROM")
        if kw == "FROM":
            recipe.stages += 1
            words = _words(inst.args)
            recipe.base = substitute(words[0], global_args) if words else None
            args = {}
        elif kw == "ARG":
            for name, default in _key_values(inst.args, kw, inst.line):
                value = given.get(name, substitute(default, variables) if default != "\0" else "")
                if default == "\0" and name in global_args and recipe.stages:
                    value = given.get(name, global_args[name])
                if recipe.stages == 0:
                    global_args[name] = value
                else:
                    args[name] = value
        elif kw == "ENV":
            for name, value in _key_values(inst.args, kw, inst.line):
                recipe.env[name] = substitute(value, variables)
        elif kw == "WORKDIR":
            target = substitute(" ".join(_words(inst.args)), variables)
            workdir = posixpath.normpath(posixpath.join(workdir, target))
            recipe.workdir = workdir
        elif kw in ("COPY", "ADD"):
            copy = _copy(inst, variables, workdir)
            recipe.steps.append(copy)
        elif kw == "RUN":
            recipe.steps.append(Run(inst.line, _run_command(inst), workdir, inst.text))
        elif kw == "USER":
            recipe.user = substitute(inst.args.strip(), variables) or None
    if recipe.stages == 0:
        raise DockerfileError("no FROM instruction")
    return recipe


def base_images(text: str) -> list[str]:
    """The images a build of ``text`` starts from: every ``FROM`` (global ``ARG`` defaults
    substituted), without ``scratch`` and without references to earlier stages."""
    global_args: dict[str, str] = {}
    stages: set[str] = set()
    refs: list[str] = []
    seen_from = False
    for inst in read_instructions(text):
        if inst.keyword == "ARG" and not seen_from:
            for name, default in _key_values(inst.args, "ARG", inst.line):
                global_args[name] = substitute(default, global_args) if default != "\0" else ""
        elif inst.keyword == "FROM":
            seen_from = True
            words = [w for w in _words(inst.args) if not w.startswith("--")]
            if not words:
                continue
            ref = substitute(words[0], global_args)
            if ref.lower() != "scratch" and ref.lower() not in stages and ref not in refs:
                refs.append(ref)
            if len(words) >= 3 and words[1].lower() == "as":
                stages.add(words[2].lower())  # stage names match in any case
    return refs
