"""Manifests validated as BenchFlow's loader validates them (issue #24 item 3): contract major 1
in ``MAJOR.MINOR`` form, agents found recursively (the agents repository keeps them under
``acp/``), a duplicate name refused naming both files, and ``requires_env`` checked before a run
starts: ``run`` exits non-zero with one line and the worker API answers 400, with no trial
started."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support import make_task, run_cli, serve
from tests.worker.support import make_engine
from worker.acp.agent_manifest import AgentManifestError, discover, find, load_agent_manifest
from worker.core.failures import RetryPolicy
from worker.service.app import create_app

DIGEST = "sha256:" + "0" * 64


def _manifest(folder: Path, name: str, extra: str = "", version: str = "1.0") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.toml"
    path.write_text(
        f'contract_version = "{version}"\nname = "{name}"\ninstall_cmd = ""\n'
        f'launch_cmd = "true"\n{extra}\n'
    )
    return path


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.0.3"])
def test_contract_major_one_is_accepted(tmp_path: Path, version: str) -> None:
    manifest = load_agent_manifest(_manifest(tmp_path, "ok", version=version))
    assert manifest.contract_version == version


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        ("2.0", "declares contract major 2"),
        ("0.9", "declares contract major 0"),
        ("one", "must look like MAJOR.MINOR"),
        ("1", "must look like MAJOR.MINOR"),
        ("1.x", "must look like MAJOR.MINOR"),
    ],
)
def test_other_contract_versions_are_refused(tmp_path: Path, version: str, problem: str) -> None:
    path = _manifest(tmp_path, "bad", version=version)
    with pytest.raises(AgentManifestError, match=rf"manifest.toml: contract_version: .*{problem}"):
        load_agent_manifest(path)


def test_a_number_is_not_a_contract_version(tmp_path: Path) -> None:
    path = tmp_path / "manifest.toml"
    path.write_text('contract_version = 1.0\nname = "n"\ninstall_cmd = ""\nlaunch_cmd = "true"\n')
    with pytest.raises(AgentManifestError, match=r"must look like MAJOR\.MINOR"):
        load_agent_manifest(path)


def test_agents_are_found_at_any_depth_as_the_agents_repository_keeps_them(
    tmp_path: Path,
) -> None:
    root = tmp_path / "agents"
    _manifest(root / "acp" / "claude-like", "claude-like")
    _manifest(root / "ai-sdk" / "acp", "ai-sdk-acp", 'aliases = ["ai-sdk"]')
    _manifest(root / "flat", "flat")
    _manifest(root, "root-is-not-an-agent")
    _manifest(root / "acp" / "x" / "node_modules" / "dep", "vendored")
    _manifest(root / ".git" / "hidden", "in-git")
    agents = discover({"SKILLSBENCH_AGENTS_DIR": str(root)})
    assert set(agents) == {"claude-like", "ai-sdk-acp", "ai-sdk", "flat"}
    assert agents["claude-like"].path == root / "acp" / "claude-like" / "manifest.toml"


def test_a_duplicate_name_is_refused_naming_both_files(tmp_path: Path) -> None:
    root = tmp_path / "agents"
    first = _manifest(root / "acp" / "one", "same")
    second = _manifest(root / "other" / "two", "same")
    _manifest(root / "fine", "fine")
    env = {"SKILLSBENCH_AGENTS_DIR": str(root)}
    with pytest.raises(AgentManifestError) as raised:
        find("same", env)
    message = str(raised.value)
    assert "duplicate agent name 'same'" in message
    assert str(first) in message and str(second) in message
    assert set(discover(env)) == {"fine"}  # the clash spoils only its name


def test_an_alias_clashing_with_another_agent_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "agents"
    _manifest(root / "a", "alpha")
    _manifest(root / "b", "beta", 'aliases = ["alpha"]')
    env = {"SKILLSBENCH_AGENTS_DIR": str(root)}
    with pytest.raises(AgentManifestError, match="duplicate agent name 'alpha'"):
        find("alpha", env)
    assert find("beta", env).path == root / "b" / "manifest.toml"


def test_a_broken_manifest_spoils_only_itself(tmp_path: Path) -> None:
    """Issue #32: one broken manifest.toml made every manifest agent fail to resolve."""
    root = tmp_path / "agents"
    good = _manifest(root / "acp" / "good", "good")
    (root / "acp" / "torn").mkdir(parents=True)
    (root / "acp" / "torn" / "manifest.toml").write_text('name = "torn"\ninstall_cmd = [\n')
    _manifest(root / "acp" / "old", "old", version="2.0")
    env = {"SKILLSBENCH_AGENTS_DIR": str(root)}
    assert set(discover(env)) == {"good"}
    assert find("good", env).path == good
    with pytest.raises(AgentManifestError, match=r"old/manifest.toml: contract_version: .*major 2"):
        find("old", env)  # its name is read, so asking for it gives its error
    with pytest.raises(AgentManifestError, match="2 manifests could not be loaded"):
        find("torn", env)  # invalid TOML: no name to read


def test_a_broken_override_is_an_error_not_a_silent_fallback(tmp_path: Path) -> None:
    _manifest(tmp_path / "mine" / "x", "x", version="9.0")
    _manifest(tmp_path / "theirs" / "x", "x")
    env = {
        "SKILLSBENCH_AGENTS_DIR": str(tmp_path / "mine"),
        "BENCHFLOW_AGENTS_DIR": str(tmp_path / "theirs"),
    }
    with pytest.raises(AgentManifestError, match="declares contract major 9"):
        find("x", env)


def test_a_missing_agents_folder_spoils_only_itself(tmp_path: Path) -> None:
    mine = _manifest(tmp_path / "mine" / "x", "x")
    env = {"SKILLSBENCH_AGENTS_DIR": f"{tmp_path / 'gone'}:{tmp_path / 'mine'}"}
    assert find("x", env).path == mine
    with pytest.raises(AgentManifestError, match="1 manifest could not be loaded"):
        find("y", env)


def test_a_misspelled_required_key_is_named(tmp_path: Path) -> None:
    """Issue #32: ``lanch_cmd`` gave only ``launch_cmd: Field required``."""
    path = tmp_path / "manifest.toml"
    path.write_text(
        'contract_version = "1.0"\nname = "t"\ninstall_cmd = ""\nlanch_cmd = "go"\nfoo = 1\n'
    )
    with pytest.raises(AgentManifestError) as raised:
        load_agent_manifest(path)
    assert str(raised.value) == (
        f"{path}: launch_cmd: Field required (is the unknown key 'lanch_cmd' a misspelling of "
        "it?); unknown keys: lanch_cmd (did you mean launch_cmd?), foo"
    )


def test_an_earlier_agents_dir_overrides_a_later_one(tmp_path: Path) -> None:
    mine = _manifest(tmp_path / "mine" / "x", "x")
    _manifest(tmp_path / "theirs" / "x", "x")
    env = {
        "SKILLSBENCH_AGENTS_DIR": str(tmp_path / "mine"),
        "BENCHFLOW_AGENTS_DIR": str(tmp_path / "theirs"),
    }
    assert find("x", env).path == mine


@pytest.fixture
def needy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An agent that needs NEEDY_API_KEY, and a task to run it on."""
    _manifest(tmp_path / "agents" / "acp" / "needy", "needy", 'requires_env = ["NEEDY_API_KEY"]')
    monkeypatch.setenv("SKILLSBENCH_AGENTS_DIR", str(tmp_path / "agents"))
    monkeypatch.delenv("BENCHFLOW_AGENTS_DIR", raising=False)
    monkeypatch.delenv("NEEDY_API_KEY", raising=False)
    make_task(tmp_path / "tasks", "answer-42")
    return tmp_path


def _trials(jobs: Path) -> list[Path]:
    return list(jobs.glob("runs/*/trials/*")) if jobs.exists() else []


def test_run_refuses_unset_requires_env_before_any_trial(
    needy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = needy / "jobs"
    args = ["run", "--tasks-dir", needy / "tasks", "--task-id", "answer-42", "--agent", "needy"]
    result = run_cli(capsys, *args, "--jobs-dir", jobs)
    assert result.returncode != 0
    assert result.stderr.strip() == "error: agent 'needy' needs NEEDY_API_KEY set"
    assert not _trials(jobs)


async def test_worker_api_refuses_unset_requires_env_with_400(needy: Path) -> None:
    jobs = needy / "jobs"
    engine = make_engine(jobs, needy / "tasks", concurrency=1, retry=RetryPolicy())
    body = {
        "config": {"task_set": "t", "condition": "with_skills"},
        "task_set": "t",
        "task_set_digest": DIGEST,
        "tasks": [{"task_id": "answer-42", "category": "testing", "difficulty": "easy"}],
        "agent": "needy",
    }
    async with serve(create_app(engine)) as url, httpx.AsyncClient(base_url=url) as http:
        refused = await http.post("/runs", json=body)
        assert refused.status_code == 400
        assert refused.json() == {
            "error": "invalid_request",
            "field": "agent",
            "detail": "agent: agent 'needy' needs NEEDY_API_KEY set",
        }
        # Given through the run's agent env, the same run is accepted.
        body["usage"] = {"agent_env": {"NEEDY_API_KEY": "k"}}
        accepted = await http.post("/runs", json=body)
        assert accepted.status_code == 201, accepted.text
        await http.post(f"/runs/{accepted.json()['run_id']}/cancel")
    assert len(list(jobs.glob("runs/*"))) == 1  # only the accepted run
