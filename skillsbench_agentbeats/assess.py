"""``skillsbench-agentbeats assess``: run an assessment the way the AgentBeats gateway does.

With ``--green`` it is a gateway-style client of that green agent. Without, it wires the parts in
this process (the composition root's job): a green agent, and the real worker unless
``SKILLSBENCH_WORKER_URL`` / ``SKILLSBENCH_WORKER_SLOT_URL`` names one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from green_agent.gateway import AgentsNotReady, run_assessment, wait_for_cards
from green_agent.settings import WORKER_SLOT_URL, WORKER_URL
from serving.invocation import command_prefix
from serving.output import prepare_output_file
from skillsbench_agentbeats.in_process import local_green, local_worker
from worker.service.cli import environment_option


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


def _check_locally(participant: str, config: dict[str, Any], green_url: str | None) -> None:
    """What the green agent would refuse, refused here first in one line (a ``ValueError``):
    the participant URL, the request's shape and, when the green agent is ours (no --green),
    the config itself (task set, tasks, shard)."""
    from green_agent.request import RequestError, parse_request

    if green_url is not None:
        parts = urlsplit(green_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--green: must be an absolute http(s) URL, got {green_url!r}")
    try:
        parse_request(json.dumps({"participants": {"agent": participant}, "config": config}))
        if green_url is None:
            from green_agent.selection import select

            select(config)
    except RequestError as exc:
        if exc.field.startswith("participants."):
            raise ValueError(f"--participant: {exc.problem}") from None
        raise ValueError(f"--config: {exc}") from None


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


async def _assess(
    participant: str,
    config: dict[str, Any],
    green_url: str | None,
    jobs_dir: Path | None,
    environment: str,
) -> dict[str, Any]:
    participants = {"agent": participant}
    if green_url is not None:
        await wait_for_cards([green_url, participant])
        return await run_assessment(green_url, participants, config, _progress)
    env: dict[str, str] = {}
    async with contextlib.AsyncExitStack() as stack:
        if not (os.environ.get(WORKER_URL) or os.environ.get(WORKER_SLOT_URL)):
            # Entered before the worker, so left after it: whatever ends the assessment
            # (completion, an error, an interrupt), the worker stops and then its folder goes.
            jobs = jobs_dir or stack.enter_context(_temporary_jobs_dir())
            worker_url = await stack.enter_async_context(local_worker(jobs, environment))
            where = f"jobs dir {jobs}" + ("" if jobs_dir else ", removed at the end")
            _progress(f"started a local worker at {worker_url} ({where})")
            env[WORKER_URL] = worker_url
        url = await stack.enter_async_context(local_green(env))
        _progress(f"started a local green agent at {url}")
        await wait_for_cards([url, participant])
        return await run_assessment(url, participants, config, _progress)


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
def assess(
    participant: str,
    config_arg: str,
    green_url: str | None,
    output: Path | None,
    jobs_dir: Path | None,
    environment: str,
) -> None:
    """Run an assessment the way the AgentBeats gateway does and write its results file.

    Without --green, a green agent starts in this process, with the worker named by
    SKILLSBENCH_WORKER_URL, else a local worker in this process.
    """
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    config = _load_config(config_arg)
    _check_locally(participant, config, green_url)
    try:
        result = asyncio.run(_assess(participant, config, green_url, jobs_dir, environment))
    except Exception as exc:  # the gateway exports any failure as status "failed"
        message = str(exc) if isinstance(exc, AgentsNotReady) else f"{type(exc).__name__}: {exc}"
        result = {"status": "failed", "results": [], "error": message}
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
        click.echo(
            f"error: assessment {result['status']}: {result.get('error', '')}".rstrip(": "),
            err=True,
        )
        sys.exit(1)
