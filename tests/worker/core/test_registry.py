"""One registry shape for sandbox backends, agent kinds and executors (worker/core/registry.py):
an explicit table of built-ins imported when first named, duplicates refused."""

from __future__ import annotations

import subprocess
import sys

import pytest

from worker.agents.base import AGENT_KINDS, Agent, AgentContext, AgentOutcome, agent_kind
from worker.core.registry import Registry
from worker.executors.base import EXECUTORS
from worker.sandbox.base import BACKENDS, sandbox_backend, sandbox_class


class _Other(Agent):
    async def run(self, ctx: AgentContext) -> AgentOutcome:
        return AgentOutcome()


def test_a_taken_name_is_refused_never_overwritten() -> None:
    with pytest.raises(ValueError, match="agent kind is already registered as 'oracle'"):
        agent_kind("oracle")(_Other)
    assert AGENT_KINDS.get("oracle").__name__ == "OracleAgent"
    with pytest.raises(ValueError, match="sandbox backend is already registered as 'docker'"):
        sandbox_backend("docker")(sandbox_class("local"))


def test_a_plugin_registers_once_and_can_leave() -> None:
    registry: Registry[type] = Registry("thing", {"built": "builtins:int"})
    registry.register("mine", str)
    registry.register("mine", str)  # the same object again: nothing changes
    with pytest.raises(ValueError, match="already registered as 'mine'"):
        registry.register("mine", bytes)
    assert registry.names() == ["built", "mine"] and registry.get("built") is int
    registry.unregister("mine")
    registry.unregister("built")  # a built-in stays
    assert registry.names() == ["built"]
    with pytest.raises(ValueError, match=r"unknown thing 'x' \(known: built\)"):
        registry.get("x")


def test_the_tables_name_the_builtins_and_importing_registers_nothing_else() -> None:
    # In a fresh interpreter: names are known without importing any backend, kind or executor
    # module, and each is imported only when first asked for.
    code = (
        "import sys\n"
        "from worker.sandbox.base import BACKENDS\n"
        "from worker.agents.base import AGENT_KINDS\n"
        "from worker.executors.base import EXECUTORS\n"
        "assert BACKENDS.names() == ['docker', 'local'], BACKENDS.names()\n"
        "assert AGENT_KINDS.names() == ['a2a', 'acp', 'nop', 'oracle', 'script']\n"
        "assert EXECUTORS.names() == ['inprocess', 'ray']\n"
        "lazy = ['worker.sandbox._docker.sandbox', 'worker.executors._ray', 'worker.agents.a2a']\n"
        "assert not [m for m in lazy if m in sys.modules], [m for m in lazy if m in sys.modules]\n"
        "BACKENDS.get('docker')\n"
        "assert 'worker.sandbox._docker.sandbox' in sys.modules\n"
        "assert BACKENDS.names() == ['docker', 'local']\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_every_builtin_loads_as_its_table_says() -> None:
    assert {name: cls.name for name, cls in BACKENDS.loaded().items()} == {
        "docker": "docker",
        "local": "local",
    }
    assert all(cls.kind == name for name, cls in AGENT_KINDS.loaded().items())
    assert all(cls.name == name for name, cls in EXECUTORS.loaded().items())
