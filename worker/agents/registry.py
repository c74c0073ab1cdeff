"""``resolve_agent(spec)``: from an agent spec string to an :class:`Agent`.

Specs are ``kind`` or ``kind:<arg>`` (``oracle``, ``nop``, ``script:<file>``, ``a2a:<url>``,
``acp:<manifest>``). Kinds come from :data:`worker.agents.base.AGENT_KINDS` (a table of the
built-ins, imported when first named). A spec whose kind is not registered (e.g. a bare manifest
name such as ``claude-agent-acp``) is offered to the fallback resolvers: the built-in ones of
:data:`BUILTIN_RESOLVERS`, then those added with :func:`add_resolver`, in order
(:func:`resolver_added` for a registration that ends with a ``with`` block, e.g. in a test).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from worker.agents.base import AGENT_KINDS, Agent

Resolver = Callable[[str], Agent | None]
# Built-in fallback resolvers ("module:function"), imported on the first spec that needs them.
BUILTIN_RESOLVERS: tuple[str, ...] = ("worker.agents.acp:resolve_manifest_name",)
_RESOLVERS: list[Resolver] = []


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
    """Import every built-in kind and resolver now (the engine does it at start, off the event
    loop: an import inside the first request held the loop for a second and more)."""
    AGENT_KINDS.loaded()
    _builtin_resolvers()


def _builtin_resolvers() -> list[Resolver]:
    found: list[Resolver] = []
    for reference in BUILTIN_RESOLVERS:
        module, _, name = reference.partition(":")
        found.append(getattr(importlib.import_module(module), name))
    return found


def resolve_agent(spec: str) -> Agent:
    """The agent for ``spec``; ValueError naming the spec when nothing knows it."""
    spec = spec.strip()
    if not spec:
        raise ValueError("agent spec is empty")
    kind = spec.split(":", 1)[0]
    if kind in AGENT_KINDS:
        return AGENT_KINDS.get(kind)(spec)
    for resolver in [*_builtin_resolvers(), *_RESOLVERS]:
        agent = resolver(spec)
        if agent is not None:
            return agent
    known = ", ".join(AGENT_KINDS.names())
    raise ValueError(f"unknown agent {spec!r} (known kinds: {known}; script:<file>)")
