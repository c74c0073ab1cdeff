"""``trials view``: one self-contained HTML transcript of a trial (no script, no external resource,
a Content-Security-Policy that forbids both). Every value is escaped: the agent and the
participant wrote most of it, and they are not trusted."""

from __future__ import annotations

from html import escape
from typing import Any

from worker.usage import participant
from worker.usage.records import cost_summary
from worker.viewer.trial_folder import Action, Step, Transcript

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#1b1b1f}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #ddd}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f8;padding:8px;margin:4px 0;
max-height:480px;overflow:auto;border-radius:4px}
table{border-collapse:collapse;width:100%;table-layout:auto}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.step{border-left:3px solid #bbb;padding:2px 10px;margin:10px 0}
.user{border-color:#4a7bd0}.agent{border-color:#2e9a5b}.thought{border-color:#aaa}
.action{border-color:#c98a1b}.failed{border-color:#c0392b}.event{border-color:#777}
.label{font-weight:600}.muted{color:#666}.pass{color:#1e7a3c}.fail{color:#b02a1c}
"""
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'"


def _e(value: Any) -> str:
    return escape("-" if value is None or value == "" else str(value), quote=True)


def _pre(text: str | None) -> str:
    return f"<pre>{_e(text) if text else '<span class=muted>(empty)</span>'}</pre>"


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _action(n: int, action: Action) -> str:
    failed = action.status == "failed" or (action.exit_code not in (None, 0)) or action.timed_out
    exit_text = "" if action.exit_code is None else f" · exit {action.exit_code}"
    timed = " · timed out" if action.timed_out else ""
    return (
        f'<div class="step action{" failed" if failed else ""}">'
        f'<div><span class="label">Action {n}</span> <span class="muted">{_e(action.kind)} · '
        f"{_e(action.status)}{_e(exit_text) if exit_text else ''}{_e(timed) if timed else ''}"
        f"</span></div><pre>{_e(action.title)}</pre>"
        f'<div class="muted">output</div>{_pre(action.output)}</div>'
    )


def _step(step: Step, n_action: int) -> str:
    if step.action is not None:
        return _action(n_action, step.action)
    label = {"user": "User", "agent": "Agent", "thought": "Thought", "event": "Event"}.get(
        step.kind, step.kind
    )
    return (
        f'<div class="step {_e(step.kind)}"><div class="label">{_e(label)}</div>'
        f"{_pre(step.text)}</div>"
    )


def model_calls_table(t: Transcript) -> str:
    rows = []
    for n, line in enumerate(t.model_calls, 1):
        usage = line.get("usage") or {}
        meta = line.get("metadata") or {}
        body = (line.get("request") or {}).get("body") or {}
        rows.append(
            [
                n,
                body.get("model") or meta.get("request_model"),
                (line.get("response") or {}).get("status_code"),
                usage.get("prompt_tokens"),
                usage.get("completion_tokens"),
                meta.get("cost_usd"),
                line.get("duration_ms"),
            ]
        )
    headers = ["call", "model", "status", "input tokens", "output tokens", "cost (USD)", "ms"]
    return _table(headers, rows) if rows else "<p class=muted>none recorded by the worker</p>"


def reported_table(t: Transcript) -> str:
    rows = [
        [
            r["turn"],
            r["usage"].get("model"),
            r["usage"].get("calls"),
            r["usage"].get("input_tokens"),
            r["usage"].get("output_tokens"),
            r["usage"].get("cost_usd"),
        ]
        for r in t.reported
    ]
    headers = ["reply (turn)", "model", "calls", "input tokens", "output tokens", "cost (USD)"]
    return _table(headers, rows)


def render(t: Transcript) -> str:
    r = t.result
    agent_result = r.get("agent_result") or {}
    tracking = r.get("usage_tracking") or {}
    passed = bool(r.get("passed"))
    verdict = "passed" if passed else "not passed"
    failure = f" · {r['failure']}" if r.get("failure") else ""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Trial {_e(r.get('trial_id'))}</title><style>{_CSS}</style></head><body>",
        f"<h1>Trial {_e(r.get('trial_id'))}</h1>",
        _table(
            ["task", "agent", "reward", "result", "attempt", "started", "finished"],
            [
                [
                    t.task_id,
                    r.get("agent"),
                    r.get("reward"),
                    verdict + failure,
                    r.get("attempt"),
                    r.get("started_at"),
                    r.get("finished_at"),
                ]
            ],
        ),
    ]
    if r.get("error") or r.get("reason"):
        parts.append(
            f'<p class="{"pass" if passed else "fail"}"><span class=label>Why:</span> '
            f"{_e(r.get('reason') or r.get('error'))}</p>"
        )
    parts += ["<h2>Instruction</h2>", _pre(t.instruction)]
    parts.append(f"<h2>Turns and actions ({len(t.actions)} action(s))</h2>")
    n_action = 0
    for step in t.steps:
        if step.action is not None:
            n_action += 1
        parts.append(_step(step, n_action))
    if not t.steps:
        parts.append("<p class=muted>no trajectory recorded</p>")
    parts += ["<h2>Agent's final message</h2>", _pre(t.final_message)]
    parts.append("<h2>Model calls and usage</h2>")
    parts.append(
        f"<p><span class=label>Cost:</span> "
        f"{_e(cost_summary(agent_result, calls_model=tracking.get('model_access') != 'none'))}"
        f"<br><span class=label>Usage source:</span> {_e(agent_result.get('usage_source'))}</p>"
    )
    parts.append(model_calls_table(t))
    if t.reported:
        parts.append(
            "<p><span class=label>Reported by the participant</span> (its word, not measured): "
            f"{_e(participant.describe(agent_result.get('participant_usage')))}</p>"
        )
        parts.append(reported_table(t))
    parts.append("<h2>Agent logs</h2>")
    if not t.agent_logs:
        parts.append("<p class=muted>no agent log recorded</p>")
    for name, text in t.agent_logs.items():
        parts += [f"<div class=muted>{_e(name)}</div>", _pre(text)]
    parts.append("<h2>Verifier output</h2>")
    if not t.verifier_output:
        parts.append("<p class=muted>no verifier output recorded</p>")
    for name, text in t.verifier_output.items():
        parts += [f"<div class=muted>{_e(name)}</div>", _pre(text)]
    parts.append(
        f"<h2>Reward</h2><p class={'pass' if passed else 'fail'}>"
        f"<span class=label>{_e(r.get('reward'))}</span> ({_e(verdict + failure)}; "
        f"verifier reward {_e(r.get('verifier_reward'))})</p>"
    )
    parts.append("</body></html>\n")
    return "\n".join(parts)
