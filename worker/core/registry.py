"""One shape for every extension point of the worker (sandbox backends, agent kinds, executors):
an explicit table of the built-in names, each ``"module:attribute"`` imported only when that name
is first asked for, plus what a plug-in registers at run time. A name is taken once: a second,
different registration is refused, never silently overwritten. Importing a built-in's module
registers nothing beyond its table entry (a decorator on a built-in class finds it already
there).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str, builtins: Mapping[str, str]) -> None:
        self.what = what  # "sandbox backend", for messages
        self._table = dict(builtins)  # name -> "module:attribute"
        self._loaded: dict[str, T] = {}

    def _reference(self, obj: object) -> str:
        return f"{getattr(obj, '__module__', '')}:{getattr(obj, '__qualname__', '')}"

    def register(self, name: str, obj: T) -> None:
        """Add ``name`` (a plug-in's, or a built-in's own entry: then nothing changes)."""
        known = self._loaded.get(name)
        if known is obj:
            return
        if known is None and self._table.get(name) == self._reference(obj):
            self._loaded[name] = obj
            return
        if known is not None or name in self._table:
            raise ValueError(f"a {self.what} is already registered as {name!r}")
        self._loaded[name] = obj

    def unregister(self, name: str) -> None:
        """Drop a name a plug-in registered (built-ins stay)."""
        if name not in self._table:
            self._loaded.pop(name, None)

    def get(self, name: str) -> T:
        """The object registered as ``name``; ValueError naming the known ones."""
        if name in self._loaded:
            return self._loaded[name]
        reference = self._table.get(name)
        if reference is None:
            raise ValueError(f"unknown {self.what} {name!r} (known: {', '.join(self.names())})")
        module, _, attribute = reference.partition(":")
        obj: T = getattr(importlib.import_module(module), attribute)
        self._loaded.setdefault(name, obj)
        return self._loaded[name]

    def names(self) -> list[str]:
        return sorted({*self._table, *self._loaded})

    def __contains__(self, name: object) -> bool:
        return name in self._table or name in self._loaded

    def loaded(self) -> dict[str, T]:
        """Every name with its object (imports every built-in)."""
        return {name: self.get(name) for name in self.names()}
