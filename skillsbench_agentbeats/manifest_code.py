"""What only we can know about our Amber manifests: that they agree with our code.

Applies to the manifests that run our command (an ``entrypoint`` list starting with
``skillsbench-agentbeats``); a published manifest running something else is Amber's business only.

- ``code_env``: every variable the manifest's ``env`` sets is one the service reads.
- ``code_command``: the entrypoint is a command of ours, every ``--option`` is one of its options,
  a literal value of a choice option is one of its choices, and a ``${config.X}`` given to a
  choice option has an ``enum`` within those choices.
- ``code_image``: the image is the service's own (``skillsbench-agentbeats-<service>``), and in
  this checkout its Dockerfile runs as a non-root ``USER`` that owns the folder of every mount
  (Amber's helper creates mounted sockets as that user).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click
import json5

from leaderboard.findings import Finding, child, json_path

COMMAND = "skillsbench-agentbeats"
REPO_ROOT = Path(__file__).resolve().parents[1]
DOCKERFILES = {
    "green": "green_agent/Dockerfile",
    "worker": "worker/Dockerfile",
    "purple": "purple_agent/Dockerfile",
}
IMAGE = re.compile(r"(?:^|/)skillsbench-agentbeats-(green|worker|purple)(?:[:@]|$)")
WHOLE_CONFIG = re.compile(r"^\$\{config\.([a-z0-9_]+)\}$")
# Read by the Docker SDK (docker.from_env) the worker's sandboxes use.
THIRD_PARTY = {"worker": {"DOCKER_HOST"}}


def variables_read(service: str) -> set[str]:
    """The environment variables ``service`` reads (from the code's own tables)."""
    if service == "green":
        from green_agent.settings import variables

        return set(variables())
    if service == "worker":
        from worker.api import SCRIPT_DIR_VAR
        from worker.runs import meta
        from worker.runs.catalog import TASKS_DIR_VAR
        from worker.sandbox import settings as environment
        from worker.service.app import TOKEN_VAR

        return {
            *meta.REVISION_VARS,
            *(meta.PROOF_DIR_VAR, meta.PROOF_URI_PREFIX_VAR, meta.PROOF_RETENTION_VAR),
            meta.REQUIRE_DURABLE_VAR,
            *(environment.PREBUILT_IMAGES_VAR, environment.REQUIRE_PREBUILT_VAR),
            environment.BUILDS_VAR,
            *(environment.PARTICIPANT_PROXY_VAR, environment.SANDBOX_PARTICIPANT_PROXY_VAR),
            *(TOKEN_VAR, TASKS_DIR_VAR, SCRIPT_DIR_VAR),
            *THIRD_PARTY["worker"],
        }
    if service == "purple":
        from purple_agent.config import ENV_PREFIX, PROVIDER_KEY_VARS, AgentConfig

        names = {ENV_PREFIX + field.upper() for field in AgentConfig.model_fields}
        return names | {v for group in PROVIDER_KEY_VARS.values() for v in group}
    return set()


def check_code_agreement(files: Iterable[Path]) -> list[Finding]:
    findings: list[Finding] = []
    for path in files:
        try:
            doc = json5.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # the manifest check reports it
        program = doc.get("program") if isinstance(doc, dict) else None
        if not isinstance(program, dict):
            continue
        entrypoint = program.get("entrypoint")
        if not (isinstance(entrypoint, list) and entrypoint and entrypoint[0] == COMMAND):
            continue
        findings += _Agreement(path, doc, program, entrypoint).run()
    return findings


class _Agreement:
    def __init__(self, path: Path, doc: dict[str, Any], program: dict[str, Any], argv: list[Any]):
        self.path, self.doc, self.program, self.argv = path, doc, program, argv
        self.findings: list[Finding] = []

    def add(self, p: str, rule: str, message: str) -> None:
        self.findings.append(Finding(path=p, rule=rule, message=message, file=str(self.path)))

    def run(self) -> list[Finding]:
        words = [w for w in self.argv if isinstance(w, str)]
        service = words[1] if len(words) > 1 else ""
        self._command(words)
        self._env(service)
        self._image(service)
        return self.findings

    def _command(self, words: list[str]) -> None:
        from skillsbench_agentbeats.cli import cli

        command: click.Command = cli
        ctx = click.Context(cli)
        i = 1
        while isinstance(command, click.Group) and i < len(words) and not words[i].startswith("-"):
            sub = command.get_command(ctx, words[i])
            if sub is None:
                where = json_path("program", "entrypoint", i)
                self.add(where, "code_command", f"`{' '.join(words[: i + 1])}` is no command")
                return
            command, i = sub, i + 1
        name = " ".join(words[:i])
        options = {opt: p for p in command.params for opt in p.opts if opt.startswith("--")}
        schema = self.doc.get("config_schema") or {}
        props = schema.get("properties") or {} if isinstance(schema, dict) else {}
        for j in range(i, len(self.argv)):
            word = self.argv[j]
            if not (isinstance(word, str) and word.startswith("--")):
                continue
            p = json_path("program", "entrypoint", j)
            param = options.get(word)
            if param is None:
                self.add(p, "code_command", f"`{word}` is not an option of `{name}`")
                continue
            value = self.argv[j + 1] if j + 1 < len(self.argv) else None
            if not isinstance(param.type, click.Choice) or not isinstance(value, str):
                continue
            choices = {str(c) for c in param.type.choices}
            whole = WHOLE_CONFIG.match(value)
            q = json_path("program", "entrypoint", j + 1)
            if whole is None and "${" not in value and value not in choices:
                self.add(q, "code_command", f"{word} {value!r} is not one of {sorted(choices)}")
            elif whole is not None:
                prop = props.get(whole[1])
                enum = prop.get("enum") if isinstance(prop, dict) else None
                if not isinstance(enum, list) or not {str(e) for e in enum} <= choices:
                    self.add(
                        q,
                        "code_command",
                        f"{word} takes one of {sorted(choices)}: config.{whole[1]} needs an "
                        "enum within them",
                    )

    def _env(self, service: str) -> None:
        env = self.program.get("env")
        if not isinstance(env, dict):
            return
        known = variables_read(service)
        for name in env:
            if name not in known:
                self.add(
                    json_path("program", "env", name),
                    "code_env",
                    f"{name} is set, but the {service or 'service'} never reads it",
                )

    def _image(self, service: str) -> None:
        image = self.program.get("image")
        p = json_path("program", "image")
        match = IMAGE.search(image) if isinstance(image, str) else None
        if match is None or match[1] != service:
            self.add(
                p,
                "code_image",
                f"{image!r} is not the {service} image (skillsbench-agentbeats-{service})",
            )
            return
        dockerfile = REPO_ROOT / DOCKERFILES[service]
        if not dockerfile.is_file():
            return  # an installed copy without the sources: nothing more to compare
        text = dockerfile.read_text(encoding="utf-8")
        users = re.findall(r"^USER\s+(\S+)", text, re.M)
        if not users or users[-1] in ("root", "0"):
            self.add(p, "code_image", f"{DOCKERFILES[service]} has no non-root USER")
            return
        owned = re.findall(rf"chown\s+{re.escape(users[-1])}(?::\S+)?\s+([^;&|\n]+)", text)
        folders = {f for group in owned for f in group.split()}
        for i, mount in enumerate(self.program.get("mounts") or []):
            target = mount.get("path") if isinstance(mount, dict) else None
            if not isinstance(target, str):
                continue
            folder = str(Path(target).parent)
            if folder not in folders:
                self.add(
                    child(json_path("program", "mounts", i), "path"),
                    "code_image",
                    f"{folder} is not owned by the image's user {users[-1]} in "
                    f"{DOCKERFILES[service]}: Amber's helper (running as that user) cannot "
                    f"create {target}",
                )
