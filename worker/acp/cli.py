"""``skillsbench-agentbeats agents [NAME]``: list manifest agents, or show one."""

from __future__ import annotations

import os

import click

from worker.acp.agent_manifest import (
    AGENTS_DIR_VARS,
    AgentManifestEntry,
    agents_dirs,
    discover,
    find,
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
    found = discover()
    entries = {id(e): e for e in found.values()}.values()
    if not found:
        click.echo("no manifest agents found")
    for entry in sorted(entries, key=lambda e: e.manifest.name):
        m = entry.manifest
        flag = "  (unknown keys: " + ", ".join(m.unknown_keys) + ")" if m.unknown_keys else ""
        click.echo(f"{m.name:<28} {m.description}{flag}")


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
        click.echo(f"Unknown keys (ignored): {', '.join(m.unknown_keys)}", err=True)
