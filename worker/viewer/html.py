"""``trials view``: one self-contained HTML transcript of a trial (no script, no external resource,
a Content-Security-Policy that forbids both). Every value is escaped: the agent and the
participant wrote most of it, and they are not trusted."""

from __future__ import annotations

from html import escape
from typing import Any, Final

from worker.usage import participant
from worker.usage.records import cost_summary
from worker.viewer.trial_folder import Action, Transcript, instant

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#1b1b1f}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #ddd}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f8;padding:8px;margin:4px 0;
max-height:480px;overflow:auto;border-radius:4px}
table{border-collapse:collapse;width:100%;table-layout:auto}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.step{border-left:3px solid #bbb;padding:2px 10px;margin:10px 0}
.user{border-color:#4a7bd0}.agent{border-color:#2e9a5b}.thought{border-color:#aaa}
.action{border-color:#c98a1b}.failed,.bad{border-color:#c0392b}.event{border-color:#777}
.label{font-weight:600}.muted{color:#666}.pass{color:#1e7a3c}.fail{color:#b02a1c}
"""
MAX_SHOWN_CHARS: Final = 20_000  # of one output or file content on the viewer's trial page
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'"


def _e(value: Any) -> str:
    return escape("-" if value is None or value == "" else str(value), quote=True)


def pre(
    text: str | None, raw_link: str | None = None, *, limit: int | None = MAX_SHOWN_CHARS
) -> str:
    """``text`` escaped in a ``<pre>``, its first ``limit`` characters (then a line saying how
    many more, linking ``raw_link`` when given); ``limit`` None: all of it."""
    if not text:
        return "<pre><span class=muted>(empty)</span></pre>"
    cut = ""
    if limit is not None and len(text) > limit:
        more = len(text) - limit
        cut = f"<div class=muted>… {more:,} more characters not shown"
        cut += f' (<a href="{_e(raw_link)}">the whole file</a>)</div>' if raw_link else "</div>"
        text = text[:limit]
    return f"<pre>{_e(text)}</pre>{cut}"


def _pre(text: str | None) -> str:
    return pre(text, limit=None)


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _seconds_since(stamp: str | None, origin: float | None) -> float | None:
    at = instant(stamp)
    return None if at is None or origin is None else max(0.0, at - origin)


def action_html(n: int, action: Action, origin: float | None, *, limit: int | None) -> str:
    """One action: its kind, status, exit code, how long it took and when it began (seconds
    from the trial's first event), its title and command, and its output, the content it read
    or the content it wrote (a2a participants)."""
    bad = action.status == "failed" or action.exit_code not in (None, 0) or action.timed_out
    info = [action.kind or "action", action.status or "?"]
    if action.exit_code is not None:
        info.append(f"exit {action.exit_code}")
    if action.timed_out:
        info.append("timed out")
    if action.seconds is not None:
        info.append(f"{action.seconds:.2f}s")
    start = _seconds_since(action.started_at, origin)
    if start is not None:
        info.append(f"at +{start:.1f}s")
    raw_input = action.raw_input if isinstance(action.raw_input, dict) else {}
    command = raw_input.get("command") if isinstance(raw_input.get("command"), str) else None
    parts = [
        f'<div class="step action{" bad" if bad else ""}" data-kind="{_e(action.kind)}">'
        f"<div><span class=label>Action {n}</span> <span class=muted>{_e(' · '.join(info))}"
        "</span></div>",
        f"<pre class=title>{_e(action.title)}</pre>",
    ]
    if command and command != action.title:
        parts.append(f"<div class=muted>command</div><pre class=command>{_e(command)}</pre>")
    if isinstance(raw_input.get("cwd"), str):
        parts.append(f"<div class=muted>in {_e(raw_input['cwd'])}</div>")
    if action.kind == "edit":
        size = raw_input.get("bytes")
        label = "content written" + (f" ({size} bytes)" if isinstance(size, int) else "")
        parts.append(f"<div class=muted>{_e(label)}</div>")
        parts.append(
            pre(action.written, limit=limit)
            if action.written is not None
            else "<pre><span class=muted>(not recorded)</span></pre>"
        )
        if action.output:
            parts += ["<div class=muted>output</div>", pre(action.output, limit=limit)]
    else:
        label = "content read" if action.kind == "read" else "output"
        parts += [f"<div class=muted>{label}</div>", pre(action.output, limit=limit)]
    parts.append("</div>")
    return "".join(parts)


def timeline_html(t: Transcript, *, empty: str, limit: int | None = MAX_SHOWN_CHARS) -> str:
    """The heading and every message and action in order, each with when it began; the first
    user message left out when it is the instruction (shown once, above it)."""
    steps = list(t.steps)
    if (
        steps
        and steps[0].kind == "user"
        and t.instruction
        and steps[0].text.strip() == t.instruction.strip()
    ):
        steps = steps[1:]
    origin = instant(t.steps[0].at) if t.steps else None
    parts = [f"<h2>Turns and actions ({len(t.actions)} action(s))</h2>"]
    n_action = 0
    for step in steps:
        if step.action is not None:
            n_action += 1
            parts.append(action_html(n_action, step.action, origin, limit=limit))
            continue
        label = {"user": "User", "agent": "Agent", "thought": "Thought", "event": "Event"}.get(
            step.kind, step.kind
        )
        start = _seconds_since(step.at, origin)
        when = f" <span class=muted>at +{start:.1f}s</span>" if start is not None else ""
        parts.append(
            f'<div class="step {_e(step.kind)}"><div class=label>{_e(label)}{when}</div>'
            f"{pre(step.text, limit=limit)}</div>"
        )
    if not steps:
        parts.append(f"<p class=muted>{_e(empty)}</p>")
    return "".join(parts)


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
    parts.append(timeline_html(t, empty="no trajectory recorded", limit=None))
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
