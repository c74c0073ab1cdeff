"""``skillsbench-agentbeats view``: a local web app over job folders (runs → trials → one trial,
compare two agents or runs task by task), updated live while a run goes on.

Server-rendered HTML with one small inline script (a nonce in the Content-Security-Policy; no
other script, no external resource, works offline). Live updates: the page listens to
``/events`` (SSE), where the server polls the folders' run documents and trajectories and says
"changed"; the page then fetches its own content again (``?fragment=1``) and swaps it in.

The viewer serves only what is inside the folders it was given: trials are found through the run
documents of those folders, never through a path in the URL, and a raw file of a trial
(``/raw/...``) is served only when it resolves (symlinks followed) inside its trial folder.
Results files (``view --results``) are served by their place in the list of files given, never by
a path: their leaderboard tables come from the composition root (:class:`Leaderboard`), as the
worker does not read results files itself.
Everything shown is escaped: the agent, the participant and the task wrote most of it.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from worker.api import is_loopback_host
from worker.runs.records import RunRecord
from worker.runs.store import read_run_document
from worker.trial_record.paths import TIMING_FILE
from worker.viewer import index
from worker.viewer.html import model_calls_table, reported_table, timeline_html
from worker.viewer.html import pre as _pre
from worker.viewer.index import OUTCOMES, SORTS, Filters, RunRow, TrialRow, trials_query
from worker.viewer.trial_folder import inside, load, read_json

POLL_SECONDS: Final = 1.0
MAX_RAW_BYTES: Final = 2_000_000  # of one file served raw
MAX_LISTED_FILES: Final = 300
MAX_WHY_CHARS: Final = 160  # of the reason in a list

_CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1b1b1f;background:#fff}
header{background:#1f2933;color:#fff;padding:8px 16px;display:flex;gap:18px;align-items:center;
flex-wrap:wrap}
header a{color:#fff;text-decoration:none;font-weight:600} header .live{margin-left:auto;
font-size:12px;opacity:.8}
main{padding:12px 16px;max-width:1400px;margin:0 auto}
h1{font-size:20px;margin:4px 0 8px;overflow-wrap:anywhere} h2{font-size:16px;margin:22px 0 8px;
border-bottom:1px solid #ddd}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f8;padding:8px;margin:4px 0;
max-height:420px;overflow:auto;border-radius:4px;font-size:12.5px}
table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #e3e3e8;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f4f6;white-space:nowrap;font-weight:600}
td.why{min-width:220px;max-width:420px;overflow-wrap:anywhere;color:#444}
td.id{white-space:nowrap} td.agent{min-width:90px;max-width:240px;overflow-wrap:anywhere}
.scroll{overflow-x:auto}
@media (max-width:900px){.wide{display:none} td.why{min-width:150px}}
td.num,th.num{text-align:right;white-space:nowrap}
.badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;font-weight:600;
white-space:nowrap}
.passed{background:#d9f2e1;color:#14532d}.failed{background:#fde2e0;color:#7f1d1d}
.error{background:#fff1c2;color:#713f12}.running{background:#dbeafe;color:#1e3a8a}
.queued,.cancelled{background:#eceef1;color:#374151}
.step{border-left:3px solid #bbb;padding:2px 10px;margin:10px 0}
.step.user{border-color:#4a7bd0}.step.agent{border-color:#2e9a5b}.step.thought{border-color:#aaa}
.step.action{border-color:#c98a1b}.step.bad{border-color:#c0392b}.step.event{border-color:#777}
.label{font-weight:600}.muted{color:#666}.differs{background:#fff7d6}
form.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin:6px 0 10px}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#555}
form.filters input,form.filters select{font:inherit;padding:2px 4px;max-width:260px}
progress{width:120px;vertical-align:middle}
.meta td{border:none;padding:1px 10px 1px 0}.meta th{background:none;border:none;padding:1px 10px
1px 0;color:#555}
details>summary{cursor:pointer;color:#333}
.report table.data th{white-space:normal}
"""

_SCRIPT = """
(function(){
  var live=document.getElementById('live');
  document.querySelectorAll('form.filters select').forEach(function(s){
    s.addEventListener('change',function(){s.form.submit();});});
  function key(td){var v=td.getAttribute('data-sort');if(v===null)v=td.textContent.trim();
    var n=Number(v);return v!==''&&isFinite(n)?n:v.toLowerCase();}
  function sortBy(th){var table=th.closest('table'),body=table.tBodies[0];
    var i=Array.prototype.indexOf.call(th.parentNode.children,th);
    var up=th.getAttribute('aria-sort')!=='ascending';
    Array.prototype.forEach.call(th.parentNode.children,function(h){h.removeAttribute('aria-sort');});
    th.setAttribute('aria-sort',up?'ascending':'descending');
    var rows=Array.prototype.slice.call(body.rows).filter(function(r){return r.cells.length>i;});
    rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]),c;
      if(typeof x==='number'&&typeof y==='number')c=x-y;
      else c=String(x).localeCompare(String(y));return up?c:-c;});
    rows.forEach(function(r){body.appendChild(r);});}
  document.addEventListener('click',function(e){
    var th=e.target.closest&&e.target.closest('table.sortable th');if(th){sortBy(th);}});
  if(!live||!window.EventSource){return;}
  var state=document.getElementById('live-state');
  var src=new EventSource('/events?since='+encodeURIComponent(live.dataset.sig||''));
  var busy=false,again=false;
  function refresh(){
    if(busy){again=true;return;}
    busy=true;
    var u=new URL(window.location.href);u.searchParams.set('fragment','1');
    fetch(u.toString(),{cache:'no-store'}).then(function(r){return r.ok?r.text():null;})
      .then(function(t){if(t!==null){
        var open={};live.querySelectorAll('details[open]>summary').forEach(function(m){
          open[m.textContent]=1;});
        live.innerHTML=t;
        live.querySelectorAll('details>summary').forEach(function(m){
          if(open[m.textContent]){m.parentNode.open=true;}});
        document.body.dataset.updates=String(Number(document.body.dataset.updates||0)+1);}})
      .catch(function(){}).then(function(){busy=false;if(again){again=false;refresh();}});
  }
  src.addEventListener('change',refresh);
  src.onopen=function(){if(state){state.textContent='live';}};
  src.onerror=function(){if(state){state.textContent='reconnecting…';}};
})();
"""


def _e(value: Any) -> str:
    return escape("-" if value is None or value == "" else str(value), quote=True)


def _secs(value: float | None) -> str:
    """Seconds to a tenth, as `run`'s summary and `trials list` show them."""
    return "-" if value is None else f"{value:.1f}"


def _pct(reward: float | None) -> str:
    """A reward in %, as `run`'s summary, `trials list` and the leaderboard show it."""
    return "-" if reward is None else f"{100 * reward:.1f}"


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _link(path: str, params: dict[str, str] | None = None) -> str:
    query = urlencode({k: v for k, v in (params or {}).items() if v})
    return path + (f"?{query}" if query else "")


def trial_href(t: TrialRow) -> str | None:
    if t.trial_id is None:
        return None
    return f"/trial/{t.root}/{quote(t.run_id, safe='')}/{quote(t.trial_id, safe='')}"


def _badge(outcome: str) -> str:
    return f'<span class="badge {_e(outcome)}">{_e(outcome)}</span>'


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


class Viewer:
    """The app's state: the jobs folders it serves (resolved once) and how often it polls."""

    def __init__(self, roots: Iterable[Path], *, poll_seconds: float = POLL_SECONDS) -> None:
        self.given = [Path(root) for root in roots]  # as the user wrote them, for display
        self.roots = [root.resolve() for root in self.given]
        self.poll_seconds = poll_seconds

    def runs(self) -> list[RunRow]:
        return index.scan(self.roots)

    def trials(self) -> list[TrialRow]:
        return [t for run in self.runs() for t in run.trials]

    # -- one trial ---------------------------------------------------------------------------

    def trial(self, root: int, run_id: str, trial_id: str) -> tuple[RunRecord, Path, str] | None:
        """The run, the folder and the state of trial ``trial_id`` (any of its attempts) of run
        ``run_id`` in jobs folder ``root``; ``None`` when the folders hold no such trial."""
        if not 0 <= root < len(self.roots):
            return None
        base = self.roots[root]
        folder = next((f for f in index.run_folders(base) if f.name == run_id), None)
        if folder is None:
            return None
        try:
            run = RunRecord.model_validate(read_run_document(folder))
        except (OSError, ValueError):
            return None
        for trial in run.trials.values():
            for attempt in trial.attempts:
                if attempt.trial_id != trial_id:
                    continue
                path = index.trial_folder(base, attempt.trial_dir)
                if path is None or not path.is_dir():
                    return None
                running = attempt.outcome == "running" and trial.state != "finished"
                return run, path, "running" if running else trial.state
        return None


def _page(title: str, body: str, nonce: str, sig: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)} · SkillsBench viewer</title><style>{_CSS}</style></head><body>"
        '<header><a href="/">Runs</a><a href="/trials">Trials</a><a href="/compare">Compare</a>'
        '<a href="/leaderboard">Leaderboard</a>'
        '<span class="live" id="live-state">static</span></header>'
        f'<main id="live" data-sig="{_e(sig)}">{body}</main>'
        f'<script nonce="{nonce}">{_SCRIPT}</script></body></html>\n'
    )


def _csp(nonce: str) -> str:
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'nonce-{nonce}'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


def _read_capped(path: Path) -> bytes:
    """At most MAX_RAW_BYTES of a file, and a last line saying so when it is longer."""
    with path.open("rb") as handle:
        data = handle.read(MAX_RAW_BYTES + 1)
    if len(data) <= MAX_RAW_BYTES:
        return data
    size = path.stat().st_size
    note = f"\n… [cut: the first {MAX_RAW_BYTES:,} bytes of {size:,} are shown]\n"
    return data[:MAX_RAW_BYTES] + note.encode()


def _plain(data: bytes) -> Response:
    """A file as plain text the browser neither sniffs nor runs."""
    return Response(
        data.decode("utf-8", errors="replace"),
        media_type="text/plain; charset=utf-8",
        headers={
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "no-store",
        },
    )


def _html(request: Request, title: str, body: str, sig: str) -> Response:
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    if request.query_params.get("fragment") == "1":
        return HTMLResponse(body, headers=headers)
    nonce = secrets.token_urlsafe(16)
    headers["Content-Security-Policy"] = _csp(nonce)
    return HTMLResponse(_page(title, body, nonce, sig), headers=headers)


# -- runs -------------------------------------------------------------------------------------


def _runs_body(viewer: Viewer, runs: list[RunRow]) -> str:
    parts = [f"<h1>Runs ({len(runs)})</h1>"]
    parts.append(
        "<p class=muted>Jobs folders: "
        + ", ".join(f"<code>{_e(root)}</code>" for root in viewer.given)
        + "</p>"
    )
    bad = index.unreadable_runs(viewer.roots)
    if bad:
        parts.append(
            "<details class=why open><summary>Not read: "
            f"{len(bad)} run folder(s) whose run.json is not a run's document</summary><ul>"
            + "".join(
                f"<li><code>{_e(folder.name)}</code>: {_e(why)}</li>" for folder, why in bad[:50]
            )
            + "</ul></details>"
        )
    if not runs:
        parts.append("<p>No runs yet: they appear here as soon as one starts.</p>")
        return "".join(parts)
    head = (
        "<tr><th>run</th><th>created</th><th>status</th><th>agent</th><th>task set</th>"
        "<th>progress</th><th class=num>passed</th><th class=num>failed</th>"
        "<th class=num>errors</th><th class=num>running</th>"
        "<th class=num title='over the graded (score-eligible) trials'>mean reward (%)</th></tr>"
    )
    rows = []
    for run in runs:
        total = len(run.trials)
        mean, _ = index.graded_mean(run.trials)
        href = _link("/trials", {"run": run.run_id})
        rows.append(
            f'<tr data-run="{_e(run.run_id)}"><td class=id><a href="{_e(href)}">'
            f"{_e(run.run_id)}</a></td><td>{_e(run.created_at)}</td>"
            f"<td>{_e(run.status)}</td><td class=agent>{_e(run.agent)}</td>"
            f"<td>{_e(run.task_set)}</td>"
            f'<td><progress max="{total}" value="{run.n_done}"></progress> '
            f'<span class="done">{run.n_done}/{total}</span></td>'
            f"<td class=num>{run.count('passed')}</td><td class=num>{run.count('failed')}</td>"
            f"<td class=num>{run.count('error')}</td><td class=num>{run.count('running')}</td>"
            f"<td class=num>{_pct(mean)}</td></tr>"
        )
    parts.append(
        f"<div class=scroll><table id=runs><thead>{head}</thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    return "".join(parts)


# -- trials -----------------------------------------------------------------------------------


def _select(name: str, label: str, current: str, choices: Iterable[tuple[str, str]]) -> str:
    options = ['<option value="">any</option>']
    for value, text in choices:
        chosen = " selected" if value == current else ""
        options.append(f'<option value="{_e(value)}"{chosen}>{_e(text)}</option>')
    return f'<label>{_e(label)}<select name="{name}">{"".join(options)}</select></label>'


def _filters_form(f: Filters, trials: list[TrialRow], runs: list[RunRow]) -> str:
    def distinct(values: Iterable[str | None]) -> list[tuple[str, str]]:
        return [(v, v) for v in sorted({v for v in values if v})]

    sort_choices = [(s, s) for s in SORTS if s != "started"]
    if f.unknown_set:
        kept = (
            "<span class=why>This list of a leaderboard row's trials was made by a viewer since "
            "restarted: open the leaderboard again and follow its link.</span>"
        )
    elif f.trial_set:
        kept = (
            f'<input type="hidden" name="set" value="{_e(f.trial_set)}">'
            f"<span class=muted>{len(f.trials)} trial(s) of a leaderboard row</span>"
        )
    elif f.trials:
        kept = (
            f'<input type="hidden" name="trials" value="{_e(",".join(sorted(f.trials)))}">'
            f"<span class=muted>{len(f.trials)} trial(s) of a leaderboard row</span>"
        )
    else:
        kept = ""
    return (
        '<form class="filters" method="get" action="/trials">'
        + kept
        + _select("run", "run", f.run, [(r.run_id, r.run_id) for r in runs])
        + _select("task", "task", f.task, distinct(t.task_id for t in trials))
        + _select("agent", "agent", f.agent, distinct(t.agent for t in trials))
        + _select("outcome", "outcome", f.outcome, [(o, o) for o in OUTCOMES])
        + _select(
            "failure",
            "failure kind",
            f.failure,
            [("none", "none"), *distinct(t.failure for t in trials)],
        )
        + _select("eligible", "score-eligible", f.eligible, [("yes", "yes"), ("no", "no")])
        + f'<label>search<input type="search" name="q" value="{_e(f.q) if f.q else ""}" '
        'placeholder="task, id, agent, reason"></label>'
        + _select("sort", "sort by", f.sort if f.sort != "started" else "", sort_choices)
        + _select("desc", "order", "1" if f.desc else "", [("1", "descending")])
        + '<button type="submit">apply</button> <a href="/trials">clear</a></form>'
    )


def short_id(trial_id: str) -> str:
    """A trial id's own part (``<task>__<tag>__<8 hex>``: the hex), the task being its own
    column."""
    return trial_id.rsplit("__", 1)[-1]


def trials_table(trials: list[TrialRow], *, show_run: bool = True) -> str:
    head = (
        "<tr><th>task</th><th>trial</th>"
        + ("<th class=wide>run</th>" if show_run else "")
        + "<th>agent</th><th>outcome</th><th class=num>reward (%)</th><th>failure</th>"
        "<th class=wide>eligible</th><th class=num>time (s)</th>"
        "<th class='num wide'>attempts</th><th>why</th></tr>"
    )
    rows = []
    for t in trials:
        href = trial_href(t)
        trial_cell = (
            f'<a href="{_e(href)}" title="{_e(t.trial_id)}">{_e(short_id(t.trial_id or ""))}</a>'
            if href
            else "<span class=muted>-</span>"
        )
        why = t.reason or ""
        rows.append(
            f'<tr class="trial" data-outcome="{_e(t.outcome)}" data-task="{_e(t.task_id)}">'
            f'<td><a href="{_e(_link("/trials", {"task": t.task_id}))}">{_e(t.task_id)}</a></td>'
            f"<td class=id>{trial_cell}</td>"
            + (
                f'<td class="id wide"><a href="{_e(_link("/trials", {"run": t.run_id}))}">'
                f"{_e(t.run_id)}</a></td>"
                if show_run
                else ""
            )
            + f"<td class=agent>{_e(t.agent)}</td><td>{_badge(t.outcome)}</td>"
            f"<td class=num>{_pct(t.reward)}</td><td>{_e(t.failure)}</td>"
            f"<td class=wide>{_yes_no(t.score_eligible)}</td>"
            f"<td class=num>{_secs(t.seconds)}</td><td class='num wide'>{t.n_attempts}</td>"
            f'<td class=why title="{_e(why)}">{_e(_clip(why, MAX_WHY_CHARS))}</td></tr>'
        )
    if not rows:
        rows.append('<tr><td colspan="11" class=muted>no trial matches</td></tr>')
    return (
        f"<div class=scroll><table id=trials><thead>{head}</thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _trials_body(f: Filters, runs: list[RunRow]) -> str:
    every = [t for run in runs for t in run.trials]
    shown = f.apply(every)
    parts = [f"<h1>Trials ({len(shown)} of {len(every)})</h1>"]
    run = next((r for r in runs if r.run_id == f.run), None)
    if run is not None:
        parts.append(
            f"<p>Run <b>{_e(run.run_id)}</b> · {_e(run.status)} · agent {_e(run.agent)} · "
            f'<progress max="{len(run.trials)}" value="{run.n_done}"></progress> '
            f'<span id="progress">{run.n_done}/{len(run.trials)} done</span>, '
            f"{run.count('passed')} passed, {run.count('failed')} failed, "
            f"{run.count('error')} errors, {run.count('running')} running</p>"
        )
    parts.append(_filters_form(f, every, runs))
    parts.append(trials_table(shown))
    return "".join(parts)


# -- one trial --------------------------------------------------------------------------------


def _meta(rows: list[tuple[str, str]]) -> str:
    return (
        "<table class=meta>"
        + "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
        + "</table>"
    )


def _trial_body(
    viewer: Viewer, root: int, run: RunRecord, folder: Path, state: str, others: list[TrialRow]
) -> str:
    t = load(folder, running=state != "finished", lenient=True)
    r = t.result
    trial_id = folder.name
    mine = next((o for o in others if o.trial_id == trial_id), None)
    outcome = mine.outcome if mine else state
    task_id = str(t.task_id or (mine.task_id if mine else ""))
    base = f"/raw/{root}/{quote(run.run_id, safe='')}/{quote(trial_id, safe='')}/"

    def raw(name: str) -> str:
        return base + quote(name)

    try:
        timing = read_json(folder / TIMING_FILE) if inside(folder / TIMING_FILE, folder) else {}
    except (OSError, ValueError, RecursionError):
        timing = {}
        t.problems.append(f"{TIMING_FILE}: not valid JSON")
    phases = ", ".join(
        f"{name.replace('_', ' ')} {timing[name]:.1f}s"
        for name in ("environment_setup", "agent_setup", "agent_execution", "verifier", "total")
        if isinstance(timing.get(name), int | float)
    )
    agent_result = r.get("agent_result") or {}
    parts = [
        f"<h1>Trial {_e(trial_id)}</h1>",
        _meta(
            [
                ("outcome", _badge(outcome)),
                (
                    "task",
                    f'<a href="{_e(_link("/trials", {"task": task_id}))}">{_e(task_id)}</a>',
                ),
                ("agent", _e(r.get("agent") or run.agent)),
                (
                    "run",
                    f'<a href="{_e(_link("/trials", {"run": run.run_id}))}">{_e(run.run_id)}</a>'
                    f" ({_e(run.status)})",
                ),
                ("reward", _e(r.get("reward"))),
                ("failure", _e(r.get("failure"))),
                ("score-eligible", _e(_yes_no(r.get("score_eligible")))),
                ("attempt", _e(r.get("attempt"))),
                ("started", _e(r.get("started_at") or (mine.started_at if mine else None))),
                ("finished", _e(r.get("finished_at"))),
                ("phases", _e(phases)),
                ("cost", _e(agent_result.get("cost_summary"))),
            ]
        ),
    ]
    why = r.get("reason") or r.get("error") or (mine.reason if mine else None)
    if why:
        parts.append(f"<p class=why><span class=label>Why:</span> {_e(why)}</p>")
    for problem in t.problems:
        parts.append(f"<p class='why problem'><span class=label>Not read:</span> {_e(problem)}</p>")
    if state != "finished":
        parts.append("<p><span class='badge running'>running</span> updates as it goes</p>")
    same_task = [o for o in others if o.trial_id != trial_id]
    parts.append(f"<h2>Other trials of this task ({len(same_task)})</h2>")
    if same_task:
        parts.append(trials_table(same_task))
    else:
        parts.append("<p class=muted>none in these folders</p>")
    parts += ["<h2>Instruction</h2>", _pre(t.instruction)]
    parts.append(timeline_html(t, empty="no trajectory recorded yet"))
    parts += ["<h2>Agent's final message</h2>", _pre(t.final_message)]
    parts.append("<h2>Model calls and usage</h2>")
    parts.append(
        f"<p><span class=label>Usage source:</span> {_e(agent_result.get('usage_source'))}</p>"
    )
    parts.append(model_calls_table(t))
    if t.reported:
        parts.append("<p><span class=label>Reported by the participant</span> (not measured)</p>")
        parts.append(reported_table(t))
    parts.append("<h2>Verifier output</h2>")
    verifier = r.get("verifier") or {}
    if verifier:
        parts.append(
            f"<p class=muted>exit {_e(verifier.get('exit_code'))}"
            + (" · timed out" if verifier.get("timed_out") else "")
            + f" · verifier reward {_e(r.get('verifier_reward'))}</p>"
        )
    if not t.verifier_output:
        parts.append("<p class=muted>no verifier output recorded</p>")
    for name, text in t.verifier_output.items():
        parts += [f"<div class=muted>{_e(name)}</div>", _pre(text, raw(f"verifier/{name}"))]
    parts.append(
        f"<h2>Reward</h2><p>{_badge(outcome)} <span class=label>{_e(r.get('reward'))}</span>"
        f" (verifier reward {_e(r.get('verifier_reward'))}; source {_e(r.get('reward_source'))})"
        "</p>"
    )
    parts.append("<h2>Agent logs</h2>")
    if not t.agent_logs:
        parts.append("<p class=muted>no agent log recorded</p>")
    for name, text in t.agent_logs.items():
        parts.append(
            f"<details><summary>{_e(name)}</summary>{_pre(text, raw(f'agent/{name}'))}</details>"
        )
    parts.append("<h2>Files of the trial folder</h2><ul class=files>")
    for name in _files(folder):
        parts.append(f'<li><a href="{_e(raw(name))}">{_e(name)}</a></li>')
    parts.append("</ul>")
    return "".join(parts)


def _files(folder: Path) -> list[str]:
    """The regular files of a trial folder (not following links), at most MAX_LISTED_FILES."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if not path.is_symlink():
                found.append(path.relative_to(folder).as_posix())
            if len(found) >= MAX_LISTED_FILES:
                return found
    return found


# -- compare ----------------------------------------------------------------------------------


def _sides(runs: list[RunRow]) -> list[tuple[str, str]]:
    agents = sorted({r.agent for r in runs})
    return [(f"agent:{a}", f"agent {a}") for a in agents] + [
        (f"run:{r.run_id}", f"run {r.run_id} ({r.agent})") for r in runs
    ]


def _side_trials(side: str, runs: list[RunRow]) -> list[TrialRow]:
    kind, _, name = side.partition(":")
    if kind == "agent":
        return [t for r in runs if r.agent == name for t in r.trials]
    if kind == "run":
        return [t for r in runs if r.run_id == name for t in r.trials]
    return []


def _best(trials: list[TrialRow]) -> TrialRow | None:
    """The trial that stands for a task on one side: the newest finished one (or the newest)."""
    done = [t for t in trials if t.state == "finished"] or trials
    return max(done, key=lambda t: t.started_at or "") if done else None


def _compare_body(a: str, b: str, runs: list[RunRow]) -> str:
    sides = _sides(runs)
    form = (
        '<form class="filters" method="get" action="/compare">'
        + _select("a", "A", a, sides)
        + _select("b", "B", b, sides)
        + '<button type="submit">compare</button></form>'
    )
    parts = ["<h1>Compare</h1>", form]
    if not a or not b:
        parts.append("<p class=muted>Pick two agents or two runs.</p>")
        return "".join(parts)
    left, right = _side_trials(a, runs), _side_trials(b, runs)
    tasks = sorted({t.task_id for t in left} | {t.task_id for t in right})

    def summary(trials: list[TrialRow]) -> str:
        best = [x for x in (_best([t for t in trials if t.task_id == k]) for k in tasks) if x]
        mean, graded = index.graded_mean(best)
        passed = sum(1 for t in best if t.outcome == "passed")
        if mean is None:
            return f"{passed}/{len(best)} passed: nothing was graded"
        return f"{passed}/{len(best)} passed, mean reward {_pct(mean)}% over {graded} graded"

    def cell(t: TrialRow | None) -> str:
        if t is None:
            return "<td class=muted>not run</td><td></td>"
        href = trial_href(t)
        badge = f'<a href="{_e(href)}">{_badge(t.outcome)}</a>' if href else _badge(t.outcome)
        return f"<td>{badge}</td><td class=num>{_pct(t.reward)}</td>"

    rows = []
    n_differ = 0
    for task in tasks:
        x = _best([t for t in left if t.task_id == task])
        y = _best([t for t in right if t.task_id == task])
        differs = (x is None) != (y is None) or (
            x is not None and y is not None and (x.outcome, x.reward) != (y.outcome, y.reward)
        )
        n_differ += differs
        what = ""
        if differs and x is not None and y is not None:
            what = f"{x.outcome} → {y.outcome}" if x.outcome != y.outcome else "reward"
        elif differs:
            what = "run on one side only"
        rows.append(
            f'<tr class="{"differs" if differs else "same"}" data-task="{_e(task)}">'
            f'<td><a href="{_e(_link("/trials", {"task": task}))}">{_e(task)}</a></td>'
            f"{cell(x)}{cell(y)}<td>{_e(what) if what else ''}</td></tr>"
        )
    parts.append(
        f"<p><b>A</b> {_e(a)}: {summary(left)}<br><b>B</b> {_e(b)}: {summary(right)}<br>"
        f"<span id=n-differ>{n_differ}</span> of {len(tasks)} task(s) differ</p>"
    )
    parts.append(
        "<table id=compare><thead><tr><th>task</th><th>A</th><th class=num>reward (%)</th>"
        "<th>B</th><th class=num>reward (%)</th><th>what differs</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return "".join(parts)


# -- results files ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaderboard:
    """Results files served beside the job folders (``view --results``), from the composition
    root: ``files`` lists the files now matching what was given; ``sections`` renders their
    leaderboard tables (HTML, with confidence intervals), linking each trial id it is given an
    address for and each row of the aggregate tables to the list of its trials (the second
    callable: their ids -> that list's address); ``style`` is those sections' CSS. Both may raise ValueError (a bad file)."""

    files: Callable[[], list[Path]]
    sections: Callable[[Callable[[str], str | None], Callable[[list[str]], str | None]], str]
    style: str


def _leaderboard_body(board: Leaderboard | None, runs: list[RunRow]) -> str:
    if board is None:
        return (
            "<h1>Leaderboard</h1><p>No results files were given: start the viewer with "
            "<code>view JOBS --results 'results/*.json'</code> to see their leaderboard tables "
            "here, linked to the trials of these job folders.</p>"
        )
    links = {t.trial_id: href for run in runs for t in run.trials if (href := trial_href(t))}

    def behind(trial_ids: list[str]) -> str | None:
        held = [trial_id for trial_id in trial_ids if trial_id in links]
        return "/trials?" + trials_query(held) if held else None

    try:
        files = board.files()
        sections = board.sections(lambda trial_id: links.get(trial_id), behind)
    except ValueError as exc:
        return f"<h1>Leaderboard</h1><p class=why>{_e(exc)}</p>"
    listed = "".join(
        f'<li><a href="/results/{n}">{_e(path.name)}</a></li>' for n, path in enumerate(files)
    )
    linked = len(links)
    return (
        f"<style>{board.style}</style>"
        f"<details class=results-files><summary>{len(files)} results file(s); a trial id links "
        f"to its trial where the job folders hold it ({linked} trial(s) there)</summary>"
        f"<ul>{listed}</ul></details>"
        f'<div class="report">{sections}</div>'
    )


# -- the app ----------------------------------------------------------------------------------


def _host_name(header: str) -> str:
    """The name of a Host header, without its port (``[::1]:9020`` -> ``[::1]``)."""
    header = header.strip()
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class LoopbackHostOnly:
    """Answers 421 to a request whose Host header is not a loopback name or address. A viewer
    on 127.0.0.1 is still reached by a web page the user opens, through a name of the page's
    own that is made to point at 127.0.0.1 (DNS rebinding): the browser then sends that name
    as the Host, and it is refused, so no other site reads the trials."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            if not is_loopback_host(_host_name(host)):
                refused = PlainTextResponse(
                    "this viewer answers only to a loopback address (127.0.0.1, localhost): "
                    "open it as http://127.0.0.1:PORT/",
                    421,
                )
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(
    roots: Iterable[Path],
    *,
    poll_seconds: float = POLL_SECONDS,
    leaderboard: Leaderboard | None = None,
    loopback_only: bool = True,
) -> ASGIApp:
    """The viewer's app; ``loopback_only`` (it listens on loopback): requests must name a
    loopback host (:class:`LoopbackHostOnly`)."""
    viewer = Viewer(roots, poll_seconds=poll_seconds)

    async def snapshot() -> tuple[list[RunRow], str]:
        def read() -> tuple[list[RunRow], str]:
            sig = index.signature(viewer.roots)  # before the read: a change after it is news
            return viewer.runs(), sig

        return await asyncio.to_thread(read)

    async def home(request: Request) -> Response:
        runs, sig = await snapshot()
        return _html(request, "Runs", _runs_body(viewer, runs), sig)

    async def trials(request: Request) -> Response:
        runs, sig = await snapshot()
        return _html(request, "Trials", _trials_body(Filters.of(request.query_params), runs), sig)

    async def compare(request: Request) -> Response:
        runs, sig = await snapshot()
        a = str(request.query_params.get("a") or "")[:300]
        b = str(request.query_params.get("b") or "")[:300]
        return _html(request, "Compare", _compare_body(a, b, runs), sig)

    def not_found(what: str) -> Response:
        return PlainTextResponse(f"{what}: not in the folders this viewer serves", 404)

    async def board(request: Request) -> Response:
        runs, sig = await snapshot()
        body = await asyncio.to_thread(_leaderboard_body, leaderboard, runs)
        return _html(request, "Leaderboard", body, sig)

    async def results_file(request: Request) -> Response:
        number = int(request.path_params["number"])

        def read() -> bytes | None:
            if leaderboard is None:
                return None
            try:
                files = leaderboard.files()
            except ValueError:
                return None
            if number >= len(files) or not files[number].is_file():
                return None
            return _read_capped(files[number])

        data = await asyncio.to_thread(read)
        if data is None:
            return PlainTextResponse("no such results file: not one this viewer was given", 404)
        return _plain(data)

    async def trial(request: Request) -> Response:
        root = int(request.path_params["root"])
        run_id, trial_id = request.path_params["run_id"], request.path_params["trial_id"]

        def read() -> tuple[str, str] | None:
            sig = index.signature(viewer.roots)
            found = viewer.trial(root, run_id, trial_id)
            if found is None:
                return None
            run, folder, state = found
            task = next(
                (
                    t.task_id
                    for t in run.trials.values()
                    for a in t.attempts
                    if a.trial_id == trial_id
                ),
                "",
            )
            others = [t for t in viewer.trials() if t.task_id == task]
            return _trial_body(viewer, root, run, folder, state, others), sig

        body = await asyncio.to_thread(read)
        if body is None:
            return not_found("no such trial")
        return _html(request, f"Trial {trial_id}", body[0], body[1])

    async def raw(request: Request) -> Response:
        root = int(request.path_params["root"])
        run_id, trial_id = request.path_params["run_id"], request.path_params["trial_id"]
        name = request.path_params["path"]
        found = await asyncio.to_thread(viewer.trial, root, run_id, trial_id)
        if found is None:
            return not_found("no such trial")
        folder = found[1]
        path = folder / name
        if ".." in Path(name).parts or not inside(path, folder) or not path.is_file():
            return not_found(name)

        return _plain(await asyncio.to_thread(_read_capped, path))

    async def events(request: Request) -> Response:
        since = str(request.query_params.get("since") or "")

        async def stream() -> AsyncIterator[str]:
            last = since
            yield "retry: 2000\n\n"
            idle = 0.0
            while True:
                sig = await asyncio.to_thread(index.signature, viewer.roots)
                if sig != last:
                    last = sig
                    idle = 0.0
                    yield f"event: change\ndata: {sig}\n\n"
                elif idle >= 15:
                    idle = 0.0
                    yield ": still here\n\n"  # keeps proxies and the browser from giving up
                await asyncio.sleep(viewer.poll_seconds)
                idle += viewer.poll_seconds

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    app = Starlette(
        routes=[
            Route("/", home),
            Route("/trials", trials),
            Route("/compare", compare),
            Route("/trial/{root:int}/{run_id}/{trial_id}", trial),
            Route("/raw/{root:int}/{run_id}/{trial_id}/{path:path}", raw),
            Route("/leaderboard", board),
            Route("/results/{number:int}", results_file),
            Route("/events", events),
        ]
    )
    return LoopbackHostOnly(app) if loopback_only else app
