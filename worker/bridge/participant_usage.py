"""The trial's sum of the ``usage`` objects a purple agent reported (``skillsbench-shell/v1``).

What the participant says, never what the worker measured: the worker records it with
``usage_source: participant_reported``. Unknown stays unknown: a field's sum covers the replies
that gave it, ``n_unknown`` counts the replies with a ``usage`` object that left it out, and a
field no reply gave stays ``None`` (never 0). Replies without any ``usage`` object are counted
apart (``n_replies_without_usage``): the protocol reads them as "nothing to report".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from worker.bridge.protocol import ParticipantUsage

FIELDS: Final = ("calls", "input_tokens", "output_tokens", "cost_usd")
MAX_MODELS: Final = 20  # distinct model names kept (the participant chooses them)
MAX_MODEL_CHARS: Final = 200


@dataclass
class UsageTally:
    n_replies: int = 0
    n_with_usage: int = 0
    models: list[str] = field(default_factory=list)
    sums: dict[str, int | float | None] = field(default_factory=lambda: dict.fromkeys(FIELDS))
    n_unknown: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FIELDS, 0))

    def add(self, usage: ParticipantUsage | None) -> None:
        """One reply: its ``usage`` object, or ``None`` when it carried none."""
        self.n_replies += 1
        if usage is None:
            return
        self.n_with_usage += 1
        model = (usage.model or "").strip()[:MAX_MODEL_CHARS]
        if model and model not in self.models and len(self.models) < MAX_MODELS:
            self.models.append(model)
        for name in FIELDS:
            value = getattr(usage, name)
            if value is None:
                self.n_unknown[name] += 1
            else:
                self.sums[name] = (self.sums[name] or 0) + value

    def to_data(self) -> dict[str, Any] | None:
        """What the bridge hands the worker; ``None`` when no reply carried ``usage``."""
        if not self.n_with_usage:
            return None
        cost = self.sums["cost_usd"]
        return {
            "n_replies": self.n_replies,
            "n_replies_with_usage": self.n_with_usage,
            "n_replies_without_usage": self.n_replies - self.n_with_usage,
            "models": list(self.models),
            **{name: self.sums[name] for name in FIELDS if name != "cost_usd"},
            "cost_usd": None if cost is None else round(float(cost), 10),
            "n_unknown": dict(self.n_unknown),
        }
