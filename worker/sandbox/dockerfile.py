"""A small Dockerfile reader: enough of the format for sandboxes that do not run Docker.

It understands line continuations, comments, ``FROM``, ``ARG``, ``ENV``, ``WORKDIR``, ``USER``,
``COPY``/``ADD`` and ``RUN``, with the Docker builder's word rules for ``ARG``/``ENV``
substitution: quotes, backslash escapes, ``$X``, ``${X}``, ``${X:-default}``, ``${X:+alt}`` (and the
colon-less, ``?``, ``#`` and ``%`` forms), every variable of one ``ENV``/``ARG`` line read as it
was before that line, ARG defaults and build args, an ``ARG`` without a value being unset, and
the base image's ``PATH`` (Docker's default) seeded. Everything else (``CMD``, ``LABEL``,
``EXPOSE``, ...) is kept as an instruction and ignored by the local sandbox.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


class DockerfileError(ValueError):
    """The Dockerfile cannot be read; the message names the line."""


# Docker's default PATH: what a base image built FROM scratch or a distribution image has; the
# local sandbox's "base image" is the host, so a Dockerfile's ``ENV PATH=/x:${PATH}`` builds on it.
DOCKER_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV: Mapping[str, str] = {"PATH": DOCKER_DEFAULT_PATH}

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_SPECIAL_PARAMS = frozenset("@*#?-$!0")


class _Word:
    """One word through the Docker builder's shell lexer (moby ``shell/lex.go``): quotes removed,
    ``\\`` escapes, ``$X``/``${X}`` and the ``${X:-w}``, ``${X-w}``, ``${X:+w}``, ``${X+w}``,
    ``${X:?m}``, ``${X?m}``, ``${X#p}``, ``${X%p}`` forms. ``variables`` holds the variables
    that are set (an ``ARG`` without a value and no build arg is unset, not empty)."""

    def __init__(self, text: str, variables: Mapping[str, str]) -> None:
        self.text = text
        self.pos = 0
        self.variables = variables

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self) -> str:
        ch = self.peek()
        self.pos += len(ch)
        return ch

    def until(self, stop: str = "", *, raw_escapes: bool = False) -> str:
        """Up to ``stop`` (consumed) or the end; a missing ``stop`` is an error."""
        out: list[str] = []
        while self.pos < len(self.text):
            ch = self.peek()
            if stop and ch == stop:
                self.take()
                return "".join(out)
            if ch == "'":
                out.append(self._single_quoted())
            elif ch == '"':
                out.append(self._double_quoted())
            elif ch == "$":
                out.append(self._dollar())
            else:
                self.take()
                if ch == "\\":
                    if raw_escapes:
                        out.append(ch)
                    ch = self.take()
                    if not ch:
                        break
                out.append(ch)
        if stop:
            raise DockerfileError(f"syntax error: missing {stop!r} in {self.text!r}")
        return "".join(out)

    def _single_quoted(self) -> str:
        self.take()
        end = self.text.find("'", self.pos)
        if end < 0:
            raise DockerfileError(f"unmatched single quote in {self.text!r}")
        value = self.text[self.pos : end]
        self.pos = end + 1
        return value

    def _double_quoted(self) -> str:
        self.take()
        out: list[str] = []
        while True:
            ch = self.peek()
            if not ch:
                raise DockerfileError(f"unmatched double quote in {self.text!r}")
            if ch == '"':
                self.take()
                return "".join(out)
            if ch == "$":
                out.append(self._dollar())
                continue
            self.take()
            if ch == "\\" and self.peek() in ('"', "$", "\\") and self.peek():
                ch = self.take()  # only these are escaped; other backslashes stay
            elif ch == "\\" and not self.peek():
                continue
            out.append(ch)

    def _name(self) -> str:
        ch = self.peek()
        if ch.isdigit():
            start = self.pos
            while self.peek().isdigit():
                self.take()
            return self.text[start : self.pos]
        if ch and ch in _SPECIAL_PARAMS:
            return self.take()
        start = self.pos
        while self.peek() and self.peek() in _NAME_CHARS:
            self.take()
        return self.text[start : self.pos]

    def _dollar(self) -> str:
        self.take()
        if self.peek() != "{":
            name = self._name()
            return self.variables.get(name, "") if name else "$"
        self.take()
        if not self.peek():
            raise DockerfileError(f"syntax error: missing '}}' in {self.text!r}")
        if self.peek() in "{}:":
            raise DockerfileError(f"syntax error: bad substitution in {self.text!r}")
        name = self._name()
        op = self.take()
        if not op:
            raise DockerfileError(f"syntax error: missing '}}' in {self.text!r}")
        if op == "}":
            return self.variables.get(name, "")
        colon = op == ":"
        if colon:
            op = self.take()
        if op not in ("-", "+", "?", "#", "%") or (colon and op in "#%"):
            raise DockerfileError(
                f"unsupported modifier ({':' if colon else ''}{op}) in substitution in {self.text!r}"
            )
        word = self.until("}", raw_escapes=op in "#%")
        value = self.variables.get(name)
        missing = value is None or (colon and value == "")
        if op == "-":
            return word if missing else value or ""
        if op == "+":
            return "" if missing else word
        if op == "?":
            if missing:
                unset = "unset" if value is None else "empty"
                raise DockerfileError(f"{name}: {word or f'is not allowed to be {unset}'}")
            return value or ""
        return _trim(value or "", word, suffix=op == "%")


def _trim(value: str, pattern: str, *, suffix: bool) -> str:
    """``${X#p}``/``${X##p}`` (prefix) and ``${X%p}``/``${X%%p}`` (suffix), shortest/longest."""
    longest = pattern.startswith("%" if suffix else "#")
    if longest:
        pattern = pattern[1:]
    lengths = range(len(value), -1, -1) if longest else range(len(value) + 1)
    for size in lengths:
        part = value[len(value) - size :] if suffix else value[:size]
        if fnmatch.fnmatchcase(part, pattern):
            return value[: len(value) - size] if suffix else value[size:]
    return value


def substitute(value: str, variables: Mapping[str, str]) -> str:
    """Process ``value`` as the Docker builder processes one word of ``ENV``, ``ARG``,
    ``WORKDIR``, ``COPY``, ``USER``, ``FROM``: quotes removed, escapes applied, variables
    expanded (unset ones to nothing)."""
    return _Word(value, variables).until()


def split_words(args: str) -> list[str]:
    """Split on whitespace outside quotes, keeping quotes and escapes for :func:`substitute`
    (the Docker parser's ``parseWords``)."""
    words: list[str] = []
    word: list[str] = []
    quote = ""
    started = False
    i = 0
    while i < len(args):
        ch = args[i]
        if quote:
            word.append(ch)
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"' and i + 1 < len(args):
                i += 1
                word.append(args[i])
        elif ch.isspace():
            if started:
                words.append("".join(word))
            word, started = [], False
        else:
            started = True
            word.append(ch)
            if ch in "'\"":
                quote = ch
            elif ch == "\\" and i + 1 < len(args):
                i += 1
                word.append(args[i])
        i += 1
    if started:
        words.append("".join(word))
    return words


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
    env: Mapping[str, str] = field(default_factory=dict)  # the ENV and ARG values in force


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


def _words(args: str, variables: Mapping[str, str]) -> list[str]:
    """The words of ``args``, each processed with ``variables``."""
    return [substitute(word, variables) for word in split_words(args)]


def _check_name(name: str, keyword: str, line: int) -> str:
    if not name:
        raise DockerfileError(f"line {line}: {keyword}: a variable name is empty")
    return name


def _env_pairs(
    args: str, variables: Mapping[str, str], line: int, keyword: str = "ENV"
) -> list[tuple[str, str]]:
    """``ENV`` pairs in the ``k=v k2=v2`` and the legacy ``k value with spaces`` forms, every
    word read with the variables as they were before the line (as Docker does)."""
    words = split_words(args)
    if not words:
        raise DockerfileError(f"line {line}: {keyword} needs arguments")
    if "=" not in words[0]:  # legacy form: the name, then the rest of the line is the value
        parts = args.strip().split(None, 1)
        if len(parts) < 2:
            raise DockerfileError(f"line {line}: {keyword} must have two arguments")
        name = _check_name(substitute(parts[0], variables), keyword, line)
        return [(name, substitute(parts[1], variables))]
    pairs = []
    for word in words:
        name, sep, value = word.partition("=")
        if not sep:
            raise DockerfileError(f"line {line}: {keyword} {word!r}: expected NAME=VALUE")
        name = _check_name(substitute(name, variables), keyword, line)
        pairs.append((name, substitute(value, variables)))
    return pairs


def _arg_pairs(args: str, variables: Mapping[str, str], line: int) -> list[tuple[str, str | None]]:
    """``ARG name[=default] ...``: the default read with the variables as they were before the
    line; None for an ARG without one."""
    words = split_words(args)
    if not words:
        raise DockerfileError(f"line {line}: ARG needs arguments")
    pairs: list[tuple[str, str | None]] = []
    for word in words:
        name, sep, default = word.partition("=")
        name = _check_name(substitute(name, variables), "ARG", line)
        pairs.append((name, substitute(default, variables) if sep else None))
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
        words = [substitute(w, variables) for w in words]
    else:
        words = _words(args, variables)
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


def parse_dockerfile(
    path: Path,
    build_args: Mapping[str, str] | None = None,
    base_env: Mapping[str, str] = BASE_ENV,
) -> ImageRecipe:
    """Read ``path`` into an :class:`ImageRecipe`; raise :class:`DockerfileError` naming the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DockerfileError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return parse_dockerfile_text(text, build_args, base_env)
    except DockerfileError as exc:
        raise DockerfileError(f"{path}: {exc}") from None


def parse_dockerfile_text(
    text: str,
    build_args: Mapping[str, str] | None = None,
    base_env: Mapping[str, str] = BASE_ENV,
) -> ImageRecipe:
    """``base_env``: the environment of the ``FROM`` image (Docker's default ``PATH``); the
    recipe's ``env`` starts from it."""
    given = dict(build_args or {})
    recipe = ImageRecipe()
    global_args: dict[str, str] = {}  # before the first FROM: only FROM lines and ARG see them
    declared: set[str] = set()  # global ARG names (a stage's bare ARG takes their value)
    args: dict[str, str] = {}
    workdir = "/"
    for inst in read_instructions(text):
        variables = {**args, **recipe.env} if recipe.stages else global_args
        kw = inst.keyword
        try:
            if recipe.stages == 0 and kw not in ("ARG", "FROM"):
                raise DockerfileError(f"{kw} before FROM")
            if kw == "FROM":
                recipe.stages += 1
                words = [w for w in _words(inst.args, global_args) if not w.startswith("--")]
                recipe.base = words[0] if words else None
                recipe.env = dict(base_env)  # a stage starts from its base image's environment
                args = {}
            elif kw == "ARG":
                for name, default in _arg_pairs(inst.args, variables, inst.line):
                    value = given.get(name, default)
                    if value is None and recipe.stages and name in declared:
                        value = global_args.get(name)
                    scope = args if recipe.stages else global_args
                    if not recipe.stages:
                        declared.add(name)
                    if value is None:
                        scope.pop(name, None)  # declared without a value: unset
                    else:
                        scope[name] = value
            elif kw == "ENV":
                for name, value in _env_pairs(inst.args, variables, inst.line):
                    recipe.env[name] = value
            elif kw == "WORKDIR":
                target = substitute(inst.args.strip(), variables)
                workdir = posixpath.normpath(posixpath.join(workdir, target))
                recipe.workdir = workdir
            elif kw in ("COPY", "ADD"):
                recipe.steps.append(_copy(inst, variables, workdir))
            elif kw == "RUN":
                command = _run_command(inst)
                recipe.steps.append(Run(inst.line, command, workdir, inst.text, dict(variables)))
            elif kw == "USER":
                recipe.user = substitute(inst.args.strip(), variables) or None
        except DockerfileError as exc:
            message = str(exc)
            if not message.startswith("line "):
                message = f"line {inst.line}: {message}"
            raise DockerfileError(message) from None
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
            for name, default in _arg_pairs(inst.args, global_args, inst.line):
                if default is None:
                    global_args.pop(name, None)
                else:
                    global_args[name] = default
        elif inst.keyword == "FROM":
            seen_from = True
            words = [w for w in _words(inst.args, global_args) if not w.startswith("--")]
            if not words:
                continue
            ref = words[0]
            if ref.lower() != "scratch" and ref.lower() not in stages and ref not in refs:
                refs.append(ref)
            if len(words) >= 3 and words[1].lower() == "as":
                stages.add(words[2].lower())  # stage names match in any case
    return refs


def map_base_images(text: str, bases: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """``text`` with every ``FROM`` whose reference (global ``ARG`` defaults substituted) is a
    key of ``bases`` rewritten to build from the mapped image instead (flags and ``AS name``
    kept), and the substitutions made. Stage references are never mapped."""
    if not bases:
        return text, {}
    lines = text.splitlines()
    global_args: dict[str, str] = {}
    stages: set[str] = set()
    used: dict[str, str] = {}
    seen_from = False
    for inst in read_instructions(text):
        if inst.keyword == "ARG" and not seen_from:
            for name, default in _arg_pairs(inst.args, global_args, inst.line):
                if default is None:
                    global_args.pop(name, None)
                else:
                    global_args[name] = default
            continue
        if inst.keyword != "FROM":
            continue
        seen_from = True
        raw = split_words(inst.args)
        flags = [w for w in raw if w.startswith("--")]
        rest = [w for w in raw if not w.startswith("--")]
        if not rest:
            continue
        ref = substitute(rest[0], global_args)
        local = bases.get(ref) if ref.lower() not in stages else None
        if len(rest) >= 3 and rest[1].lower() == "as":
            stages.add(substitute(rest[2], global_args).lower())
        if local is None:
            continue
        used[ref] = local
        lines[inst.line - 1] = " ".join(["FROM", *flags, local, *rest[1:]])
        for number in range(inst.line, max(inst.end_line, inst.line)):
            lines[number] = ""  # the continuation lines of the rewritten FROM
    return "\n".join(lines) + "\n", used
