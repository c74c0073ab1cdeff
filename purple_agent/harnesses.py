"""CLI harnesses: run a coding-agent CLI on a local copy of the task workspace.

The CLI cannot reach the task sandbox, so the agent works on a copy and sends the result back:

1. From turn 1 (task context) on, ``exec`` actions copy the sandbox workspace into a fresh local
   folder, and the skills folder (when the task has one) into ``skills`` beside it — see
   :mod:`purple_agent.seeding` (a tar in the sandbox, read back in chunks that fit the bridge's
   output limit).
2. The CLI runs non-interactively, stdin closed, in its own mount namespace where the copy is at
   the task's own workspace path and the skills at the task's skills path
   (:mod:`purple_agent.namespace`; in the copy itself where bubblewrap cannot run), with its
   invocation from :mod:`purple_agent.clis`, its state in a per-session home outside the
   workspace, and its model calls through the agent's gateway (:mod:`purple_agent.gateway`),
   up to the time budget. ``SKILLSBENCH_AGENT_COMMAND`` replaces the command.
3. Reply ``finish`` with every file the CLI created or changed as ``files`` (deletions are not
   carried back; folders of the CLI's own state are left out) and the gateway's count as
   ``usage``. A CLI that made no model call fails the task with its last lines; a CLI that is not
   installed fails it at once.
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
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from purple_agent.clis import CLIS, LaunchInput
from purple_agent.config import AgentConfig
from purple_agent.gateway import Gateway, GatewayError, load_litellm
from purple_agent.namespace import bwrap_problem, find_bwrap, install_roots, wrap
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


@dataclass
class _Session:
    context: ShellContext
    instruction: str
    root: Path  # local temp folder: workspace/, skills/, prompt and output files
    fetches: list[FolderFetch]  # folders still being copied, current first
    notes: list[str] = field(default_factory=list)
    view_note: str | None = None  # why the CLI did not see the task's own paths
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
        self._sessions: dict[str, _Session] = {}
        self._gateway_obj: Gateway | None = None

    def missing_cli(self) -> str | None:
        """Why the harness cannot run here, or ``None``."""
        program = "/bin/sh" if self._config.command else CLIS[self._config.harness].program
        if shutil.which(program, path=self._environ.get("PATH")) is None:
            return (
                f"harness {self._config.harness!r} is not installed: command {program!r} not "
                "found on PATH (install it in the image or set SKILLSBENCH_AGENT_COMMAND)"
            )
        return None

    def load_model_library_in_background(self) -> threading.Thread:
        """Import litellm (seconds) beside the server, so the first task's gateway starts fast."""
        thread = threading.Thread(target=load_litellm, name="load-litellm", daemon=True)
        thread.start()
        return thread

    def namespace_problem(self) -> str | None:
        """Why the CLI cannot see the task's files at the task's paths here, or ``None``."""
        return bwrap_problem(find_bwrap(self._environ))

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

    async def aclose(self) -> None:
        """Stop the model gateway (the process's exit does it otherwise)."""
        if self._gateway_obj is not None:
            await self._gateway_obj.stop()

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
        token = None
        if not self._config.command:
            try:
                gateway = await self._gateway()
            except GatewayError as exc:
                log.error("%s", exc)
                return Reply(text=str(exc), failed=True)
            token = gateway.open_session()
        try:
            budget -= time.monotonic() - session.started + DEADLINE_MARGIN_SEC
            code = await self._execute(session, max(budget, 1.0), token)
        finally:
            usage = self._gateway_obj.close_session(token) if token and self._gateway_obj else None
        files, skipped = await asyncio.to_thread(
            _changed_files, session.workspace, before, self._new_state_dirs(session, before)
        )
        notes = list(session.notes)
        if session.view_note:
            notes.append(session.view_note)
        name = self._config.harness
        tail = _last_lines(session.root / "stdout.txt", session.root / "stderr.txt")
        if usage is not None and usage.calls == 0:
            why = "ran out of time" if code is None else f"exited with code {code}"
            text = f"{name} made no model call ({why}); its last lines: {tail or '(none)'}"
            log.error("%s", text)
            return Reply(text=text, failed=True, extra_data=[{"usage": usage.report()}])
        if code is None:
            notes.append("the harness ran out of time and was stopped")
        elif code != 0:
            meaning = CLIS[name].exit_codes.get(code) if not self._config.command else None
            notes.append(
                f"the harness exited with code {code}"
                + (f" ({meaning})" if meaning else "")
                + (f"; its last lines: {tail}" if tail else "")
            )
        if usage is not None and usage.failed_calls:
            notes.append(
                f"{usage.failed_calls} of {usage.calls} model call(s) failed"
                + (f" (last: {usage.last_error})" if usage.last_error else "")
            )
        if skipped:
            notes.append(
                f"{len(skipped)} changed file(s) too large to return: {', '.join(skipped)}"
            )
        summary = f"{name} finished; {len(files)} file(s) changed."
        if usage is not None:
            summary += f" {usage.calls} model call(s)."
        message = " ".join([summary, *(n[0].upper() + n[1:] + "." for n in notes)])
        log.info("%s", message)
        extra = [{"usage": usage.report()}] if usage is not None else []
        return Reply(
            text=message, action=FinishAction(message=message, files=files), extra_data=extra
        )

    async def _gateway(self) -> Gateway:
        if self._gateway_obj is None:
            self._gateway_obj = Gateway(self._config)
        await self._gateway_obj.start()
        return self._gateway_obj

    def _new_state_dirs(self, session: _Session, before: Mapping[str, str]) -> set[str]:
        """Top-level folders of the CLI's own state that appeared in the copy (not task output)."""
        if self._config.command:
            return set()
        existed = {rel.split("/", 1)[0] for rel in before}
        return {d for d in STATE_DIRS if d not in existed}

    def _view(self, session: _Session, program: str | None) -> tuple[str, str | None, Any]:
        """Where the CLI sees the workspace and skills, and how to wrap its argv."""
        ctx = session.context
        skills = session.root / "skills"
        local = (str(session.workspace), str(skills) if skills.is_dir() else None)
        bwrap = find_bwrap(self._environ)
        problem = bwrap_problem(bwrap)
        if problem is not None or bwrap is None:
            session.view_note = (
                f"{problem}; the harness ran in a copy at {session.workspace}, not at "
                f"{ctx.workspace}"
            )
            return (*local, None)
        binds = {ctx.workspace: session.workspace}
        shown_skills = None
        if skills.is_dir() and ctx.skills_dir:
            if _inside(ctx.skills_dir, ctx.workspace):  # already in the workspace copy
                shown_skills = ctx.skills_dir
            else:
                binds[ctx.skills_dir] = skills
                shown_skills = ctx.skills_dir
        path_dirs = self._environ.get("PATH", "").split(os.pathsep)
        keep = install_roots(program, path_dirs)

        def wrapper(argv: list[str]) -> list[str]:
            return wrap(
                bwrap,
                argv,
                binds,
                keep,
                chdir=ctx.workspace,
                keep_writable=[str(session.root)],
                needed=[h for h in [self._environ.get("HOME")] if h],
            )

        return ctx.workspace, shown_skills, wrapper

    def _argv_and_env(
        self, session: _Session, token: str | None
    ) -> tuple[list[str], dict[str, str], str]:
        cfg = self._config
        program = shutil.which(
            "/bin/sh" if cfg.command else CLIS[cfg.harness].program, path=self._environ.get("PATH")
        )
        workdir, skills, wrapper = self._view(session, program)
        prompt = session.instruction
        if wrapper is None and workdir != session.context.workspace:  # no namespace: say where
            prompt += (
                f"\n\nThe task's files are in {workdir}: where this task names "
                f"{session.context.workspace}, use {workdir} instead."
            )
        if skills:
            prompt += f"\n\nSkills that may help are in {skills}."
        bare = cfg.model.split("/", 1)[1] if "/" in cfg.model else cfg.model
        home = session.root / "home"
        (home / "tmp").mkdir(parents=True, exist_ok=True)
        prompt_file = session.root / "prompt.md"
        prompt_file.write_text(prompt, encoding="utf-8")
        if cfg.command:
            env = dict(self._environ)
            env.update(cfg.provider_env(env))
            env.update(
                {
                    "SKILLSBENCH_PROMPT": prompt,
                    "SKILLSBENCH_PROMPT_FILE": str(prompt_file),
                    "SKILLSBENCH_WORKSPACE": workdir,
                    "SKILLSBENCH_SKILLS_DIR": skills or "",
                }
            )
            argv = ["/bin/sh", "-c", cfg.command]
        else:
            assert token is not None and self._gateway_obj is not None
            launch = CLIS[cfg.harness].build(
                LaunchInput(
                    prompt=prompt,
                    model=bare,
                    gateway=self._gateway_obj.url,
                    token=token,
                    workdir=workdir,
                    skills=skills,
                    home=str(home),
                )
            )
            for rel, content in launch.files.items():
                target = home / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
            env = {k: v for k, v in self._environ.items() if not _secret_name(k)}
            env.update(launch.env)
            argv = launch.argv
        if wrapper is not None:
            argv = wrapper(argv)
        return argv, env, workdir if wrapper is None else str(session.workspace)

    async def _execute(self, session: _Session, timeout: float, token: str | None) -> int | None:
        """Run the CLI; its output goes to files beside the copy. ``None`` means timed out."""
        argv, env, cwd = self._argv_and_env(session, token)
        log.info("running %s harness (timeout %.0fs)", self._config.harness, timeout)
        with (
            open(session.root / "stdout.txt", "wb") as out,
            open(session.root / "stderr.txt", "wb") as err,
        ):
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
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


# Folders a CLI may leave in its working folder; not task output when they were not there before.
STATE_DIRS = (
    "terminus_logs",
    ".openhands",
    ".codex",
    ".claude",
    ".gemini",
    ".opencode",
    ".pi",
)
_SECRET_SUFFIXES = ("API_KEY", "_TOKEN", "_KEY", "SECRET", "PASSWORD")


def _secret_name(name: str) -> bool:
    upper = name.upper()
    return upper.endswith(_SECRET_SUFFIXES) or upper.startswith("SKILLSBENCH_AGENT_")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _last_lines(*paths: Path, lines: int = 8, limit: int = 1200) -> str:
    """The CLI's last output lines (stderr last), one string for a reason or note."""
    kept: list[str] = []
    for path in paths:
        with contextlib.suppress(OSError):
            text = path.read_bytes()[-8000:].decode("utf-8", "replace")
            kept += [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(kept[-lines:])[-limit:]


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


def _changed_files(
    folder: Path, before: Mapping[str, str], left_out: set[str] | None = None
) -> tuple[list[FileContent], list[str]]:
    """Files created or changed since ``before``; ``left_out``: top-level folders not sent."""
    files: list[FileContent] = []
    skipped: list[str] = []
    total = 0
    for rel, digest in _snapshot(folder).items():
        if before.get(rel) == digest or rel.split("/", 1)[0] in (left_out or ()):
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
