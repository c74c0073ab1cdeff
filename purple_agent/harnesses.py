"""CLI harnesses: run a coding-agent CLI on a local copy of the task workspace.

The CLI cannot reach the task sandbox, so the agent works on a copy and sends the result back:

1. From turn 1 (task context) on, ``exec`` actions copy the sandbox workspace into a fresh local
   folder, and the skills folder (when the task has one) into ``skills`` beside it — see
   :mod:`purple_agent.seeding` (a tar in the sandbox, read back in chunks that fit the bridge's
   output limit).
2. The CLI runs non-interactively in the copy (prompt, model and folder as :data:`HARNESSES`
   says; ``SKILLSBENCH_AGENT_COMMAND`` replaces the command), up to the time budget.
3. Reply ``finish`` with every file the CLI created or changed as ``files`` (deletions are not
   carried back). If the CLI is not installed, the task fails at once with a clear message.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from purple_agent.config import AgentConfig
from purple_agent.seeding import FolderFetch, chunk_size
from purple_agent.server import Reply, Turn, TurnAgent
from worker.bridge.protocol import (
    FileContent,
    FinishAction,
    ShellContext,
    find_action_result,
    find_context,
)

log = logging.getLogger("purple_agent.harness")

MAX_RETURNED_BYTES = 32 * 1024 * 1024  # files[] budget; larger changes are listed, not sent
DEADLINE_MARGIN_SEC = 10.0


@dataclass(frozen=True)
class HarnessSpec:
    """How one CLI runs without a human: argv template and the variables it reads.

    Templates may use ``{prompt}``, ``{model}`` (``provider/model``), ``{bare_model}`` (no
    provider prefix), ``{provider}`` and ``{workspace}``. The API key only ever goes into the
    environment (``key_env``), never into argv.
    """

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    key_env: tuple[str, ...] = ()
    base_url_env: tuple[str, ...] = ()


HARNESSES: dict[str, HarnessSpec] = {
    "openhands": HarnessSpec(
        argv=("openhands", "--headless", "-t", "{prompt}"),
        env={"LLM_MODEL": "{model}", "OPENHANDS_SUPPRESS_BANNER": "1"},
        key_env=("LLM_API_KEY",),
        base_url_env=("LLM_BASE_URL",),
    ),
    "opencode": HarnessSpec(argv=("opencode", "run", "--model", "{model}", "{prompt}")),
    "claude-code": HarnessSpec(
        argv=(
            "claude",
            "-p",
            "{prompt}",
            "--model",
            "{bare_model}",
            "--dangerously-skip-permissions",
        ),
        key_env=("ANTHROPIC_API_KEY",),
        base_url_env=("ANTHROPIC_BASE_URL",),
    ),
    "codex": HarnessSpec(
        argv=(
            "codex",
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--model",
            "{bare_model}",
            "{prompt}",
        ),
        key_env=("OPENAI_API_KEY",),
        base_url_env=("OPENAI_BASE_URL",),
    ),
    "gemini-cli": HarnessSpec(
        argv=("gemini", "--yolo", "--model", "{bare_model}", "--prompt", "{prompt}"),
        key_env=("GEMINI_API_KEY",),
        base_url_env=("GOOGLE_GEMINI_BASE_URL",),
    ),
    "terminus": HarnessSpec(argv=("terminus", "--model", "{model}", "{prompt}")),
    "pi": HarnessSpec(
        argv=("pi", "--print", "--provider", "{provider}", "--model", "{bare_model}", "{prompt}")
    ),
}


@dataclass
class _Session:
    context: ShellContext
    instruction: str
    root: Path  # local temp folder: workspace/, skills/, prompt and output files
    fetches: list[FolderFetch]  # folders still being copied, current first
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"


class HarnessAgent(TurnAgent):
    def __init__(self, config: AgentConfig, environ: Mapping[str, str] | None = None) -> None:
        if config.harness == "minimal":
            raise ValueError("the minimal harness is built in, not a CLI harness")
        self._config = config
        self._environ = dict(os.environ if environ is None else environ)
        self._spec = HARNESSES[config.harness]
        self._sessions: dict[str, _Session] = {}

    def missing_cli(self) -> str | None:
        """Why the harness cannot run here, or ``None``."""
        program = "/bin/sh" if self._config.command else self._spec.argv[0]
        if shutil.which(program, path=self._environ.get("PATH")) is None:
            return (
                f"harness {self._config.harness!r} is not installed: command {program!r} not "
                "found on PATH (install it in the image or set SKILLSBENCH_AGENT_COMMAND)"
            )
        return None

    async def respond(self, turn: Turn) -> Reply:
        context = find_context(turn.data)
        if context is not None:
            if (why := self.missing_cli()) is not None:
                log.error("%s", why)
                return Reply(text=why, failed=True)
            self._drop(turn.context_id)
            session = self._start(context, turn.text)
            self._sessions[turn.context_id] = session
        elif (found := self._sessions.get(turn.context_id)) is None:
            return Reply(
                text="I take tasks in the skillsbench-shell/v1 protocol: send the task context first.",
                failed=True,
            )
        else:
            session = found
            session.fetches[0].feed(find_action_result(turn.data))
        try:
            while session.fetches and session.fetches[0].done:
                fetch = session.fetches.pop(0)
                await asyncio.to_thread(fetch.unpack)
                if fetch.note:
                    session.notes.append(fetch.note + "; the harness started without it")
            if session.fetches:
                step = session.fetches[0]
                return Reply(text=f"Copying the {step.name} folder.", action=step.next_action())
            return await self._run(session)
        finally:
            if not session.fetches:
                self._drop(turn.context_id)

    async def cancel(self, context_id: str) -> None:
        self._drop(context_id)

    def _drop(self, context_id: str) -> None:
        session = self._sessions.pop(context_id, None)
        if session is not None:
            shutil.rmtree(session.root, ignore_errors=True)

    def _start(self, context: ShellContext, instruction: str) -> _Session:
        root = Path(tempfile.mkdtemp(prefix="skillsbench-harness-"))
        chunk = chunk_size(context.limits.max_output_bytes)
        # leave turns for the pack commands and the finish; None means no announced limit
        turns = (context.limits.max_turns or 10_000) - 4
        folders = [("workspace", context.workspace)]
        if context.skills_dir:
            folders.append(("skills", context.skills_dir))
        fetches = [
            FolderFetch(name, remote, root / name, chunk, max_chunks=turns // len(folders))
            for name, remote in folders
        ]
        return _Session(context, instruction, root, fetches)

    async def _run(self, session: _Session) -> Reply:
        session.workspace.mkdir(parents=True, exist_ok=True)
        before = await asyncio.to_thread(_snapshot, session.workspace)
        budget = self._config.timeout_sec
        if session.context.limits.deadline_sec is not None:
            budget = min(budget, session.context.limits.deadline_sec)
        budget -= time.monotonic() - session.started + DEADLINE_MARGIN_SEC
        code = await self._execute(session, max(budget, 1.0))
        files, skipped = await asyncio.to_thread(_changed_files, session.workspace, before)
        notes = list(session.notes)
        if code is None:
            notes.append("the harness ran out of time and was stopped")
        elif code != 0:
            notes.append(f"the harness exited with code {code}")
        if skipped:
            notes.append(
                f"{len(skipped)} changed file(s) too large to return: {', '.join(skipped)}"
            )
        summary = f"{self._config.harness} finished; {len(files)} file(s) changed."
        message = " ".join([summary, *(n[0].upper() + n[1:] + "." for n in notes)])
        log.info("%s", message)
        return Reply(text=message, action=FinishAction(message=message, files=files))

    def _argv_and_env(self, session: _Session) -> tuple[list[str], dict[str, str]]:
        cfg = self._config
        prompt = session.instruction
        skills = session.root / "skills"
        if skills.is_dir():
            prompt += f"\n\nSkills that may help are in {skills}."
        values = {
            "prompt": prompt,
            "model": cfg.litellm_model,
            "bare_model": cfg.model.split("/", 1)[1] if "/" in cfg.model else cfg.model,
            "provider": cfg.provider_name or "",
            "workspace": str(session.workspace),
        }
        env = dict(self._environ)
        env.update(cfg.provider_env(env))
        if cfg.api_key is not None:
            for name in self._spec.key_env:
                env.setdefault(name, cfg.api_key.get_secret_value())
        if cfg.base_url:
            for name in self._spec.base_url_env:
                env.setdefault(name, cfg.base_url)
        env.update({k: v.format(**values) for k, v in self._spec.env.items()})
        prompt_file = session.root / "prompt.md"
        prompt_file.write_text(prompt, encoding="utf-8")
        env.update(
            {
                "SKILLSBENCH_PROMPT": prompt,
                "SKILLSBENCH_PROMPT_FILE": str(prompt_file),
                "SKILLSBENCH_WORKSPACE": str(session.workspace),
                "SKILLSBENCH_SKILLS_DIR": str(skills) if skills.is_dir() else "",
            }
        )
        if cfg.command:
            return ["/bin/sh", "-c", cfg.command], env
        return [part.format(**values) for part in self._spec.argv], env

    async def _execute(self, session: _Session, timeout: float) -> int | None:
        """Run the CLI; its output goes to files beside the copy. ``None`` means timed out."""
        argv, env = self._argv_and_env(session)
        log.info("running %s harness (timeout %.0fs)", self._config.harness, timeout)
        with (
            open(session.root / "stdout.txt", "wb") as out,
            open(session.root / "stderr.txt", "wb") as err,
        ):
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=session.workspace,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # so a timeout kills the CLI's children too
            )
            try:
                return await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                await _kill_group(proc)
                return None
            except asyncio.CancelledError:  # the task was cancelled: stop the CLI, stay cancelled
                await _kill_group(proc)
                raise
            finally:
                with contextlib.suppress(OSError):  # a cancel may have removed the session
                    tail = (session.root / "stderr.txt").read_bytes()[-2000:]
                    if tail:
                        log.info("harness stderr tail: %s", tail.decode("utf-8", "replace"))


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _changed_files(folder: Path, before: Mapping[str, str]) -> tuple[list[FileContent], list[str]]:
    files: list[FileContent] = []
    skipped: list[str] = []
    total = 0
    for rel, digest in _snapshot(folder).items():
        if before.get(rel) == digest:
            continue
        data = (folder / rel).read_bytes()
        if total + len(data) > MAX_RETURNED_BYTES:
            skipped.append(rel)
            continue
        total += len(data)
        try:
            files.append(FileContent(path=rel, content=data.decode("utf-8")))
        except UnicodeDecodeError:
            files.append(
                FileContent(path=rel, content=base64.b64encode(data).decode(), encoding="base64")
            )
    return files, skipped
