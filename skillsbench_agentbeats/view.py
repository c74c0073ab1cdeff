"""``skillsbench-agentbeats view``: the web viewer over job folders (:mod:`worker.viewer.web`),
and with ``--results`` the leaderboard tables of results files beside them, their trial ids linked
to the trials of those folders. Here, in the composition root, because it joins the worker's
viewer and the leaderboard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from worker.viewer.lookup import DEFAULT_JOBS_DIR
from worker.viewer.serve import DEFAULT_PORT, check_roots, serve
from worker.viewer.web import Leaderboard


@click.command(
    help="A local web app over job folders: runs, their trials (filter, search, sort), each "
    "trial's actions, outputs, usage and verifier output, two agents or runs compared task by "
    "task; a running run updates live. With --results, the leaderboard tables of results files "
    "(with 95% intervals) at /leaderboard, each trial id linked to its trial where these job "
    "folders hold it. JOBS: jobs folders (`run --jobs-dir`, the worker's --jobs-dir) or run "
    "folders; default jobs/local."
)
@click.argument("jobs", nargs=-1, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--results", "results", multiple=True, metavar="FILES",
    help="Results files (a quoted glob, a file or a folder of *.json; repeatable): the "
    "gateway's results JSON, `run`/`assess --output` files or published leaderboard files.",
)  # fmt: skip
@click.option(
    "--labels", type=click.Path(path_type=Path, dir_okay=False),
    help='A JSON object {"<agent UUID>": "label"} shown beside the ids (with --results).',
)  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
    help="Port to listen on (0: any free port).",
)  # fmt: skip
@click.option(
    "--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
    help="Seconds between two looks at the folders for live updates.",
)  # fmt: skip
def view(
    jobs: tuple[Path, ...],
    results: tuple[str, ...],
    labels: Path | None,
    host: str,
    port: int,
    poll: float,
) -> None:
    check_roots(jobs)
    roots = list(jobs) or [DEFAULT_JOBS_DIR]
    if not jobs and not DEFAULT_JOBS_DIR.is_dir():
        # `view &` then `run`: the default folder is made by the first run; the viewer waits
        click.echo(
            f"{DEFAULT_JOBS_DIR} does not exist yet: runs appear here once `run` makes it",
            err=True,
        )
    if labels is not None and not results:
        raise ValueError("--labels names the agents of results files: give --results too")
    board = _leaderboard(results, labels) if results else None
    described = f" and {len(board.files())} results file(s) at /leaderboard" if board else ""
    serve(roots, host, port, poll, board, described)


def _leaderboard(patterns: tuple[str, ...], labels_file: Path | None) -> Leaderboard:
    from leaderboard.report import SECTION_CSS, GroupLinks, load_labels, report_sections
    from leaderboard.results_files import confined_results_paths

    given = list(patterns)
    confined_results_paths(given)  # now: a pattern that matches nothing is a one-line error
    labels = load_labels(labels_file) if labels_file is not None else None

    def sections(links: Callable[[str], str | None], groups: GroupLinks) -> str:
        # The files as served, not the patterns: a symlink out of a folder given stays out.
        files = [str(path) for path in confined_results_paths(given)]
        return report_sections(
            files, title="Leaderboard", labels=labels, trial_links=links, group_links=groups
        )

    return Leaderboard(
        files=lambda: confined_results_paths(given), sections=sections, style=SECTION_CSS
    )
