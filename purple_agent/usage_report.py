"""The ``usage`` object a purple reply carries (``skillsbench-shell/v1``): the model calls the
agent made since its previous reply, so the bridge can sum them over the trial.

Shared by every harness of the agent-under-test: :class:`UsageSinceReply` counts calls as they
return and :meth:`UsageSinceReply.take` gives the DataPart object for the next reply. Unknown
stays unknown: a field one call did not report is ``None`` in the report, never 0.
"""

from __future__ import annotations

from typing import Any

from worker.bridge.protocol import ParticipantUsage


class UsageSinceReply:
    """Model calls since the last reply. ``add`` one call, ``take`` the report (and start over)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.model: str | None = None
        self.calls = 0
        self.input_tokens: int | None = 0
        self.output_tokens: int | None = 0
        self.cost_usd: float | None = 0.0

    def add(
        self,
        model: str | None,
        input_tokens: int | None,
        output_tokens: int | None,
        cost_usd: float | None,
    ) -> None:
        self.calls += 1
        self.model = model or self.model
        self.input_tokens = _plus(self.input_tokens, input_tokens)
        self.output_tokens = _plus(self.output_tokens, output_tokens)
        self.cost_usd = _plus(self.cost_usd, cost_usd)

    def report(self) -> ParticipantUsage:
        return ParticipantUsage(
            model=self.model,
            calls=self.calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=None if self.cost_usd is None else round(self.cost_usd, 10),
        )

    def take(self) -> dict[str, Any]:
        """``{"usage": {...}}``: a DataPart of its own for the next reply; counting starts over."""
        data = {"usage": self.report().to_data()}
        self._reset()
        return data


def _plus(total: Any, value: Any) -> Any:
    if total is None or value is None:
        return None
    return total + value


def usage_part(
    model: str | None,
    calls: int | None,
    input_tokens: int | None,
    output_tokens: int | None,
    cost_usd: float | None,
) -> dict[str, Any]:
    """``{"usage": {...}}`` from totals counted elsewhere (e.g. a model gateway's); validated."""
    return {
        "usage": ParticipantUsage(
            model=model,
            calls=calls,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost_usd,
        ).to_data()
    }
