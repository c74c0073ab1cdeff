"""The real CLIs from PyPI solve an example task through ``run --agent a2a:URL``.

Per CLI: ``purple agent-under-test`` (a process) serves the harness; the CLI runs in its own
mount namespace with the task's files at ``/root``, talks to the agent's model gateway in its own
protocol, and the gateway forwards through litellm to a local fake provider (``fake_models``)
whose scripted answers use the instruction's absolute paths. Checked: the task passes, only the
task's file comes back (no CLI state), the usage the agent reports equals what the provider
counted, the provider saw the real key (the CLI never did), and nothing of the CLI's state is
left in the agent's own home. The CLIs are installed once into a cache (``real_clis``); a CLI
that cannot be installed here is skipped with the reason.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.purple_agent.real_clis import install
from tests.purple_agent.support import IN_TOKENS, OUT_TOKENS, FakeProvider, serving, spawned
from tests.support import REPO_ROOT

KEY = "sk-test-real-cli-0123456789abcdef"
MODELS = {  # the provider each CLI's gateway protocol is forwarded to here
    "openhands": ("openai/fake-model", "/v1"),
    "codex": ("openai/fake-model", "/v1"),
    "terminus": ("openai/fake-model", "/v1"),
    "claude-code": ("anthropic/fake-model", ""),
}
STATE = {".codex", ".claude", ".claude.json", ".openhands", ".config", ".cache", ".local"}


def _events(jobs: Path, name: str) -> list[dict[str, Any]]:
    [path] = sorted(jobs.glob(f"runs/*/trials/*/**/{name}"))
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("harness", sorted(MODELS))
async def test_real_cli_solves_csv_sales_summary(harness: str, tmp_path: Path) -> None:
    bin_dir, why = await asyncio.to_thread(install, harness)
    if bin_dir is None:
        pytest.skip(why)
    host_file = Path("/root/summary.json")  # the instruction's path on this host: never written
    existed = host_file.exists()
    # the example task as shipped, with more agent time: a CLI's own start-up takes tens of
    # seconds on a loaded 2-core runner (openhands imports for ~30 s)
    tasks = tmp_path / "tasks"
    shutil.copytree(REPO_ROOT / "tasks" / "csv-sales-summary", tasks / "csv-sales-summary")
    toml = tasks / "csv-sales-summary" / "task.toml"
    toml.write_text(
        toml.read_text().replace("[agent]\ntimeout_sec = 180.0", "[agent]\ntimeout_sec = 900.0")
    )
    assert "timeout_sec = 900.0" in toml.read_text()
    provider = FakeProvider()
    model, suffix = MODELS[harness]
    purple_home = tmp_path / "purple-home"
    purple_home.mkdir()
    async with serving(lambda _url: provider.app()) as provider_url:
        env = {
            "SKILLSBENCH_AGENT_HARNESS": harness,
            "SKILLSBENCH_AGENT_MODEL": model,
            "SKILLSBENCH_AGENT_BASE_URL": provider_url + suffix,
            "SKILLSBENCH_AGENT_API_KEY": KEY,
            "HOME": str(purple_home),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        }
        with spawned("purple_agent.agent_under_test", env, tmp_path / "purple.log") as purple:
            code = "import sys; from skillsbench_agentbeats.cli import main; main(sys.argv[1:])"
            run = await asyncio.create_subprocess_exec(
                sys.executable, "-c", code, "run",
                "--tasks-dir", str(tasks), "--task-id", "csv-sales-summary",
                "--agent", f"a2a:{purple.url}", "--jobs-dir", str(tmp_path / "jobs"),
                "--concurrency", "1",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            out, _ = await run.communicate()
            log = purple.log()
    report = f"run:\n{out.decode(errors='replace')[-3000:]}\npurple:\n{log[-6000:]}"
    [result] = [
        json.loads(p.read_text())
        for p in sorted((tmp_path / "jobs").glob("runs/*/trials/*/result.json"))
    ]
    responses = [e for e in _events(tmp_path / "jobs", "a2a_trajectory.jsonl")
                 if e.get("type") == "a2a_response"]  # fmt: skip
    data = [d for e in responses for d in (e.get("data") or e.get("payload", {}).get("data") or [])]
    finish = [d for d in data if d.get("action") == "finish"]
    assert finish, report
    # only the task's file came back: no CLI logs, sessions or config
    assert [f["path"] for f in finish[-1]["files"]] == ["summary.json"], report
    assert (result["passed"], result["infra_failure_type"]) == (True, None), report
    usage = [d["usage"] for d in data if "usage" in d]
    assert usage == [
        {
            "model": model,
            "calls": provider.calls,
            "input_tokens": IN_TOKENS * provider.calls,
            "output_tokens": OUT_TOKENS * provider.calls,
            "cost_usd": None,
        }
    ], report
    assert provider.calls >= 2, report  # the shell command, then the answer
    assert all(KEY in k for k in provider.keys), "the provider did not get the configured key"
    assert not (STATE & {p.name for p in purple_home.iterdir()}), "CLI state left in the home"
    assert KEY not in log
    assert host_file.exists() == existed, "the CLI wrote the host's /root, not the task's"
