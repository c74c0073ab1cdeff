"""What a trial attempt is doing now, told to whoever runs it: the run engine sets
:data:`phase_hook` around an attempt and shows each phase in the run's status (the names are
``worker.api.TRIAL_PHASES``). Where no hook is set (a Ray node) nothing is told: the engine then
shows the attempt as ``started`` until it ends."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar

log = logging.getLogger(__name__)

phase_hook: ContextVar[Callable[[str], None] | None] = ContextVar("trial_phase_hook", default=None)


def tell(phase: str) -> None:
    """Say the attempt entered ``phase``; a hook that fails never fails the trial."""
    hook = phase_hook.get()
    if hook is None:
        return
    try:
        hook(phase)
    except Exception:
        log.exception("the trial phase hook failed on %r", phase)
