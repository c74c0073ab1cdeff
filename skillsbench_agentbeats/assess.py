"""``skillsbench-agentbeats assess``: run an assessment the way the AgentBeats gateway does.

With ``--green`` it is a gateway-style client of that green agent. Without, it wires the parts in
this process (the composition root's job): a green agent, and the real worker unless
``SKILLSBENCH_WORKER_URL`` / ``SKILLSBENCH_WORKER_SLOT_URL`` names one.

SIGINT (Ctrl-C) and SIGTERM cancel the assessment where it runs (A2A ``CancelTask`` to the green
agent, which cancels its worker run), then exit 130 or 143 with one line and no traceback; the
results document says ``canceled``. A second signal stops waiting for that cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from green_agent.gateway import (
    AgentsNotReady,
    cancel_assessment,
    run_assessment,
    wait_for_cards,
)
from green_agent.settings import WORKER_SLOT_URL, WORKER_URL
from serving.invocation import command_prefix
from serving.output import prepare_output_file
from skillsbench_agentbeats.in_process import local_green, local_worker
from worker.service.cli import environment_option, task_cache_option

if TYPE_CHECKING:
    from green_agent.selection import Selection


def _load_config(value: str) -> dict[str, Any]:
    text = value
    if value.startswith("@"):
        try:
            text = Path(value[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(
                f"--config: cannot read {value[1:]}: {exc.strerror}"
            ) from None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.ClickException(
            f"--config: not valid JSON: {exc.msg} at char {exc.pos}"
        ) from None
    if not isinstance(config, dict):
        raise click.ClickException("--config: must be a JSON object")
    return config


def _check_locally(
    participant: str, config: dict[str, Any], green_url: str | None
) -> Selection | None:
    """What the green agent would refuse, refused here first in one line (a ``ValueError``):
    the participant URL, the request's shape and, when the green agent is ours (no --green),
    the config itself (task set, tasks, shard), whose selection is returned."""
    from green_agent.request import RequestError, parse_request

    if green_url is not None:
        parts = urlsplit(green_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--green: must be an absolute http(s) URL, got {green_url!r}")
    else:  # the local green agent's settings (a bad SKILLSBENCH_WORKER_URL), refused now
        from green_agent.settings import load_settings

        load_settings()
    try:
        parse_request(json.dumps({"participants": {"agent": participant}, "config": config}))
        if green_url is None:
            from green_agent.selection import select

            return select(config)
    except RequestError as exc:
        if exc.field.startswith("participants."):
            raise ValueError(f"--participant: {exc.problem}") from None
        raise ValueError(f"--config: {exc}") from None
    return None


def _local_tasks_dir(selection: Selection, task_cache: Path | None) -> Path:
    """The task folders of the worker this process starts: the selected set's fetched tasks
    when there are (``task-set fetch``), else the default; missing ones refused now, naming how
    to fetch them, not as a failed assessment later."""
    from task_sets.manifest import load_task_set
    from worker.runs.catalog import check_task_folders, resolve_tasks_dir

    folder = resolve_tasks_dir(None, selection.task_set, task_cache)
    document = load_task_set(selection.task_set).document()
    document["tasks"] = [task.model_dump() for task in selection.tasks]
    check_task_folders(document, folder, selection.task_set)
    return folder


@contextlib.contextmanager
def _temporary_jobs_dir() -> Iterator[Path]:
    """A jobs dir for this assessment only, removed when it ends however it ends (a file the
    sandbox left read-only included); one that cannot be removed is named, never hidden."""
    folder = Path(tempfile.mkdtemp(prefix="skillsbench-assess-"))
    try:
        yield folder
    finally:
        _remove_tree(folder)


def _remove_tree(folder: Path) -> None:
    def writable_then_retry(function: Any, path: str, _info: Any) -> None:
        os.chmod(os.path.dirname(path), 0o700)  # a folder the sandbox left read-only
        function(path)

    try:
        shutil.rmtree(folder, onerror=writable_then_retry)  # onexc from Python 3.12
    except OSError as exc:
        _progress(f"warning: could not remove the temporary jobs dir {folder}: {exc}")


def _progress(line: str) -> None:
    click.echo(line, err=True)


class _Session:
    """What an interrupt needs: the signals received, and the assessment to cancel."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.green_url: str | None = None
        self.task_id: str | None = None

    def install(self, main: asyncio.Task[Any]) -> None:
        """SIGINT and SIGTERM cancel ``main``, which then cancels the assessment it runs."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._received, signum, main)

    def uninstall(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)

    def _received(self, signum: int, main: asyncio.Task[Any]) -> None:
        name = signal.Signals(signum).name
        if self.signals:
            _progress(f"{name} again: no longer waiting for the cancellation")
        else:
            _progress(f"{name} received: cancelling the assessment")
        self.signals.append(signum)
        main.cancel()

    async def follow(
        self, green_url: str, participants: dict[str, str], config: dict[str, Any]
    ) -> dict[str, Any]:
        """The assessment at ``green_url``; interrupted, it is cancelled there (A2A CancelTask:
        the green agent cancels the worker run before it answers) before this returns."""
        self.green_url = green_url
        try:
            return await run_assessment(
                green_url, participants, config, _progress, on_task=self._task
            )
        except asyncio.CancelledError:
            if self.signals:
                await self._cancel_remote(green_url)
            raise

    def _task(self, task_id: str) -> None:
        self.task_id = task_id

    async def _cancel_remote(self, green_url: str) -> None:
        if self.task_id is None:
            _progress("the green agent had not started the assessment yet: nothing to cancel")
            return
        try:
            state = await cancel_assessment(green_url, self.task_id)
        except Exception as exc:
            _progress(
                f"could not cancel assessment {self.task_id} at {green_url}: "
                f"{type(exc).__name__}: {exc}"
            )
            return
        _progress(f"assessment {self.task_id} at {green_url} is {state} (its worker run too)")

    def interrupted(self) -> dict[str, Any]:
        """The results document of an interrupted assessment: nothing to publish, and why."""
        name = signal.Signals(self.signals[0]).name
        return {"status": "canceled", "results": [], "error": f"interrupted by {name}"}


async def _assess(
    session: _Session,
    participant: str,
    config: dict[str, Any],
    green_url: str | None,
    jobs_dir: Path | None,
    environment: str,
    tasks_dir: Path | None,
) -> dict[str, Any]:
    participants = {"agent": participant}
    if green_url is not None:
        await wait_for_cards([green_url, participant], progress=_progress)
        return await session.follow(green_url, participants, config)
    env: dict[str, str] = {}
    async with contextlib.AsyncExitStack() as stack:
        if not (os.environ.get(WORKER_URL) or os.environ.get(WORKER_SLOT_URL)):
            # Entered before the worker, so left after it: whatever ends the assessment
            # (completion, an error, an interrupt), the worker stops and then its folder goes.
            jobs = jobs_dir or stack.enter_context(_temporary_jobs_dir())
            worker_url = await stack.enter_async_context(
                local_worker(jobs, environment, tasks_dir=tasks_dir)
            )
            where = f"jobs dir {jobs}" + ("" if jobs_dir else ", removed at the end")
            _progress(f"started a local worker at {worker_url} ({where})")
            env[WORKER_URL] = worker_url
        url = await stack.enter_async_context(local_green(env))
        _progress(f"started a local green agent at {url}")
        await wait_for_cards([url, participant], progress=_progress)
        return await session.follow(url, participants, config)


async def _main(
    participant: str,
    config: dict[str, Any],
    green_url: str | None,
    jobs_dir: Path | None,
    environment: str,
    tasks_dir: Path | None,
) -> tuple[dict[str, Any], int | None]:
    """The results document, and the signal that interrupted the assessment (if one did)."""
    session = _Session()
    main = asyncio.current_task()
    assert main is not None
    session.install(main)
    try:
        result = await _assess(
            session, participant, config, green_url, jobs_dir, environment, tasks_dir
        )
    except asyncio.CancelledError:
        if not session.signals:
            raise
        return session.interrupted(), session.signals[0]
    except Exception as exc:  # the gateway exports any failure as status "failed"
        if session.signals:  # a failure while stopping is part of the interrupt
            return session.interrupted(), session.signals[0]
        message = str(exc) if isinstance(exc, AgentsNotReady) else f"{type(exc).__name__}: {exc}"
        result = {"status": "failed", "results": [], "error": message}
    finally:
        session.uninstall()
    if session.signals:  # the assessment ended as the signal arrived
        return session.interrupted(), session.signals[0]
    return result, None


@click.command(name="assess")
@click.option("--participant", required=True, help="A2A URL of the agent under test.")
@click.option("--config", "config_arg", required=True, help="Assessment config: JSON or @file.")
@click.option("--green", "green_url", default=None, help="Green agent URL (default: start one).")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the gateway-shaped results here (default: stdout).",
)
@click.option(
    "--jobs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Jobs dir of the local worker (without --green; default: a temporary dir, removed "
    "at the end).",
)
@environment_option(help="Sandbox of the local worker (without --green).")
@task_cache_option()
def assess(
    participant: str,
    config_arg: str,
    green_url: str | None,
    output: Path | None,
    jobs_dir: Path | None,
    environment: str,
    task_cache: Path | None,
) -> None:
    """Run an assessment the way the AgentBeats gateway does and write its results file.

    Without --green, a green agent starts in this process, with the worker named by
    SKILLSBENCH_WORKER_URL, else a local worker in this process.
    """
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    config = _load_config(config_arg)
    selection = _check_locally(participant, config, green_url)
    tasks_dir = None
    if selection is not None and not (
        os.environ.get(WORKER_URL) or os.environ.get(WORKER_SLOT_URL)
    ):
        tasks_dir = _local_tasks_dir(selection, task_cache)
    result, signum = asyncio.run(
        _main(participant, config, green_url, jobs_dir, environment, tasks_dir)
    )
    text = json.dumps(result, indent=2)
    if output is not None:
        prepare_output_file(output).write_text(text + "\n", encoding="utf-8")
        _progress(f"wrote {output}")
        if result["status"] == "completed":
            _progress(
                f"next: {command_prefix()} leaderboard aggregate {output} --agent UUID "
                "--output results/NAME.json (one file per shard; then leaderboard validate)"
            )
    else:
        click.echo(text)
    if result["status"] != "completed":
        reason = str(result.get("error") or "")
        if not reason.lower().startswith(f"assessment {result['status']}"):
            reason = f"assessment {result['status']}: {reason}".rstrip(": ")
        click.echo(f"error: {reason[0].lower()}{reason[1:]}", err=True)
        # 128 + the signal, as a shell reports a command a signal stopped (130, 143)
        sys.exit(128 + signum if signum is not None else 1)
