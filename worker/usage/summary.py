"""The run summary's ``Cost:`` line, summed over the trials' result.json files."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def load_results(jobs_dir: Path, trial_ids: Iterable[str]) -> list[dict[str, Any]]:
    results = []
    for trial_id in trial_ids:
        for path in sorted(jobs_dir.glob(f"runs/*/trials/{trial_id}/result.json")):
            results.append(json.loads(path.read_text(encoding="utf-8")))
    return results


def cost_line(results: list[dict[str, Any]]) -> str:
    """BenchFlow's wording: a dollar figure only when every trial's tokens were priced."""
    usages = [r.get("agent_result") or {} for r in results]
    accesses = [(r.get("usage_tracking") or {}).get("model_access") for r in results]
    if not results or all(a == "none" for a in accesses):
        return "Cost: none: no model tokens were used"
    counted = [
        u for u in usages if u.get("usage_source") in ("provider_response", "agent_native_acp")
    ]
    tokens = sum(int(u.get("total_tokens") or 0) for u in counted)
    missing = sum(
        1
        for u, a in zip(usages, accesses, strict=True)
        if a != "none" and u.get("usage_source") not in ("provider_response", "agent_native_acp")
    )
    note = f" ({missing} trial(s) without usage: missing, not zero)" if missing else ""
    costs = [u.get("cost_usd") for u in counted]
    if counted and all(c is not None for c in costs):
        return f"Cost: ${sum(float(c or 0) for c in costs):.4f}, {tokens:,} tokens{note}"
    if not counted:
        return f"Cost: not recorded (usage unavailable){note}"
    return (
        "Cost: not reported in USD (subscription logins and unpriced models report tokens only), "
        f"{tokens:,} tokens{note}"
    )
