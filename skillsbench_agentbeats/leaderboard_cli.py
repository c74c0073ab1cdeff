"""``skillsbench-agentbeats leaderboard``: the leaderboard component's group, with ``report``
taking ``--jobs``: a trial id of the page links to its transcript (written beside the page by the
worker's viewer) where those job folders hold the trial. The composition root wires the two, as
the leaderboard may not import the worker."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import click

from leaderboard.cli import leaderboard, report_options, write_report


class TranscriptLinks:
    """Trial id -> the address (relative to the page) of its transcript, written on first use
    into ``<page name>-trials/`` beside the page; None for a trial the job folders do not hold."""

    def __init__(self, jobs_dirs: tuple[Path, ...], page: Path) -> None:
        from worker.viewer import lookup
        from worker.viewer.trial_folder import inside

        self.folders: dict[str, Path] = {}
        for jobs in jobs_dirs:
            for _, entries in lookup.runs(jobs):
                for entry in entries:
                    if inside(entry.folder, jobs) and entry.folder.is_dir():
                        self.folders.setdefault(entry.trial_id, entry.folder)
        self.name = f"{page.stem}-trials"
        self.target = page.parent / self.name
        self.written = 0

    def __call__(self, trial_id: str) -> str | None:
        from worker.viewer.html import render
        from worker.viewer.trial_folder import load

        folder = self.folders.get(trial_id)
        if folder is None or "/" in trial_id or trial_id.startswith("."):
            return None
        self.target.mkdir(parents=True, exist_ok=True)
        (self.target / f"{trial_id}.html").write_text(render(load(folder)), encoding="utf-8")
        self.written += 1
        return f"{quote(self.name)}/{quote(trial_id)}.html"


@leaderboard.command(name="report")
@report_options
@click.option(
    "--jobs",
    "jobs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Job folders (`run --jobs-dir`, the worker's): a trial id they hold links to its "
    "transcript, written into PAGE-trials/ beside the page; repeatable.",
)
def report(
    results: tuple[str, ...],
    output: Path,
    participant: str | None,
    title: str,
    labels: Path | None,
    jobs: tuple[Path, ...],
) -> None:
    """Write one static HTML page: tables, pass-rate charts, confidence intervals, per-task rows
    (with --jobs, each trial id linked to its transcript)."""
    links = TranscriptLinks(jobs, output) if jobs else None
    write_report(results, output, participant, title, labels, links)
    if links is not None:
        click.echo(f"wrote {links.written} transcript(s) into {links.target}")
