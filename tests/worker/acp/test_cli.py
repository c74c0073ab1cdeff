"""``skillsbench-agentbeats agents [NAME]`` through the real dispatcher, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support import TEST_AGENTS

AGENTS_DIR = TEST_AGENTS


def cli(
    *args: str, agents_dir: Path | None = AGENTS_DIR, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_AGENTS_DIR")} | (env or {})
    if agents_dir is not None and "SKILLSBENCH_AGENTS_DIR" not in env:
        env["SKILLSBENCH_AGENTS_DIR"] = str(agents_dir)
    code = "import sys; from worker.acp.cli import agents; agents.main(sys.argv[1:], prog_name='agents')"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_lists_agents() -> None:
    done = cli()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "py-acp-agent"
    assert "Scripted ACP agent" in done.stdout


def test_shows_one_with_unknown_keys_reported(tmp_path: Path) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "manifest.toml").write_text(
        'contract_version = "1.0"\nname = "odd"\ninstall_cmd = ""\nlaunch_cmd = "odd --acp"\n'
        'requires_env = ["ODD_API_KEY"]\nlanch_cmd = "typo"\n'
    )
    done = cli("odd", agents_dir=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Launch: odd --acp" in done.stdout
    assert "Requires: ODD_API_KEY (NOT set)" in done.stdout
    assert "Unknown keys (ignored): lanch_cmd (did you mean launch_cmd?)" in done.stderr
    listed = cli(agents_dir=tmp_path)
    assert "(unknown keys: lanch_cmd (did you mean launch_cmd?))" in listed.stdout


def test_a_broken_manifest_is_listed_with_its_error_beside_the_others(tmp_path: Path) -> None:
    """Issue #32: one broken manifest made every manifest agent fail; now it spoils only itself
    and the listing shows it with its error (and exits 1, as ls does for a missing file)."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.toml").write_text(
        'contract_version = "1.0"\nname = "typo"\ninstall_cmd = ""\nlanch_cmd = "x"\n'
    )
    done = cli(agents_dir=None, env={"SKILLSBENCH_AGENTS_DIR": f"{AGENTS_DIR}:{tmp_path}"})
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[0] == "py-acp-agent"
    assert lines[1].split()[:2] == ["typo", "BROKEN:"]
    assert "launch_cmd: Field required (is the unknown key 'lanch_cmd' a misspelling" in lines[1]
    assert str(broken / "manifest.toml") in lines[1]
    assert done.stderr.strip() == "error: 1 manifest could not be loaded"
    both = {**os.environ, "SKILLSBENCH_AGENTS_DIR": f"{AGENTS_DIR}:{tmp_path}"}
    shown = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "agents", "typo"],
        capture_output=True, text=True, env=both, timeout=60,
    )  # fmt: skip
    assert shown.returncode == 2
    [line] = shown.stderr.splitlines()
    assert line.startswith("error: ") and "launch_cmd: Field required" in line
    assert cli("py-acp-agent", env=both).returncode == 0


def test_unknown_name_is_one_line_error_through_the_dispatcher() -> None:
    # Through the real dispatcher table, so a missing or wrong "agents" entry fails here.
    env = {**os.environ, "SKILLSBENCH_AGENTS_DIR": str(AGENTS_DIR)}
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "agents", "nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: unknown agent 'nope' (agents folders: {AGENTS_DIR})"
    ]
