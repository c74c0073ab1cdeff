"""`view --results`: results files served beside the job folders (httpx against the real `view`
server on 127.0.0.1): their leaderboard tables with 95% intervals, trial ids linked to the trials
of the job folders, the files by their place in the list given and nothing past them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from tests.worker.viewer.support import (
    NOP_ID,
    ORACLE_ID,
    OUTSIDE_ID,
    Jobs,
    Server,
    cli,
    run_rows,
    start_view,
)

PUBLISHED_TRIAL = "citation-check__agentbeats__e2f505aa"


def get(server: Server, path: str) -> httpx.Response:
    return httpx.get(server.url + path, timeout=60)


def _table(html: str, query: str) -> str:
    return html.split(f'data-query="{query}"')[1].split("</table>")[0]


def test_the_leaderboard_tables_with_their_intervals(results_server: Server) -> None:
    page = get(results_server, "/leaderboard")
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    overall = _table(page.text, "overall")
    headings = re.findall(r"<th>([^<]*)</th>", overall)
    assert "95% CI of pass rate (%)" in headings and "Time per task (s, mean)" in headings
    rows = {
        agent: [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
        for agent, tr in re.findall(r'title="([^"]+)">.*?</td>(.*?)</tr>', overall, re.S)
    }
    # The oracle passed both tasks: 2/2, 100%, Wilson 34.2–100; nop none: 0/2, 0–65.8.
    assert rows[ORACLE_ID][:2] == ["2/2", "100.0"] and rows[ORACLE_ID][-1] == "34.2 – 100.0"
    assert rows[NOP_ID][:2] == ["0/2", "0.0"] and rows[NOP_ID][-1] == "0.0 – 65.8"
    assert "019e4ed1-d333-7133-807f-5f22c04d5eef" in rows  # the published file's agent
    for query in ("by_category", "by_difficulty"):
        assert "95% CI of pass rate (%)" in _table(page.text, query)


def test_trial_ids_link_to_the_trials_of_the_job_folders(
    jobs: Jobs, results_server: Server
) -> None:
    html = get(results_server, "/leaderboard").text
    tasks = html.split('data-table="tasks"')[1].split("</table>")[0]
    links = dict(
        (trial, href) for href, trial in re.findall(r'<a href="([^"]+)">([^<]+)</a>', tasks)
    )
    for name in ("oracle", "nop"):
        for trial in jobs.trial_ids(name):
            assert links[trial] == f"/trial/0/{jobs.runs[name]}/{trial}"
            page = get(results_server, links[trial])
            assert page.status_code == 200 and trial in page.text
    # A trial these job folders do not hold is shown, not linked.
    assert PUBLISHED_TRIAL in tasks and PUBLISHED_TRIAL not in links
    assert len(links) == 4


def test_each_row_of_the_tables_links_to_the_trials_behind_it(
    jobs: Jobs, results_server: Server
) -> None:
    """Issue #34: the tables "linked to the trials behind each cell": a row's "Tasks passed"
    opens the list of that agent's trials (in that category) the job folders hold; the
    published file's agent, whose trials are not there, is not linked."""
    html = get(results_server, "/leaderboard").text
    overall = _table(html, "overall")
    behind = {
        agent: href.replace("&amp;", "&")
        for agent, href in re.findall(
            r'title="([^"]+)">.*?<a class="behind" href="([^"]+)">', overall, re.S
        )
    }
    assert set(behind) == {ORACLE_ID, NOP_ID}, behind
    for agent, name in ((ORACLE_ID, "oracle"), (NOP_ID, "nop")):
        listed = get(results_server, behind[agent]).text
        shown = re.findall(r'<a href="/trial/0/[^/]+/([^"]+)" title=', listed)
        assert sorted(shown) == jobs.trial_ids(name), (agent, shown)
        assert "2 trial(s) of a leaderboard row" in listed
    by_category = _table(html, "by_category")
    hrefs = re.findall(r'<a class="behind" href="([^"]+)">', by_category)
    lists = [get(results_server, h.replace("&amp;", "&")).text for h in hrefs]
    counts = sorted(len(re.findall(r'<tr class="trial"', page)) for page in lists)
    assert counts and sum(counts) == 4 and all(n >= 1 for n in counts), counts


def test_hostile_values_of_a_results_file_stay_text(results_server: Server) -> None:
    html = get(results_server, "/leaderboard").text
    assert html.count("<script") == 1  # the viewer's own, with its nonce
    assert "alert('cat')" not in html
    assert "&lt;script&gt;alert(&#x27;cat&#x27;)&lt;/script&gt;" in html


def test_only_the_files_given_are_served(board: Path, results_server: Server) -> None:
    html = get(results_server, "/leaderboard").text
    listed = re.findall(r'<li><a href="/results/(\d+)">([^<]+)</a></li>', html)
    # The folder's *.json, not its text file, nor the symlink that leads out of it.
    assert [name for _, name in listed] == ["nop.json", "oracle.json", "published.json"]
    assert OUTSIDE_ID not in html
    for number, name in listed:
        served = get(results_server, f"/results/{number}")
        assert served.status_code == 200
        assert served.headers["content-type"].startswith("text/plain")
        assert served.headers["x-content-type-options"] == "nosniff"
        assert served.text == (board / name).read_text()
    for path in (
        "/results/3",
        "/results/-1",
        "/results/0/../../outside.json",
        "/results/..%2Foutside.json",
        "/results/" + str(board / "linked.json"),
        "/results/" + str(board / "notes.txt"),
    ):
        refused = get(results_server, path)
        assert refused.status_code == 404, path
        assert OUTSIDE_ID not in refused.text and "not a results file" not in refused.text


def test_without_results_files_the_page_says_how_to_give_them(server: Server) -> None:
    page = get(server, "/leaderboard")
    assert page.status_code == 200 and "--results" in page.text
    assert get(server, "/results/0").status_code == 404


def test_a_bad_results_argument_is_a_one_line_error(jobs: Jobs, tmp_path: Path) -> None:
    missing = cli("view", str(jobs.root), "--results", str(tmp_path / "missing.json"))
    assert missing.returncode != 0
    assert missing.stderr.strip().count("\n") == 0 and "Traceback" not in missing.stderr
    assert "results file not found" in missing.stderr
    empty = cli("view", str(jobs.root), "--results", str(tmp_path / "*.json"))
    assert empty.returncode != 0 and "no results files match" in empty.stderr
    labels = cli("view", str(jobs.root), "--labels", str(tmp_path / "labels.json"))
    assert labels.returncode != 0 and "give --results too" in labels.stderr


def test_a_results_file_that_cannot_be_read_is_named_on_the_page(
    jobs: Jobs, tmp_path: Path
) -> None:
    # Rows that name their agent by a URL only: `leaderboard query` refuses such a file too.
    bad = tmp_path / "by-url.json"
    envelope = {"status": "completed", "participants": {"agent": "http://127.0.0.1:8080/agent"}}
    bad.write_text(json.dumps({**envelope, "results": run_rows(jobs, "nop")}))
    started = start_view(str(jobs.root), "--results", str(bad))
    try:
        page = get(started, "/leaderboard")
        assert page.status_code == 200
        error = re.search(r"<p class=why>(.*?)</p>", page.text, re.S)
        assert error and "by-url.json" in error.group(1) and "--participant" in error.group(1)
        assert get(started, "/").status_code == 200  # the rest of the viewer is unaffected
    finally:
        started.proc.terminate()
        started.proc.wait(timeout=20)


async def test_a_row_of_many_trials_links_to_a_set_the_viewer_keeps(
    jobs: Jobs, board: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row of hundreds of trials would not fit a request line in ?trials=: past
    LINK_TRIALS_MAX characters the link names a set the viewer keeps (here from 11 on). The
    viewer's app in this process, so that the limit can be lowered."""
    import worker.viewer.index as index
    from skillsbench_agentbeats.view import _leaderboard
    from worker.viewer.web import create_app

    monkeypatch.setattr(index, "LINK_TRIALS_MAX", 10)
    app = create_app([jobs.root], leaderboard=_leaderboard((str(board),), None))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        html = (await client.get("/leaderboard")).text
        overall = _table(html, "overall")
        hrefs = [
            h.replace("&amp;", "&")
            for h in re.findall(r'<a class="behind" href="([^"]+)">', overall)
        ]
        assert hrefs and all(re.fullmatch(r"/trials\?set=[0-9a-f]{24}", h) for h in hrefs), hrefs
        shown = []
        for href in hrefs:
            listed = (await client.get(href)).text
            shown += re.findall(r'<a href="/trial/0/[^/]+/([^"]+)" title=', listed)
            assert "2 trial(s) of a leaderboard row" in listed
            # the filters form keeps the set: narrowing it by outcome stays within the row
            assert f'name="set" value="{href.rsplit("=", 1)[1]}"' in listed
        assert sorted(shown) == sorted(jobs.trial_ids("oracle") + jobs.trial_ids("nop"))
        # a set this viewer never made (it restarted since): nothing listed, and why
        stale = (await client.get("/trials?set=" + "0" * 24)).text
        assert '<tr class="trial"' not in stale and "since restarted" in stale
