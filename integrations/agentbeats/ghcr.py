"""GHCR preflight: does this GitHub token carry ``read:packages`` and ``write:packages``?

GitHub reports a classic token's scopes in the ``X-OAuth-Scopes`` header of any API response;
checking it before a long image build beats a failed push at the end. The token is never
printed: messages name where it came from, not what it is.
"""

from __future__ import annotations

import os
import subprocess

import httpx
from pydantic import BaseModel

GITHUB_API_URL_ENV = "SKILLSBENCH_GITHUB_API_URL"
DEFAULT_GITHUB_API_URL = "https://api.github.com"
REQUIRED_SCOPES: tuple[str, ...] = ("read:packages", "write:packages")
TOKEN_ENV_VARS: tuple[str, ...] = ("GH_TOKEN", "GITHUB_TOKEN")


class PreflightResult(BaseModel):
    login: str | None
    scopes: list[str]
    missing: list[str]

    @property
    def ok(self) -> bool:
        return not self.missing


def token_from_gh(gh: str = "gh") -> str:
    """The GitHub CLI's active token (``gh auth token``)."""
    try:
        done = subprocess.run(
            [gh, "auth", "token"], capture_output=True, text=True, timeout=30, check=False
        )
    except FileNotFoundError as exc:
        raise ValueError("the GitHub CLI `gh` is not installed; use --token-from-env") from exc
    except subprocess.TimeoutExpired as exc:
        raise ValueError("`gh auth token` did not answer within 30 s") from exc
    token = done.stdout.strip()
    if done.returncode != 0 or not token:
        raise ValueError(
            f"`gh auth token` gave no token (exit {done.returncode}); run `gh auth login`"
        )
    return token


def token_from_env() -> str:
    for name in TOKEN_ENV_VARS:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise ValueError(f"--token-from-env: neither {' nor '.join(TOKEN_ENV_VARS)} is set")


def check_token(token: str, api_url: str | None = None, timeout: float = 30.0) -> PreflightResult:
    base = (api_url or os.environ.get(GITHUB_API_URL_ENV) or DEFAULT_GITHUB_API_URL).rstrip("/")
    headers = {
        "Authorization": f"token {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "skillsbench-agentbeats-ghcr-preflight",
    }
    try:
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            response = client.get(f"{base}/user", headers=headers)
    except httpx.HTTPError as exc:
        raise ValueError(f"cannot reach the GitHub API at {base}: {type(exc).__name__}") from exc
    if response.status_code in (401, 403):
        raise ValueError(f"GitHub rejected the token (HTTP {response.status_code})")
    if response.status_code != 200:
        raise ValueError(f"GitHub API answered HTTP {response.status_code} for /user")
    header = response.headers.get("X-OAuth-Scopes")
    if header is None:
        raise ValueError(
            "GitHub sent no X-OAuth-Scopes header: not a classic token (fine-grained tokens "
            "cannot push packages); create a classic token with read:packages and write:packages"
        )
    scopes = sorted({s.strip() for s in header.split(",") if s.strip()})
    login = response.json().get("login") if response.content else None
    missing = [s for s in REQUIRED_SCOPES if s not in scopes]
    return PreflightResult(
        login=login if isinstance(login, str) else None, scopes=scopes, missing=missing
    )
