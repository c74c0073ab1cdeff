"""Finding and reading trials: ``run`` says where its folder is; ``trials list`` lists runs and
trials newest first; ``trials show`` takes an id, prefix, suffix or task and shows each action's
exit code and output and the verifier's output; ``trials view`` writes one self-contained HTML
transcript with every hostile string escaped, rendered by headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.worker.support import make_task

HOSTILE = "</pre><script>alert('owned')</script><img src=x onerror=alert(1)>&amp;"
HOSTILE_SCRIPT = "exit 3\n"  # writes no answer: the trial fails
# The verifier prints hostile text too (what a task's tests print is not trusted either).
VERIFIER = f"""\
#!/bin/sh
printf '%s\\n' "{HOSTILE}"
echo "second line of output"
if [ "$(cat /root/answer.txt 2>/dev/null)" = "42" ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Two runs in one jobs dir: the oracle (passes), then a hostile script agent (exit 3, no
    answer: fails)."""
    root = tmp_path_factory.mktemp("trials")
    tasks = root / "tasks"
    tasks.mkdir()
    make_task(
        tasks,
        "answer-42",
        instruction=f"Write 42 to /root/answer.txt. {HOSTILE}",
        test_sh=VERIFIER,
    )
    script = root / "hostile.sh"
    script.write_text(HOSTILE_SCRIPT)
    outputs = {}
    for agent in ("oracle", f"script:{script}"):
        done = cli(
            "run", "--tasks-dir", str(tasks), "--task-id", "answer-42", "--agent", agent,
            "--jobs-dir", str(root / "jobs"),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        outputs[agent.split(":")[0]] = done.stdout
    return root / "jobs", outputs


def _trial_ids(jobs_dir: Path) -> list[str]:
    return sorted(p.name for p in (jobs_dir / "runs").glob("*/trials/*"))


def test_run_prints_its_folder_and_the_next_command(jobs: tuple[Path, dict[str, str]]) -> None:
    jobs_dir, outputs = jobs
    match = re.search(r"Run folder: (\S+)", outputs["oracle"])
    assert match, outputs["oracle"]
    folder = Path(match.group(1))
    assert (folder / "run.json").is_file() and len(list((folder / "trials").iterdir())) == 1
    assert f"trials show TRIAL_ID_OR_TASK --jobs-dir {jobs_dir}" in outputs["oracle"]


def test_list_shows_runs_and_trials_newest_first(jobs: tuple[Path, dict[str, str]]) -> None:
    jobs_dir, _ = jobs
    listed = cli("trials", "list", str(jobs_dir))
    assert listed.returncode == 0, listed.stderr
    out = listed.stdout
    assert out.startswith(f"2 run(s) under {jobs_dir}")
    script_at, oracle_at = out.index("agent script:"), out.index("agent oracle")
    assert script_at < oracle_at  # newest first
    rows = [line.split() for line in out.splitlines() if "__agentbeats__" in line]
    assert [(r[1], r[2], r[3], r[4]) for r in rows] == [
        ("answer-42", "0.0", "no", "-"),
        ("answer-42", "100.0", "yes", "-"),
    ]
    assert "reward (%)" in out  # the report's unit
    assert sorted(r[0] for r in rows) == _trial_ids(jobs_dir)


def test_show_finds_a_trial_by_id_prefix_suffix_or_task(
    jobs: tuple[Path, dict[str, str]],
) -> None:
    jobs_dir, _ = jobs
    listed = cli("trials", "list", str(jobs_dir)).stdout
    newest = next(line.split()[0] for line in listed.splitlines() if "__agentbeats__" in line)
    suffix = newest.rsplit("__", 1)[1]
    for name in (newest, suffix, suffix[:6], "answer-42"):
        shown = cli("trials", "show", name, "--jobs-dir", str(jobs_dir))
        assert shown.returncode == 0, (name, shown.stderr)
        assert f"Trial:     {newest} " in shown.stdout
    out = shown.stdout
    # the action, its exit code and the tail of its output
    assert "[failed] sh hostile.sh (exit 3)" in out
    # the verifier's output and where the trial lives
    assert "Verifier:  test-stdout.txt" in out and "| second line of output" in out
    assert f"Folder:    {jobs_dir}/runs/" in out
    ambiguous = cli("trials", "show", "answer", "--jobs-dir", str(jobs_dir))
    assert ambiguous.returncode != 0
    assert "fits 2 trials" in ambiguous.stderr and ambiguous.stderr.count("\n") == 1
    missing = cli("trials", "show", "no-such-trial", "--jobs-dir", str(jobs_dir))
    assert missing.returncode != 0 and "no trial 'no-such-trial'" in missing.stderr
    assert "Traceback" not in missing.stderr + ambiguous.stderr


def test_view_writes_an_escaped_self_contained_transcript(
    jobs: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    jobs_dir, _ = jobs
    page = tmp_path / "view.html"
    done = cli("trials", "view", "answer-42", "--jobs-dir", str(jobs_dir), "-o", str(page))
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>")
    # nothing the agent or the task wrote became markup
    assert "<script" not in html and "<img" not in html and "onerror=alert(1)>" not in html
    assert "&lt;/pre&gt;&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in html
    assert "&amp;amp;" in html  # even an entity is shown as written
    for forbidden in ("<link", "@import", "url(", "http://", "https://"):
        assert forbidden not in html
    for heading in (
        "Instruction",
        "Turns and actions (1 action(s))",
        "Model calls and usage",
        "Agent logs",
        "Verifier output",
        "Reward",
    ):
        assert f"<h2>{heading}</h2>" in html
    assert "exit 3" in html and "second line of output" in html
    # the instruction once (not again as the first user message); each action's timing
    assert html.count("Write 42 to /root/answer.txt.") == 1
    assert re.search(r"exit 3 · \d+\.\d\ds · at \+\d+\.\ds", html), html


def test_view_creates_no_folder_outside_the_current_one(
    jobs: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Issue #32: ``trials view -o /nonexistent-dir/t.html`` made /nonexistent-dir. A missing
    folder outside the current one is one error line now; inside it, it is made as named."""
    jobs_dir, _ = jobs
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    page = elsewhere / "nonexistent-dir" / "t.html"
    done = cli(
        "trials", "view", "answer-42", "--jobs-dir", str(jobs_dir), "-o", str(page), cwd=here
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"error: --output: folder {page.parent} does not exist (create it first: missing "
        "folders are made only inside the current folder)"
    ]
    assert not page.parent.exists()
    made = cli(
        "trials", "view", "answer-42", "--jobs-dir", str(jobs_dir), "-o", "out/t.html", cwd=here
    )
    assert made.returncode == 0, made.stderr
    assert (here / "out" / "t.html").read_text().startswith("<!DOCTYPE html>")


def test_chromium_renders_the_transcript(jobs: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("headless Chromium is not installed (Debian package `chromium`)")
    jobs_dir, _ = jobs
    page = tmp_path / "view.html"
    assert (
        cli("trials", "view", "answer-42", "--jobs-dir", str(jobs_dir), "-o", str(page)).returncode
        == 0
    )
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-extensions",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = dom.stdout
    # the browser shows the hostile text as text: no element came from it
    assert "<script>alert" not in text and "<img" not in text
    assert "&lt;/pre&gt;&lt;script&gt;alert('owned')&lt;/script&gt;" in text
    assert "second line of output" in text and "Verifier output" in text
