"""The HTML report: one self-contained page, rendered by headless Chromium (Debian `chromium`)."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from leaderboard.report import USAGE_SOURCE_NAMES, Z95, build_report, load_labels, wilson_interval
from tests.support import PUBLISHED_DATA, REPO_ROOT

PUBLISHED = str(PUBLISHED_DATA / "*__results__*.json")
SAMPLE = str(REPO_ROOT / "leaderboard" / "results")


def test_wilson_interval_closed_forms() -> None:
    z2 = Z95 * Z95
    low, high = wilson_interval(0, 5)
    assert low == 0.0 and high == pytest.approx(z2 / (5 + z2))
    low, high = wilson_interval(7, 7)
    assert low == pytest.approx(7 / (7 + z2)) and high == 1.0
    low, high = wilson_interval(1, 7)
    assert (round(low, 4), round(high, 4)) == (0.0257, 0.5131)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def _row_count(paths: Iterable[Path]) -> int:
    total = 0
    for path in paths:
        document = json.loads(path.read_text())
        total += sum(len(envelope["results"]) for envelope in document["results"])
    return total


def test_page_is_self_contained() -> None:
    html = build_report([PUBLISHED, SAMPLE])
    assert html.startswith("<!DOCTYPE html>")
    for forbidden in ("<link", "src=", "@import", "url(", "<iframe", "<img"):
        assert forbidden not in html
    # One inline script (table sorting), loading nothing.
    assert html.count("<script") == 1 and "<script>" in html
    assert not re.search(r"\b(fetch|XMLHttpRequest|import\(|WebSocket)\b", html)
    # The only URL is the SVG namespace.
    assert set(re.findall(r"https?://[^\s\"'<]+", html)) == {"http://www.w3.org/2000/svg"}
    assert html.count("<svg") == 2
    assert html.count('data-query="') == 3
    # Per-task rows: every public row of the inputs.
    tasks = html.split('data-table="tasks"')[1]
    assert tasks.count("<tr class=") == _row_count(PUBLISHED_DATA.glob("*__results__*.json")) + (
        _row_count(Path(SAMPLE).glob("*.json"))
    )
    # Infra failures of sample agent b show up with their categories.
    infra = html.split('data-table="infra"')[1].split("</table>")[0]
    assert "019e5a00-0000-7000-8000-00000000000b" in infra


def test_values_are_escaped(tmp_path: Path) -> None:
    html = build_report([PUBLISHED], title="<b>board</b>")
    assert "<title>&lt;b&gt;board&lt;/b&gt;</title>" in html


def _png_size_and_variety(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct scanline bytes (a blank page has very few)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


def _chromium() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("headless Chromium is not installed (Debian package `chromium`)")
    return browser


def _chromium_args(browser: str, profile: Path) -> list[str]:
    return [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-extensions",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]


# Appended to a copy of the page: measures the layout at the window's width, then clicks the
# overall table's "Pass rate (%)" heading once (ascending) and records the first column's order.
_MEASURE = r"""
<script>
(function(){
var charts=Array.prototype.map.call(document.querySelectorAll("svg.chart"),function(c){
  return Math.round(c.getBoundingClientRect().width);});
var boxes=Array.prototype.map.call(document.querySelectorAll(".table-box"),function(b){
  return b.scrollWidth-b.clientWidth;});
var table=document.querySelector('table[data-query="overall"]');
var th=Array.prototype.filter.call(table.tHead.rows[0].cells,function(h){
  return h.textContent.indexOf("Pass rate")===0;})[0];
th.click();
var order=Array.prototype.map.call(table.tBodies[0].rows,function(r){
  return r.cells[0].getAttribute("title");});
// Every heading word that the layout broke across lines (a word on two lines has two boxes).
var broken=[];
document.querySelectorAll("table.data th").forEach(function(h){
  var text=h.firstChild;if(!text||text.nodeType!==3)return;
  var re=/\S+/g,m;while((m=re.exec(text.data))){var r=document.createRange();
    r.setStart(text,m.index);r.setEnd(text,m.index+m[0].length);
    var tops={};Array.prototype.forEach.call(r.getClientRects(),function(b){
      tops[Math.round(b.top)]=1;});
    if(Object.keys(tops).length>1)broken.push(m[0]);}});
var out=document.createElement("pre");out.id="measure";
out.textContent=JSON.stringify({viewport:window.innerWidth,
  scroll:document.documentElement.scrollWidth,
  content:document.body.clientWidth,charts:charts,overflowing_tables:boxes,
  order:order,sort:th.getAttribute("aria-sort"),broken:broken});
document.body.appendChild(out);
})();
</script>
"""


def test_chromium_lays_the_page_out_at_1280px(tmp_path: Path) -> None:
    """At 1280 px: nothing scrolls sideways, charts use the content width, headings sort."""
    browser = _chromium()
    html = build_report([PUBLISHED, SAMPLE], labels={k.lower(): v for k, v in LABELS.items()})
    page = tmp_path / "leaderboard.html"
    page.write_text(html, encoding="utf-8")
    probe = tmp_path / "measure.html"
    probe.write_text(html.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    common = _chromium_args(browser, tmp_path / "profile")
    dom = subprocess.run(
        [*common, "--window-size=1280,1600", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    measured = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert measured["viewport"] == 1280, measured
    assert measured["scroll"] <= measured["viewport"], measured  # no horizontal overflow
    assert measured["overflowing_tables"] == [0] * len(measured["overflowing_tables"]), measured
    # No column heading is broken inside a word ("elig ible (ye s/n o)").
    assert measured["broken"] == [], measured
    # Both charts span the content column (body width less its padding), not a third of it.
    content = measured["content"]
    assert len(measured["charts"]) == 2
    assert all(content - 40 <= width <= content for width in measured["charts"]), measured
    # Sorting by pass rate ascending puts the lowest first: the placeholder (0/6) before agent a.
    assert measured["sort"] == "ascending"
    order = measured["order"]
    assert order.index("019e5a00-0000-7000-8000-0000000000e1") < order.index(
        "019e5a00-0000-7000-8000-00000000000a"
    )
    # Screenshots at 1280 px, top of the page and full height, kept in the test's folder.
    for name, height in (("report-1280.png", 1600), ("report-1280-full.png", 6000)):
        shot = tmp_path / name
        run = subprocess.run(
            [*common, f"--window-size=1280,{height}", f"--screenshot={shot}", page.as_uri()],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
        width, shot_height, variety = _png_size_and_variety(shot)
        assert (width, shot_height) == (1280, height)
        assert variety > 50


def test_chromium_renders_the_page(tmp_path: Path) -> None:
    browser = _chromium()
    page = tmp_path / "leaderboard.html"
    page.write_text(build_report([PUBLISHED, SAMPLE]), encoding="utf-8")
    common = _chromium_args(browser, tmp_path / "profile")
    dom = subprocess.run(
        [*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    for expected in (
        "019e5799-ca68-7b33-b1a5-c97b92b6fda1",
        "134.4",  # time per task: 940.6 s over 7 tasks
        "2.6 – 51.3",
        "Pass rate by category",
        "office-white-collar",
        "Per-task results",
    ):
        assert expected in dom.stdout


LABELS = {
    "019e5a00-0000-7000-8000-00000000000a": "Sample agent A",
    "019E5A00-0000-7000-8000-0000000000E1": "Placeholder <worker>",
}


def test_labels_units_and_coverage_note() -> None:
    html = build_report([SAMPLE], labels={k.lower(): v for k, v in LABELS.items()})
    overall = html.split('data-query="overall"')[1].split("</table>")[0]
    # Each label beside its id; the label is escaped; unlabelled agents show the id alone.
    assert (
        '<span class="name">Sample agent A</span> <code class="uuid">019e5a00-0000-7000-8000-00000000000a'
        in overall
    )
    assert "Placeholder &lt;worker&gt;" in overall
    assert '<code class="uuid">019e5a00-0000-7000-8000-00000000000b</code>' in overall
    # A unit on every column heading; pass rate and mean reward in one style (%).
    headings = re.findall(r"<th>([^<]*)</th>", overall)
    assert headings == [
        "Agent (label · AgentBeats id)",
        "Tasks passed (passed/eligible)",
        "Pass rate (%)",
        "Mean reward (%)",
        "Time per task (s, mean)",
        "Tasks (count)",
        "Infra failed (count)",
        "95% CI of pass rate (%)",
    ]
    # Mean reward 0.595 is shown as 59.5 (%), beside pass rate 52.9 (%).
    row_a = overall.split(">Sample agent A<")[1].split("</tr>")[0]
    assert ">52.9<" in row_a and ">59.5<" in row_a
    tasks = html.split('data-table="tasks"')[1].split("</table>")[0]
    assert re.findall(r"<th>([^<]*)</th>", tasks)[-3:] == [
        "reward (%)",
        "time (s)",
        "infra failure (kind)",
    ]
    # The sample agents ran 87, 78, 6 and 6 tasks: the page says so.
    note = html.split('class="note coverage"')[1].split("</p>")[0]
    assert "Sample agent A (019e5a00-0000-7000-8000-00000000000a): 87" in note
    assert "019e5a00-0000-7000-8000-00000000000b: 78" in note


def test_no_coverage_note_when_every_agent_ran_the_same_tasks() -> None:
    html = build_report([str(REPO_ROOT / "leaderboard" / "results" / "sample-*0a.json")])
    assert "note coverage" not in html


def test_label_map_file_errors_name_the_problem(tmp_path: Path) -> None:
    good = tmp_path / "labels.json"
    good.write_text(json.dumps(LABELS))
    assert load_labels(good)["019e5a00-0000-7000-8000-0000000000e1"] == "Placeholder <worker>"
    for content, message in (
        ("[1]", "must be a JSON object"),
        ("{", "is not JSON"),
        ('{"agent-a": "x"}', "'agent-a' is not an AgentBeats agent UUID"),
        ('{"019e5a00-0000-7000-8000-00000000000a": ""}', "must be a non-empty string"),
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(content)
        with pytest.raises(ValueError, match=re.escape(message)):
            load_labels(bad)


def test_report_command_takes_a_label_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from skillsbench_agentbeats.cli import main

    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps(LABELS))
    out = tmp_path / "page.html"
    main(
        [
            "leaderboard",
            "report",
            "--results",
            SAMPLE,
            "--labels",
            str(labels),
            "--output",
            str(out),
        ]
    )
    assert '<span class="name">Sample agent A</span>' in out.read_text(encoding="utf-8")
    labels.write_text('{"not-a-uuid": "x"}')
    with pytest.raises(SystemExit) as exited:
        main(["leaderboard", "report", "--results", SAMPLE, "--labels", str(labels)])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {labels}: 'not-a-uuid' is not an AgentBeats agent UUID"


USAGE_AGENT = "019e5a00-0000-7000-8000-0000000000ff"


def _usage_file(tmp_path: Path) -> Path:
    """A published file's five rows under a new agent, with usage of each kind on them."""
    source = PUBLISHED_DATA / (
        "benchflow-ai__skillsbench-leaderboard__results__019e515b-26ad-7510-983f-f8f9f2db5ac6.json"
    )
    document = json.loads(source.read_text())
    document["participants"] = {"agent": USAGE_AGENT}
    reported = {"usage_source": "participant_reported"}
    usages = [
        {**reported, "input_tokens": 1000, "output_tokens": 200, "cost_usd": 0.01},
        {**reported, "input_tokens": 1500, "output_tokens": 200, "cost_usd": 0.02},
        {**reported, "input_tokens": 0, "output_tokens": None, "cost_usd": None},
        # As a row that crossed A2A as protobuf Values has it: DuckDB reads the column as DOUBLE.
        {"usage_source": "provider_response", "input_tokens": 300.0, "output_tokens": 30},
        {},  # a row from before the usage keys
    ]
    rows = document["results"][0]["results"]
    assert len(rows) == len(usages)
    document["results"][0]["results"] = [{**r, **u} for r, u in zip(rows, usages, strict=True)]
    path = tmp_path / "usage.json"
    path.write_text(json.dumps(document))
    return path


def test_usage_per_agent_and_source_with_unknown(tmp_path: Path) -> None:
    old = (
        PUBLISHED_DATA
        / "benchflow-ai__skillsbench-leaderboard__results__benchflow-ai-20260618-012425.json"
    )
    html = build_report([str(_usage_file(tmp_path)), str(old)])
    table = html.split('data-table="usage"')[1].split("</table>")[0]
    assert re.findall(r"<th>([^<]*)</th>", table) == [
        "Agent (label · AgentBeats id)",
        "Usage source",
        "Trials (count)",
        "Input tokens (tokens, total)",
        "Output tokens (tokens, total)",
        "Total tokens (tokens, total)",
        "Cost (USD, total)",
    ]
    lines = {
        (re.search(r'title="([^"]+)"', tr)[1], re.findall(r'class="txt">([^<]*)<', tr)[0]): tr  # type: ignore[index]
        for tr in table.split("<tr>")[2:]
    }
    assert sorted(lines) == [
        ("019e5799-ca68-7b33-b1a5-c97b92b6fda1", "not recorded"),
        (USAGE_AGENT, "measured by the worker (model provider responses)"),
        (USAGE_AGENT, "not recorded"),
        (USAGE_AGENT, "reported by the participant (not measured)"),
    ]

    def cells(key: tuple[str, str]) -> list[str]:
        return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", lines[key])][
            2:
        ]

    # Reported and measured usage are never summed together; a figure no trial gave is unknown.
    assert cells((USAGE_AGENT, "reported by the participant (not measured)")) == [
        "3",
        "2,500",
        "400 (2 of 3 trials; the rest unknown)",
        "2,900 (2 of 3 trials; the rest unknown)",
        "0.0300 (2 of 3 trials; the rest unknown)",
    ]
    assert cells((USAGE_AGENT, "measured by the worker (model provider responses)")) == [
        "1",
        "300",
        "30",
        "330",
        "unknown",
    ]
    unknown = ["1", "unknown", "unknown", "unknown", "unknown"]
    assert cells((USAGE_AGENT, "not recorded")) == unknown
    assert cells(("019e5799-ca68-7b33-b1a5-c97b92b6fda1", "not recorded")) == unknown
    # The published queries ignore usage: the new agent's overall row is its source file's.
    overall = html.split('data-query="overall"')[1].split("</table>")[0]
    assert USAGE_AGENT in overall


def test_usage_is_unknown_for_files_without_usage_keys() -> None:
    html = build_report([PUBLISHED])
    table = html.split('data-table="usage"')[1].split("</table>")[0]
    assert "not recorded" in table and "unknown" in table
    for tr in table.split("<tr>")[2:]:
        figures = re.findall(r"<td[^>]*>(.*?)</td>", tr)[-4:]
        assert figures == ["unknown"] * 4  # never 0


def _svg_groups(svg: str) -> dict[str, list[str]]:
    """The value labels of a chart, by group label, in drawing order."""
    groups: dict[str, list[str]] = {}
    current = ""
    for kind, text in re.findall(r'<text [^>]*class="(label|value)">([^<]*)</text>', svg):
        if kind == "label":
            current = text
            groups[current] = []
        else:
            groups[current].append(text)
    return groups


def test_bars_keep_one_agent_order_and_their_labels_name_the_agent() -> None:
    html = build_report([PUBLISHED, SAMPLE], labels={k.lower(): v for k, v in LABELS.items()})
    overall = html.split('data-query="overall"')[1].split("</table>")[0]
    agent_order = re.findall(r'<td class="agent" data-sort="[^"]*" title="([^"]+)"', overall)
    short = {a: f"…{a[-12:]}" for a in agent_order}
    short["019e5a00-0000-7000-8000-00000000000a"] = "Sample agent A"
    short["019e5a00-0000-7000-8000-0000000000e1"] = "Placeholder &lt;worker&gt;"
    for chart in html.split('<svg class="chart"')[1:]:
        groups = _svg_groups(chart.split("</svg>")[0])
        assert len(groups) >= 3
        seen_orders = set()
        for labels in groups.values():
            named = [label.split(": ")[0] for label in labels]
            # Every value label names its agent, and the agents come in the overall order.
            assert all(name in short.values() for name in named), labels
            positions = [list(short.values()).index(name) for name in named]
            assert positions == sorted(positions), labels
            seen_orders.add(tuple(named))
        assert len(seen_orders) > 1  # the groups hold different agents: the test can fail
    # A label such as "Sample agent A: 57.1% (4/7)".
    assert re.search(r">Sample agent A: \d+\.\d% \(\d+/\d+\)<", html)


def test_time_is_a_mean_per_task_with_its_unit() -> None:
    html = build_report([PUBLISHED])
    overall = html.split('data-query="overall"')[1].split("</table>")[0]
    headings = re.findall(r"<th>([^<]*)</th>", overall)
    column = headings.index("Time per task (s, mean)")
    first = overall.split("<tbody>")[1].split("</tr>")[0]
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", first)]
    # 940.6 s summed over 7 eligible tasks (the published query's Time): 134.4 s per task.
    assert cells[column] == "134.4"
    assert "time per task is the mean in seconds" in html


def test_a_trial_id_links_to_its_transcript_where_its_job_folder_is_known() -> None:
    known = "citation-check__agentbeats__e2f505aa"
    html = build_report(
        [PUBLISHED], trial_links=lambda trial: f"/trial/0/r1/{trial}" if trial == known else None
    )
    tasks = html.split('data-table="tasks"')[1].split("</table>")[0]
    links = re.findall(r'<a href="([^"]+)">([^<]+)</a>', tasks)
    trial_ids = re.findall(r"__agentbeats__[0-9a-f]{8}", tasks)
    assert links == [(f"/trial/0/r1/{known}", known)]
    assert len(trial_ids) > 1  # the others are shown, unlinked
    assert "<a " not in build_report([PUBLISHED]).split('data-table="tasks"')[1]


def test_the_sample_shows_every_kind_of_usage_line() -> None:
    table = build_report([SAMPLE]).split('data-table="usage"')[1].split("</table>")[0]
    lines = {
        (re.search(r'title="([^"]+)"', tr)[1], re.findall(r'class="txt">([^<]*)<', tr)[0]): [  # type: ignore[index]
            re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)
        ][2:]
        for tr in table.split("<tr>")[2:]
    }
    measured = lines[
        ("019e5a00-0000-7000-8000-00000000000a", USAGE_SOURCE_NAMES["provider_response"])
    ]
    assert measured[0] == "87" and "unknown" not in " ".join(measured)
    reported = lines[
        ("019e5a00-0000-7000-8000-00000000000b", USAGE_SOURCE_NAMES["participant_reported"])
    ]
    assert reported[0] == "87" and "the rest unknown" in reported[-1]  # some costs left out
    assert lines[("019e5a00-0000-7000-8000-00000000000c", "not recorded")][1:] == ["unknown"] * 4
