"""``skillsbench-agentbeats agents [NAME]``: list manifest agents, or show one.

The listing shows every manifest, a broken one with its error (it spoils only itself); a listing
with a broken manifest exits 1, as ``ls`` does for a missing file among others."""

from __future__ import annotations

import os
import sys

import click

from worker.acp.agent_manifest import (
    AGENTS_DIR_VARS,
    AgentManifestEntry,
    agents_dirs,
    find,
    scan,
)


@click.command(name="agents")
@click.argument("name", required=False)
def agents(name: str | None) -> None:
    """List the manifest agents in SKILLSBENCH_AGENTS_DIR / BENCHFLOW_AGENTS_DIR, or show NAME."""
    if name:
        _show(find(name))
        return
    if not agents_dirs():
        raise click.ClickException(f"no agents folder: set {' or '.join(AGENTS_DIR_VARS)}")
    catalog = scan()
    entries = {id(e): e for e in catalog.agents.values()}.values()
    if not catalog.agents and not catalog.broken:
        click.echo("no manifest agents found")
    for entry in sorted(entries, key=lambda e: e.manifest.name):
        m = entry.manifest
        flag = "  (unknown keys: " + ", ".join(m.unknown_key_notes) + ")" if m.unknown_keys else ""
        click.echo(f"{m.name:<28} {m.description}{flag}")
    for broken in catalog.broken:
        label = broken.names[0] if broken.names else broken.path.parent.name
        click.echo(f"{label:<28} BROKEN: {broken.error}")
    if catalog.broken:
        count = len(catalog.broken)
        click.echo(
            f"error: {count} manifest{'s' if count > 1 else ''} could not be loaded", err=True
        )
        sys.exit(1)


def _show(entry: AgentManifestEntry) -> None:
    m = entry.manifest
    lines = [
        m.name,
        f"Description: {m.description or '(none)'}",
        f"Manifest: {entry.path}",
        f"Contract: {m.contract_version}",
        f"Protocol: {m.protocol}",
        f"Launch: {m.launch_cmd}",
        f"Install timeout: {m.install_timeout:g} s",
        f"Aliases: {', '.join(m.aliases) or '(none)'}",
        f"API protocol: {m.api_protocol or '(none)'}",
        f"Default model: {m.default_model or '(none)'}",
        "Model over ACP: "
        + (
            f"session/set_model, {m.acp_model_format} names"
            if m.supports_acp_set_model
            else "none (supports_acp_set_model = false)"
        ),
        "Requires: "
        + (
            ", ".join(f"{v} ({'set' if v in os.environ else 'NOT set'})" for v in m.requires_env)
            or "(none)"
        ),
        "Env mapping: " + (", ".join(f"{k} -> {v}" for k, v in m.env_mapping.items()) or "(none)"),
    ]
    for line in lines:
        click.echo(line)
    if m.unknown_keys:
        click.echo(f"Unknown keys (ignored): {', '.join(m.unknown_key_notes)}", err=True)
