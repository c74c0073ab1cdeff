"""Prices from litellm's offline cost map, imported lazily (the import takes seconds).

A model the table does not know, or prices at zero, has no price: ``None``, never ``0.0``.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any

_LOCK = threading.Lock()
_LITELLM: ModuleType | None = None


def load_litellm() -> ModuleType:
    """litellm with its local cost map only (no network at import, the same prices every day)."""
    global _LITELLM
    with _LOCK:
        if _LITELLM is None:
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm

            litellm.telemetry = False
            litellm.suppress_debug_info = True
            litellm.drop_params = True
            _LITELLM = litellm
        return _LITELLM


def _known(litellm: ModuleType, model: str) -> dict[str, Any] | None:
    for name in (model, model.split("/", 1)[-1]):
        entry = litellm.model_cost.get(name)
        if isinstance(entry, dict) and (entry.get("input_cost_per_token") or 0) > 0:
            return entry
    return None


def price_usd(
    model: str,
    *,
    prompt_tokens: int,
    completion_tokens: int,
    cache_read_tokens: int = 0,
    cache_creation_tokens: int = 0,
) -> float | None:
    """Dollar cost of one call, or None when litellm has no (non-zero) price for ``model``.

    ``prompt_tokens`` includes the cache reads and writes, as OpenAI counts them.
    """
    litellm = load_litellm()
    if _known(litellm, model) is None:
        return None
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cache_read_input_tokens=cache_read_tokens,
            cache_creation_input_tokens=cache_creation_tokens,
        )
    except Exception:  # litellm raises a zoo of types for names it cannot route
        return None
    total = float(prompt_cost) + float(completion_cost)
    return total if total > 0 else None
