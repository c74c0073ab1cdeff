"""The web viewer against folders an attacker shaped (httpx against the real `view` server on
127.0.0.1): a run folder given alone whose document names a folder beside it, a request whose
Host is another site's name (DNS rebinding), trial records that are malformed or nested too
deeply, a results file nested too deeply. Each is refused or shown as a one-line note, never
served from outside the folders given and never a server error."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.worker.viewer.support import (
    HOSTILE,
    SECRET,
    Jobs,
    Server,
    copy_run,
    start_view,
    stop_view,
    write_json,
)

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def serving() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        stop_view(server)


def test_a_run_folder_given_alone_serves_only_its_own_trials(
    jobs: Jobs, tmp_path: Path, serving: list[Server]
) -> None:
    """`view JOBS/runs/RUN`: trial paths are relative to the run's jobs folder (JOBS), but a
    document naming JOBS/secrets as a trial folder must not make the viewer serve it."""
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "id_rsa").write_text(SECRET)
    (tmp_path / "runs").mkdir()
    folder, doc = copy_run(jobs, "nop", tmp_path / "runs")
    first, second = list(doc["trials"].values())[:2]
    moved = first["attempts"][-1]
    moved["trial_dir"] = "secrets"
    write_json(folder / "run.json", doc)
    server = start_view(str(folder))
    serving.append(server)
    run_id = doc["run_id"]
    kept = second["attempts"][-1]["trial_id"]
    assert httpx.get(f"{server.url}/trial/0/{run_id}/{kept}", timeout=30).status_code == 200
    for path in (
        f"/raw/0/{run_id}/{moved['trial_id']}/id_rsa",
        f"/trial/0/{run_id}/{moved['trial_id']}",
    ):
        refused = httpx.get(server.url + path, timeout=30)
        assert refused.status_code == 404, path
        assert SECRET not in refused.text
    listed = httpx.get(f"{server.url}/trials", params={"run": run_id}, timeout=30).text
    assert moved["trial_id"] not in listed and kept in listed


def test_run_documents_linking_out_of_their_folder_are_passed_over(
    jobs: Jobs, tmp_path: Path, serving: list[Server]
) -> None:
    """A run folder inside the jobs folder whose run.json (or journal) is a link to a run
    document elsewhere: that document is not read, its run not listed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    runs = tmp_path / "jobs" / "runs"
    runs.mkdir(parents=True)
    folder, doc = copy_run(jobs, "nop", outside)
    doc["agent"] = SECRET
    write_json(folder / "run.json", doc)
    linked = runs / doc["run_id"]
    shutil.copytree(folder, linked, symlinks=True)
    (linked / "run.json").unlink()
    (linked / "run.json").symlink_to(folder / "run.json")
    kept, kept_doc = copy_run(jobs, "oracle", runs)
    (kept / "journal.jsonl").symlink_to(outside / "journal.jsonl")  # dangling, outside
    _, plain_doc = copy_run(jobs, "script", runs)
    server = start_view(str(tmp_path / "jobs"))
    serving.append(server)
    home = httpx.get(server.url + "/", timeout=30).text
    assert SECRET not in home and f'data-run="{doc["run_id"]}"' not in home
    assert f'data-run="{kept_doc["run_id"]}"' not in home
    assert f'data-run="{plain_doc["run_id"]}"' in home
    alone = start_view(str(linked))
    serving.append(alone)
    assert SECRET not in httpx.get(alone.url + "/", timeout=30).text


def test_a_host_that_is_not_loopback_is_refused(server: Server) -> None:
    """A page of another site whose name was pointed at 127.0.0.1 sends its own name as the
    Host: refused, so it cannot read the trials; loopback names are served."""
    port = server.url.rsplit(":", 1)[1]
    for path in ("/", "/trials", "/events", "/raw/0/x/y/z"):
        refused = httpx.get(
            server.url + path, headers={"Host": f"attacker.example:{port}"}, timeout=30
        )
        assert refused.status_code == 421, path
        assert "trial" not in refused.text.split(":")[0]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
        assert httpx.get(server.url + "/", headers={"Host": host}, timeout=30).status_code == 200


def test_malformed_trial_records_are_shown_with_a_note(
    jobs: Jobs, tmp_path: Path, serving: list[Server]
) -> None:
    """A result.json that is not JSON, not an object, not the model (with hostile values), a
    torn or too deeply nested trajectory line, a timing.json that is not JSON: the page says
    which file it could not read (escaped) and shows the rest."""
    runs = tmp_path / "jobs" / "runs"
    runs.mkdir(parents=True)
    folder, doc = copy_run(jobs, "oracle", runs)
    folder2, doc2 = copy_run(jobs, "nop", runs)
    ids = [a["attempts"][-1]["trial_id"] for a in doc["trials"].values()]
    ids2 = [a["attempts"][-1]["trial_id"] for a in doc2["trials"].values()]
    breaks = {
        (folder, ids[0]): ("result.json", "{not json", "not valid JSON"),
        (folder, ids[1]): ("result.json", "[1, 2]", "no readable result.json"),
        (folder2, ids2[0]): (
            "result.json",
            json.dumps({"trial_id": 5, "reward": HOSTILE, "agent_result": "x"}),
            "validation error",
        ),
        (folder2, ids2[1]): (
            "trajectory/acp_trajectory.jsonl",
            '{"type": "agent_message", "text": "kept"}\n{torn\n' + DEEP + "\n",
            "not a JSON line",
        ),
    }
    for (run, trial), (name, text, _) in breaks.items():
        (run / "trials" / trial / name).write_text(text)
    (folder / "trials" / ids[0] / "timing.json").write_text(DEEP)
    server = start_view(str(tmp_path / "jobs"))
    serving.append(server)
    for (run, trial), (_, _, note) in breaks.items():
        page = httpx.get(f"{server.url}/trial/0/{run.name}/{trial}", timeout=30)
        assert page.status_code == 200, (trial, page.text)
        assert "Not read:" in page.text and note in page.text, trial
        assert page.text.count("<script") == 1 and "<img" not in page.text
        assert "Instruction" in page.text and "Files of the trial folder" in page.text
    first = httpx.get(f"{server.url}/trial/0/{folder.name}/{ids[0]}", timeout=30).text
    assert "timing.json: not valid JSON" in first
    torn = httpx.get(f"{server.url}/trial/0/{folder2.name}/{ids2[1]}", timeout=30).text
    assert "kept" in torn  # the lines before the torn one are shown


def test_a_results_file_nested_too_deeply_is_one_line(
    jobs: Jobs, tmp_path: Path, serving: list[Server]
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "deep.json").write_text('{"results": ' + DEEP + "}")
    server = start_view(str(jobs.root), "--results", str(results))
    serving.append(server)
    page = httpx.get(server.url + "/leaderboard", timeout=60)
    assert page.status_code == 200
    assert "deep.json: not a results file: JSON nested too deeply to read" in page.text


def test_a_huge_file_is_served_cut_with_a_note(
    jobs: Jobs, tmp_path: Path, serving: list[Server]
) -> None:
    """An agent log of 3 MB: its page shows the first 20,000 characters and links the file,
    which is served cut at 2 MB, saying so (not silently shorter)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    folder, doc = copy_run(jobs, "nop", runs)
    trial = next(iter(doc["trials"].values()))["attempts"][-1]["trial_id"]
    (folder / "trials" / trial / "agent" / "huge.txt").write_text("A" * 3_000_000)
    server = start_view(str(tmp_path))
    serving.append(server)
    page = httpx.get(f"{server.url}/trial/0/{folder.name}/{trial}", timeout=30)
    assert page.status_code == 200 and len(page.text) < 500_000
    assert "more characters not shown" in page.text
    assert f'/raw/0/{folder.name}/{trial}/agent/huge.txt">the whole file' in page.text
    raw = httpx.get(f"{server.url}/raw/0/{folder.name}/{trial}/agent/huge.txt", timeout=30)
    assert raw.status_code == 200 and raw.text.startswith("A" * 1000)
    assert raw.text.endswith("[cut: the first 2,000,000 bytes of 3,000,000 are shown]\n")


def test_a_run_whose_document_is_unreadable_is_named_on_the_runs_page(
    jobs: Jobs, tmp_path: Path, serving: list[Server]
) -> None:
    """Not listed (it has no run to show), but named with why, and escaped; the other runs
    stay."""
    runs = tmp_path / "jobs" / "runs"
    runs.mkdir(parents=True)
    _, good = copy_run(jobs, "oracle", runs)
    broken = runs / "run-broken"
    broken.mkdir()
    (broken / "run.json").write_text("{not json " + HOSTILE)
    wrong = runs / "run-wrong-shape"
    wrong.mkdir()
    write_json(wrong / "run.json", {"run_id": HOSTILE})
    server = start_view(str(tmp_path / "jobs"))
    serving.append(server)
    home = httpx.get(server.url + "/", timeout=30).text
    assert f'data-run="{good["run_id"]}"' in home
    assert "Not read: 2 run folder(s)" in home
    assert "<code>run-broken</code>" in home and "<code>run-wrong-shape</code>" in home
    assert HOSTILE not in home  # escaped
