"""``resolve_agent(spec)``: from an agent spec string to an :class:`Agent`.

Specs are ``kind`` or ``kind:<arg>`` (``oracle``, ``nop``, ``script:<file>``, ``a2a:<url>``,
``acp:<manifest>``). Kinds come from the registry in :mod:`worker.agents.base`; plug-in modules
listed in ``PLUGIN_MODULES`` are imported on first use so they can register theirs. A spec whose
kind is not registered (e.g. a bare manifest name such as ``claude-agent-acp``) is offered to the
fallback resolvers added with :func:`add_resolver`, in order (:func:`resolver_added` for a
registration that ends with a ``with`` block, e.g. in a test).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from worker.agents.base import Agent, registered_kinds

# Modules that register agent kinds when imported; one that fails to import fails loudly.
PLUGIN_MODULES: tuple[str, ...] = (
    "worker.agents.builtin",
    "worker.agents.acp",  # acp/manifest agents (kind "acp")
    "worker.agents.a2a",  # the a2a bridge agent (kind "a2a")
)

Resolver = Callable[[str], Agent | None]
_RESOLVERS: list[Resolver] = []
_loaded = False


def add_resolver(resolver: Resolver) -> None:
    """Hook for specs without a registered kind (manifest agent names); first non-None wins."""
    if resolver not in _RESOLVERS:
        _RESOLVERS.append(resolver)


def resolvers() -> tuple[Resolver, ...]:
    """The fallback resolvers, in the order they are consulted."""
    return tuple(_RESOLVERS)


def remove_resolver(resolver: Resolver) -> None:
    """Undo :func:`add_resolver`; a resolver not added is ignored."""
    if resolver in _RESOLVERS:
        _RESOLVERS.remove(resolver)


@contextmanager
def resolver_added(resolver: Resolver) -> Iterator[Resolver]:
    """``resolver`` is consulted inside the ``with`` block only (unless it was added before)."""
    added = resolver not in _RESOLVERS
    add_resolver(resolver)
    try:
        yield resolver
    finally:
        if added:
            remove_resolver(resolver)


def load_plugins() -> None:
    global _loaded
    if _loaded:
        return
    for module in PLUGIN_MODULES:
        importlib.import_module(module)
    _loaded = True


def resolve_agent(spec: str) -> Agent:
    """The agent for ``spec``; ValueError naming the spec when nothing knows it."""
    load_plugins()
    spec = spec.strip()
    if not spec:
        raise ValueError("agent spec is empty")
    kind = spec.split(":", 1)[0]
    kinds = registered_kinds()
    if kind in kinds:
        return kinds[kind](spec)
    for resolver in _RESOLVERS:
        agent = resolver(spec)
        if agent is not None:
            return agent
    known = ", ".join(sorted(kinds))
    raise ValueError(f"unknown agent {spec!r} (known kinds: {known}; script:<file>)")
