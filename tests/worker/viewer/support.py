"""Helpers of the viewer tests: job folders made by real trials (the `run` command: oracle, nop and a hostile script agent on
a hostile task, in the local sandbox), a copy of them made to look like a run going on, and the
`view` command serving them as a real uvicorn subprocess on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.runs.store import read_run_document

REPO = Path(__file__).resolve().parents[3]
HOSTILE = "</pre><script>alert('owned')</script><img src=x onerror=alert(1)>&amp;"
SECRET = "viewer-secret-outside-the-jobs-folder"
EXAMPLES = ("csv-sales-summary", "grid-path-count")
# The agents of the results files served beside the job folders (view --results).
ORACLE_ID = "019e5a00-0000-7000-8000-0000000000a1"
NOP_ID = "019e5a00-0000-7000-8000-0000000000b2"
OUTSIDE_ID = "019e5a00-0000-7000-8000-0000000000c3"
HOSTILE_CATEGORY = "<script>alert('cat')</script>"

# The script agent's file name is hostile too: it is the run's agent spec, shown everywhere.
SCRIPT_NAME = "<img src=x onerror=alert(2)>.sh"
SCRIPT = f"printf '%s\\n' \"{HOSTILE}\"\nexit 3\n"
VERIFIER = f"""\
#!/bin/sh
printf '%s\\n' "{HOSTILE}"
echo "second line of output"
if [ "$(cat /root/answer.txt 2>/dev/null)" = "42" ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )


def hostile_task(root: Path) -> None:
    folder = root / "answer-42"
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    (folder / "task.toml").write_text(
        'version = "1.0"\n[metadata]\ncategory = "testing"\ndifficulty = "easy"\n'
        'tags = ["viewer"]\n[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n'
        "[environment]\nallow_internet = false\n"
    )
    (folder / "instruction.md").write_text(f"Write 42 to /root/answer.txt. {HOSTILE}\n")
    (folder / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /root\n")
    (folder / "tests" / "test.sh").write_text(VERIFIER)
    (folder / "solution" / "solve.sh").write_text("#!/bin/sh\necho 42 > /root/answer.txt\n")
    os.chmod(folder / "tests" / "test.sh", 0o755)
    os.chmod(folder / "solution" / "solve.sh", 0o755)


@dataclass
class Jobs:
    root: Path  # the jobs folder
    runs: dict[str, str]  # agent name (oracle, nop, script, oracle-hostile) -> run id

    def run_dir(self, name: str) -> Path:
        return self.root / "runs" / self.runs[name]

    def trial_ids(self, name: str) -> list[str]:
        return sorted(p.name for p in (self.run_dir(name) / "trials").iterdir())


def run_rows(jobs: Jobs, name: str) -> list[dict[str, Any]]:
    """The public rows of one of the runs, from its run document."""
    document = json.loads((jobs.run_dir(name) / "run.json").read_text())
    rows = [trial["row"] for trial in document["trials"].values()]
    assert rows and all(rows)
    return rows


def write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)


class LiveRun:
    """A run made to go on while a page is open, from a finished run's folders: its document is
    rewritten step by step and its trial folders copied in, as the worker writes them."""

    def __init__(self, jobs: Jobs, source: str, run_id: str) -> None:
        self.jobs = jobs
        self.run_id = run_id
        self.source = jobs.run_dir(source)
        self.final = json.loads((self.source / "run.json").read_text())
        self.folder = jobs.root / "runs" / run_id
        (self.folder / "trials").mkdir(parents=True)
        self.doc = json.loads(json.dumps(self.final))
        self.doc.update(run_id=run_id, status="running", journal_seq=0)
        for trial in self.doc["trials"].values():
            trial.update(state="queued", attempts=[], row=None, failure=None, result_path=None)
        self.save()

    @property
    def keys(self) -> list[str]:
        return list(self.final["trials"])

    def save(self) -> None:
        write_json(self.folder / "run.json", self.doc)

    def _attempt(self, key: str) -> dict[str, Any]:
        attempt = dict(self.final["trials"][key]["attempts"][-1])
        attempt["trial_dir"] = f"runs/{self.run_id}/trials/{attempt['trial_id']}"
        return attempt

    def start(self, key: str) -> str:
        """The trial begins: its folder holds the instruction and the trajectory so far."""
        attempt = self._attempt(key)
        attempt.update(outcome="running", finished_at=None)
        src = self.source / "trials" / attempt["trial_id"]
        dst = self.folder / "trials" / attempt["trial_id"]
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("result.json", "verifier"))
        self.doc["trials"][key].update(state="running", attempts=[attempt])
        self.save()
        return str(attempt["trial_id"])

    def finish(self, key: str) -> None:
        attempt = self._attempt(key)
        src = self.source / "trials" / attempt["trial_id"]
        shutil.copytree(src, self.folder / "trials" / attempt["trial_id"], dirs_exist_ok=True)
        record = dict(self.final["trials"][key])
        record["attempts"] = [attempt]
        self.doc["trials"][key] = record
        if all(t["state"] == "finished" for t in self.doc["trials"].values()):
            self.doc["status"] = "completed"
        self.save()


def copy_run(jobs: Jobs, name: str, dest: Path) -> tuple[Path, dict[str, Any]]:
    """A copy of run ``name`` as ``dest/<its run id>`` (its journal folded in) and its
    document, to edit and save with :func:`write_json` (``journal_seq`` 0: no journal)."""
    folder = dest / jobs.runs[name]
    shutil.copytree(jobs.run_dir(name), folder, symlinks=True)
    (folder / "journal.jsonl").unlink(missing_ok=True)
    doc = read_run_document(jobs.run_dir(name))
    doc["journal_seq"] = 0
    write_json(folder / "run.json", doc)
    return folder, doc


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[str]


def start_view(*args: str, poll: str = "0.2", cwd: Path = REPO) -> Server:
    """`skillsbench-agentbeats view ARGS --port 0` as a subprocess; its URL once it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillsbench_agentbeats", "view", *args, "--port", "0",
         "--poll", poll],
        cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    seen = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], deadline - time.monotonic())
        if not ready:
            break
        line = proc.stderr.readline()
        if not line:
            break
        seen += line
        match = re.search(r"viewer at (http://\S+?)/? over", line)
        if match:
            return Server(match.group(1), proc)
    proc.kill()
    raise AssertionError(f"the viewer did not start: {seen}")


def stop_view(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()
