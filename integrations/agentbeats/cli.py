"""AgentBeats deployment commands: ``readiness assemble``, ``images evidence``, ``deploy-bundle``,
``ghcr-preflight``, ``manifests check``.

The composition root (:mod:`skillsbench_agentbeats.commands`) groups ``assemble`` with the
leaderboard's ``readiness validate`` and ``images evidence`` with the worker's ``build-tasks``.
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from leaderboard.findings import Finding, errors
from leaderboard.readiness_cli import (
    FILE,
    queries_dir_option,
    query_runner,
    read_json,
    report,
    task_set_file_option,
    task_set_loader,
    write_json,
)
from serving.output import prepare_output_file

# --- readiness assemble --------------------------------------------------------------------


def _run_input(url: str, files: tuple[Path, ...], refs: tuple[str, ...], name: str) -> Any:
    from integrations.agentbeats.evidence_assembly import RunInput

    if not files:
        raise click.UsageError(f"--{name}-results is required (one or more results files)")
    return RunInput(workflow_run_url=url, results_files=list(files), proof_refs=list(refs))


@click.command("assemble")
@click.option("--images", "images_path", type=FILE, required=True, help="`images evidence` output.")
@click.option(
    "--task-environment-images", type=FILE, required=True, help="Map, images[] or deploy bundle."
)
@click.option(
    "--task-set", "task_set_name", help="Task set name or manifest path (default: the bundle's)."
)
@click.option("--leaderboard-repo", required=True, help="<owner>/<repo> of the leaderboard.")
@click.option("--green-agent-id", required=True)
@click.option("--purple-agent-id", required=True)
@click.option("--private-proof-storage", required=True, help="Durable private proof prefix.")
@click.option("--private-proof-retention", required=True)
@click.option("--smoke-run-url", required=True)
@click.option("--smoke-results", type=FILE, multiple=True)
@click.option("--smoke-proof-ref", multiple=True)
@click.option("--canonical-run-url", required=True)
@click.option("--canonical-results", type=FILE, multiple=True)
@click.option("--canonical-proof-ref", multiple=True)
@click.option("--quick-submit-results", type=FILE, help="Enables Quick Submit evidence.")
@click.option("--quick-submit-run-url")
@click.option("--no-query-verify", is_flag=True, help="Draft only: skip the query re-run.")
@queries_dir_option
@task_set_file_option
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
def assemble(**opts: Any) -> None:
    """Build evidence from images, task images, results files, run URLs and proof refs."""
    from integrations.agentbeats.evidence_assembly import EvidenceInputs, assemble_evidence
    from integrations.agentbeats.task_images import load_task_images
    from leaderboard.readiness import validate_evidence

    output: Path = opts["output"]
    images = read_json(opts["images_path"])
    task_images_path: Path = opts["task_environment_images"]
    task_set_name = opts["task_set_name"]
    if task_set_name is None:
        bundle = read_json(task_images_path)
        task_set_name = (
            (bundle.get("task_set") or {}).get("task_set") if isinstance(bundle, dict) else None
        )
        if not isinstance(task_set_name, str):
            raise click.UsageError(
                "--task-set is required unless the task images are a deploy bundle"
            )
    loader = task_set_loader(opts["task_set_file"])
    if opts["quick_submit_results"] is not None and not opts["quick_submit_run_url"]:
        raise click.UsageError("--quick-submit-results needs --quick-submit-run-url")
    inputs = EvidenceInputs(
        images=images if isinstance(images, dict) else {},
        task_images=load_task_images(task_images_path),
        task_set=loader(task_set_name),
        repository=opts["leaderboard_repo"],
        green_agent_id=opts["green_agent_id"],
        purple_agent_id=opts["purple_agent_id"],
        private_proof_storage=opts["private_proof_storage"],
        private_proof_retention=opts["private_proof_retention"],
        smoke=_run_input(
            opts["smoke_run_url"], opts["smoke_results"], opts["smoke_proof_ref"], "smoke"
        ),
        canonical=_run_input(
            opts["canonical_run_url"],
            opts["canonical_results"],
            opts["canonical_proof_ref"],
            "canonical",
        ),
        quick_submit_results=opts["quick_submit_results"],
        quick_submit_run_url=opts["quick_submit_run_url"],
    )
    base_dir = prepare_output_file(output).parent  # results paths are recorded relative to it
    if opts["no_query_verify"]:
        doc = assemble_evidence(inputs, base_dir=base_dir, queries=None)
        write_json(output, doc)
        click.echo(f"wrote DRAFT evidence {output} (no query verification: not public-ready)")
        return
    queries = query_runner(opts["queries_dir"])
    doc = assemble_evidence(inputs, base_dir=base_dir, queries=queries)
    findings = validate_evidence(doc, base_dir=base_dir, queries=queries, task_set_loader=loader)
    if findings:
        report(findings, False)
        click.echo(f"{len(findings)} readiness violation(s); evidence not written", err=True)
        sys.exit(1)
    write_json(output, doc)
    counts = doc["leaderboard"]["query_row_counts"]
    click.echo(
        f"wrote {output} (query rows: " + ", ".join(f"{k}={v}" for k, v in counts.items()) + ")"
    )


# --- images evidence --------------------------------------------------------------------------------


def _registry_overrides(values: tuple[str, ...]) -> dict[str, str] | None:
    from integrations.agentbeats.registry import parse_url_overrides

    return parse_url_overrides(",".join(values)) if values else None


@click.command("evidence")
@click.option("--green-image", required=True)
@click.option("--worker-image", required=True)
@click.option("--purple-image", required=True)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option(
    "--registry-url-override",
    multiple=True,
    metavar="HOST=URL",
    help="Reach registry HOST at URL (tests, mirrors); also env SKILLSBENCH_REGISTRY_URL_OVERRIDES.",
)
def evidence(
    green_image: str,
    worker_image: str,
    purple_image: str,
    output: Path,
    registry_url_override: tuple[str, ...],
) -> None:
    """Resolve digests and linux/amd64 platform anonymously from the registry."""
    from integrations.agentbeats.image_evidence import collect_image_evidence
    from integrations.agentbeats.registry import RegistryClient

    refs = {"green": green_image, "worker": worker_image, "purple": purple_image}

    async def run() -> dict[str, Any]:
        async with RegistryClient(_registry_overrides(registry_url_override)) as client:
            return await collect_image_evidence(refs, client)

    data = asyncio.run(run())
    write_json(output, data)
    for role in refs:
        click.echo(f"{role}: {data[f'{role}_image']} ({data[f'{role}_image_platform']})")


@click.command("build-base")
def build_base() -> None:
    """Make the local Python base image the service images build on without a registry.

    A stand-in for python:3.11-slim from Debian packages (debootstrap, docker import; needs
    root). Prints its tag, for docker build --build-arg BASE_IMAGE=TAG (docs/images.md).
    """
    from integrations.agentbeats.base_image import ensure_python_base_image, recipe_tag

    try:
        import docker

        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:
        raise click.ClickException(f"no Docker Engine answers: {exc}") from None
    click.echo(f"making (or finding) {recipe_tag()} ...", err=True)
    try:
        tag = ensure_python_base_image(client)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()[-1:]
        raise click.ClickException(
            f"{exc.cmd[0]} failed (exit {exc.returncode})" + (f": {detail[0]}" if detail else "")
        ) from None
    finally:
        client.close()
    click.echo(tag)


# --- deploy bundle -------------------------------------------------------------------------


@click.command("deploy-bundle")
@click.option(
    "--branch-images", type=FILE, required=True, help="Image evidence or components JSON."
)
@click.option("--task-environment-images", type=FILE, required=True, help="Task id -> image map.")
@click.option("--task-set", "task_set_name", default="skillsbench-v1.1", show_default=True)
@task_set_file_option
@click.option("--image-tag")
@click.option("--source-revision")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
def deploy_bundle(
    branch_images: Path,
    task_environment_images: Path,
    task_set_name: str,
    task_set_file: Path | None,
    image_tag: str | None,
    source_revision: str | None,
    output: Path,
) -> None:
    """Write a deploy bundle after validating its images and task coverage."""
    from integrations.agentbeats.deploy_bundle import build_deploy_bundle, read_branch_images
    from integrations.agentbeats.task_images import load_task_images

    task_set = task_set_loader(task_set_file)(task_set_name)
    bundle, findings = build_deploy_bundle(
        read_branch_images(read_json(branch_images), branch_images.name),
        load_task_images(task_environment_images),
        task_set,
        image_tag=image_tag,
        source_revision=source_revision,
    )
    if findings:
        report(findings, False)
        click.echo(f"{len(findings)} problem(s); deploy bundle not written", err=True)
        sys.exit(1)
    write_json(output, bundle)
    click.echo(f"wrote {output}: {task_set.task_set}, {len(task_set.task_ids)} task images")


# --- GHCR preflight ------------------------------------------------------------------------


@click.command("ghcr-preflight")
@click.option("--token-from-env", is_flag=True, help="Read GH_TOKEN, else GITHUB_TOKEN.")
def ghcr_preflight(token_from_env: bool) -> None:
    """Fail unless the GitHub token has read:packages and write:packages."""
    from integrations.agentbeats import ghcr

    token = ghcr.token_from_env() if token_from_env else ghcr.token_from_gh()
    source = "environment" if token_from_env else "gh auth token"
    try:
        result = ghcr.check_token(token)
    except ValueError as exc:
        raise ValueError(str(exc).replace(token, "***")) from None
    who = f" for {result.login}" if result.login else ""
    if not result.ok:
        click.echo(
            f"error: the token from {source}{who} lacks {', '.join(result.missing)} "
            f"(has: {', '.join(result.scopes) or 'no scopes'})",
            err=True,
        )
        sys.exit(1)
    click.echo(f"ok: the token from {source}{who} has read:packages and write:packages")


# --- Amber manifests -----------------------------------------------------------------------


CodeCheck = Callable[[list[Path]], list[Finding]]


def manifests_group(code_check: CodeCheck | None = None) -> click.Group:
    """The ``manifests`` group. ``code_check`` is what only the composition root can know: that
    our manifests agree with our code (the services' variables and options, the images)."""

    @click.group()
    def manifests() -> None:
        """Static checks of Amber manifests."""

    @manifests.command("check")
    @click.argument("files", nargs=-1, required=True, type=FILE)
    @click.option(
        "-D",
        "deny",
        multiple=True,
        help="`-D warnings` (or a lint code, e.g. manifest::unused_slot) makes warnings errors.",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print our findings as JSON.")
    @click.option(
        "--checker",
        type=click.Choice(["auto", "amber", "ours"]),
        default="auto",
        show_default=True,
        help="auto: also run the real `amber check` where an Amber CLI is available ($AMBER, amber "
        "on PATH, or a local amber-cli image); amber: require it; ours: only our check.",
    )
    def check(files: tuple[Path, ...], deny: tuple[str, ...], as_json: bool, checker: str) -> None:
        """Check Amber manifests: our own check (Amber v0.4's static rules and lints, and that our
        manifests agree with our code), and the real `amber check` where an Amber CLI is available."""
        from integrations.agentbeats.amber import check_manifests, deny_lints, lint_code
        from integrations.agentbeats.amber_cli import AmberUnavailable, find_amber, run_amber_check

        found = check_manifests(list(files))
        if code_check is not None:
            found += code_check(list(files))
        findings = deny_lints(found, deny)
        say = functools.partial(click.echo, err=as_json)
        amber = None
        if checker != "ours":
            try:
                amber = find_amber()
            except AmberUnavailable as exc:
                raise ValueError(str(exc)) from None
            if amber is None and checker == "amber":
                raise ValueError(
                    "--checker amber: no Amber CLI (set AMBER, put amber on PATH, or load the "
                    "ghcr.io/rdi-foundation/amber-cli image)"
                )
        amber_failed = 0
        if amber is None:
            why = (
                "--checker ours"
                if checker == "ours"
                else "no Amber CLI: AMBER unset, no amber on PATH, no local amber-cli image"
            )
            say(f"checker: ours only ({why})")
        else:
            say(f"checker: {amber.describe()}, then ours")
            codes = [d if d == "warnings" else lint_code(d) for d in deny]
            for run in run_amber_check(amber, list(files), codes):
                if run.output.strip():
                    say(run.output.rstrip("\n"))
                status = "ok" if run.exit_code == 0 else "failed"
                say(f"amber check {run.file}: exit {run.exit_code} ({status})")
                amber_failed += run.exit_code != 0
        report(findings, as_json)
        failed = errors(findings)
        if failed or amber_failed:
            click.echo(
                f"ours: {len(failed)} error(s), {len(findings) - len(failed)} warning(s)"
                + (f"; amber check failed on {amber_failed} file(s)" if amber else ""),
                err=True,
            )
            sys.exit(1)
        if not as_json:
            ran = "amber check and ours" if amber else "ours"
            click.echo(f"ok ({ran}): {len(files)} manifest(s), {len(findings)} warning(s)")

    return manifests


manifests = manifests_group()
