"""GHCR preflight against a fake GitHub API on loopback that sends real X-OAuth-Scopes headers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support import CliResult, run_cli, serve_in_thread

FULL = "ghp_FULLSCOPEtoken0123456789"
READ_ONLY = "ghp_READONLYtoken0123456789"
FINE_GRAINED = "github_pat_FINEGRAINED0123456789"
# token -> X-OAuth-Scopes header (None: header absent, as for fine-grained tokens)
TOKENS: dict[str, str | None] = {
    FULL: "read:packages, repo, write:packages",
    READ_ONLY: "read:packages, repo",
    FINE_GRAINED: None,
}


async def user(request: Request) -> JSONResponse:
    auth = request.headers.get("Authorization", "")
    token = auth.removeprefix("token ").removeprefix("Bearer ")
    if token not in TOKENS:
        # GitHub does not echo tokens, but a hostile proxy might: we must not print bodies.
        return JSONResponse({"message": f"Bad credentials {token}"}, status_code=401)
    scopes = TOKENS[token]
    headers = {"X-OAuth-Scopes": scopes} if scopes is not None else {}
    return JSONResponse({"login": "octo-operator"}, headers=headers)


@pytest.fixture(scope="module")
def github_api() -> Iterator[str]:
    with serve_in_thread(Starlette(routes=[Route("/user", user)])) as url:
        yield url


@pytest.fixture
def run(
    github_api: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliResult]:
    """The CLI in-process with a controlled environment (``env`` entries are set, tokens cleared)."""

    def invoke(*args: str, env: dict[str, str] | None = None) -> CliResult:
        monkeypatch.delenv("GH_TOKEN", raising=False)
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
        monkeypatch.setenv("SKILLSBENCH_GITHUB_API_URL", github_api)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        return run_cli(capsys, "ghcr-preflight", *args)

    return invoke


def assert_token_hidden(done: CliResult, token: str) -> None:
    assert token not in done.stdout and token not in done.stderr


def test_both_package_scopes_pass(run: Callable[..., CliResult]) -> None:
    done = run("--token-from-env", env={"GH_TOKEN": FULL})
    assert done.returncode == 0, done.stderr
    assert "octo-operator" in done.stdout
    assert_token_hidden(done, FULL)


def test_github_token_is_the_fallback(run: Callable[..., CliResult]) -> None:
    done = run("--token-from-env", env={"GITHUB_TOKEN": FULL})
    assert done.returncode == 0, done.stderr


def test_missing_write_scope_fails(run: Callable[..., CliResult]) -> None:
    done = run("--token-from-env", env={"GH_TOKEN": READ_ONLY})
    assert done.returncode == 1
    assert "lacks write:packages" in done.stderr
    assert_token_hidden(done, READ_ONLY)


def test_fine_grained_token_has_no_scope_header(run: Callable[..., CliResult]) -> None:
    done = run("--token-from-env", env={"GH_TOKEN": FINE_GRAINED})
    assert done.returncode == 2
    assert "X-OAuth-Scopes" in done.stderr and "Traceback" not in done.stderr
    assert_token_hidden(done, FINE_GRAINED)


def test_rejected_token_is_not_printed(run: Callable[..., CliResult]) -> None:
    bad = "ghp_REJECTEDtoken0123456789"
    done = run("--token-from-env", env={"GH_TOKEN": bad})
    assert done.returncode == 2
    assert "rejected the token (HTTP 401)" in done.stderr
    assert_token_hidden(done, bad)


def test_no_token_in_env(run: Callable[..., CliResult]) -> None:
    done = run("--token-from-env")
    assert done.returncode == 2
    assert "GH_TOKEN" in done.stderr


def _fake_gh(tmp_path: Path, token: str, exit_code: int = 0) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(
        f'#!/bin/sh\n[ "$1 $2" = "auth token" ] || exit 3\necho "{token}"\nexit {exit_code}\n'
    )
    gh.chmod(0o755)
    return str(bin_dir)


def test_default_source_is_gh_auth_token(run: Callable[..., CliResult], tmp_path: Path) -> None:
    done = run(env={"PATH": _fake_gh(tmp_path, FULL)})
    assert done.returncode == 0, done.stderr
    assert "gh auth token" in done.stdout
    assert_token_hidden(done, FULL)


def test_gh_without_login_fails(run: Callable[..., CliResult], tmp_path: Path) -> None:
    done = run(env={"PATH": _fake_gh(tmp_path, "", exit_code=1)})
    assert done.returncode == 2
    assert "gh auth login" in done.stderr


def test_gh_not_installed(run: Callable[..., CliResult], tmp_path: Path) -> None:
    done = run(env={"PATH": str(tmp_path)})
    assert done.returncode == 2
    assert "--token-from-env" in done.stderr


def test_real_entry_point_never_prints_the_token(github_api: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
    env |= {"SKILLSBENCH_GITHUB_API_URL": github_api, "GITHUB_TOKEN": READ_ONLY}
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "ghcr-preflight", "--token-from-env"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "lacks write:packages" in done.stderr
    assert READ_ONLY not in done.stdout + done.stderr
