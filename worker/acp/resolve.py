"""Agent specs this package owns: ``a2a:<url>``, ``acp:<name>`` and bare manifest names.

The worker's resolver tries its built-ins first and then :func:`resolve`.
"""

from __future__ import annotations

from worker.acp.manifest import ManifestError, discover
from worker.agents.a2a import A2AAgent
from worker.agents.base import Agent
from worker.agents.manifest_agent import ManifestAgent


def resolve(spec: str) -> Agent:
    kind, sep, arg = spec.partition(":")
    if sep and kind == "a2a":
        if not arg.startswith(("http://", "https://")):
            raise ValueError(
                f"{spec}: a2a agents need an http(s) URL, e.g. a2a:http://127.0.0.1:9009"
            )
        return A2AAgent(spec)
    if sep and kind == "acp":
        return ManifestAgent(spec)
    agents = discover()
    if spec in agents:
        return ManifestAgent(spec, agents[spec])
    raise ManifestError(f"unknown agent {spec!r}: not a built-in, a2a:<url>, or a manifest agent")
