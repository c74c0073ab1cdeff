"""Usage a remote participant reported about itself (the ``usage`` objects of its
``skillsbench-shell/v1`` replies, summed by the a2a bridge), as result.json records it.

It is the participant's word, not a measurement: ``usage_source`` is ``participant_reported``,
it is never added to usage the worker measured (the model proxy, ACP ``usage``), and it never
satisfies ``--usage-tracking required``. The headline ``agent_result`` numbers follow the
worker's own rule for cost (a dollar figure only when every call was priced): a field is the sum
only when every reply that reported usage gave it, else ``None``; the partial sums and the
counts of replies that left a field out stay in ``agent_result.participant_usage``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

PARTICIPANT_REPORTED: Final = "participant_reported"
_FIELDS: Final = ("calls", "input_tokens", "output_tokens", "cost_usd")


def tally_from_details(details: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The bridge's sum (``details["bridge"]["usage"]`` of the agent's outcome), if any."""
    bridge = (details or {}).get("bridge")
    usage = bridge.get("usage") if isinstance(bridge, Mapping) else None
    return dict(usage) if isinstance(usage, Mapping) and usage.get("n_replies_with_usage") else None


def _complete(tally: Mapping[str, Any], name: str) -> Any:
    unknown = (tally.get("n_unknown") or {}).get(name, 0)
    return tally.get(name) if not unknown else None


def agent_result_fields(tally: Mapping[str, Any]) -> dict[str, Any]:
    """result.json's usage fields (BenchFlow's names) for participant-reported usage."""
    n_in = _complete(tally, "input_tokens")
    n_out = _complete(tally, "output_tokens")
    cost = _complete(tally, "cost_usd")
    return {
        "n_input_tokens": n_in,
        "n_output_tokens": n_out,
        "n_cache_read_tokens": None,
        "n_cache_creation_tokens": None,
        "total_tokens": n_in + n_out if n_in is not None and n_out is not None else None,
        "cost_usd": cost,
        "usage_source": PARTICIPANT_REPORTED,
        "price_source": "participant" if cost is not None else None,
        "n_model_calls": _complete(tally, "calls"),
        "participant_usage": dict(tally),
    }


def describe(tally: Mapping[str, Any] | None) -> str:
    """One line for people: the sums, what is unknown, and whose word it is."""
    if not tally:
        return "none reported"
    parts = []
    if tally.get("calls") is not None:
        parts.append(f"{tally['calls']:,} model call(s)")
    if tally.get("input_tokens") is not None:
        parts.append(f"{tally['input_tokens']:,} in")
    if tally.get("output_tokens") is not None:
        parts.append(f"{tally['output_tokens']:,} out")
    if tally.get("cost_usd") is not None:
        parts.append(f"${tally['cost_usd']:.4f}")
    text = ", ".join(parts) or "no numbers"
    models = tally.get("models") or []
    if models:
        text += f" ({', '.join(str(m) for m in models)})"
    with_usage = tally.get("n_replies_with_usage", 0)
    unknown = [
        f"{name} on {n}" for name in _FIELDS if (n := (tally.get("n_unknown") or {}).get(name))
    ]
    note = f"reported on {with_usage} of {tally.get('n_replies', with_usage)} replies"
    if unknown:
        note += "; unknown: " + ", ".join(unknown) + " (sums cover the replies that gave them)"
    return f"{text} [participant_reported: {note}]"
