"""The extension point, proven from this one file: a backend registered here (a thin subclass
of the bubblewrap sandbox with its own name and config type) runs the whole shared contract suite
of ``test_contract.py`` and is offered wherever backends are listed. Nothing else is touched."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.worker.sandbox.test_contract import *  # noqa: F403  (every contract test, collected again in this module)
from worker.sandbox import Sandbox
from worker.sandbox._bubblewrap import BubblewrapConfig, BubblewrapSandbox
from worker.sandbox.base import backend_names, sandbox_backend, sandbox_class, unregister_backend

NAME = "throwaway"


@dataclass(frozen=True)
class ThrowawayConfig(BubblewrapConfig):
    """A config type of its own: the trial makes it through the backend's ``config_type``."""


class ThrowawaySandbox(BubblewrapSandbox):
    config_type = ThrowawayConfig


@pytest.fixture
def backend() -> Iterator[str]:
    """Replaces conftest's parametrized ``backend``: the contract runs against this one only,
    registered for the test and removed afterwards."""
    sandbox_backend(NAME)(ThrowawaySandbox)
    try:
        yield NAME
    finally:
        unregister_backend(NAME)


def test_the_backend_is_registered_under_its_name(backend: str) -> None:
    assert sandbox_class(backend) is ThrowawaySandbox
    assert backend in backend_names()


def test_its_sandboxes_get_its_config(sandbox: Sandbox) -> None:
    assert isinstance(sandbox, ThrowawaySandbox)
    assert type(sandbox.spec.config) is ThrowawayConfig


def test_it_is_gone_after_its_tests() -> None:
    assert NAME not in backend_names()
