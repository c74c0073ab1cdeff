"""The card URL a service advertises and the URL check every URL option gets: real sockets, real
processes (the green agent and a purple agent refusing a bad ``--card-url`` at start)."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from serving.urls import advertised_url, check_url
from tests.support import REPO_ROOT


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("not-a-url", "must be an absolute http(s) URL"),
        ("ftp://host/", "must be an absolute http(s) URL"),
        ("http://", "must be an absolute http(s) URL"),
        ("http://host:99999/", "not a valid URL"),
        ("http://host:0/", "port 0"),
        ("http://ho st/", "spaces"),
        ("http://0.0.0.0:9009/", "a listening address, not one a peer can reach"),
        ("http://[::]:9009/", "a listening address"),
    ],
)
def test_a_url_no_peer_could_use_is_refused_naming_the_option(value: str, problem: str) -> None:
    with pytest.raises(ValueError, match=r"^--card-url: ") as caught:
        check_url(value, "--card-url")
    assert problem in str(caught.value) and repr(value) in str(caught.value)


def test_good_urls_pass_unchanged() -> None:
    for value in ("http://green:9009/", "https://a.example.org/a2a", "http://[::1]:9010/"):
        assert check_url(value, "--card-url") == value
    assert check_url("http://0.0.0.0:9010", "X", wildcard_ok=True) == "http://0.0.0.0:9010"


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::"])
def test_a_wildcard_bind_advertises_an_address_of_this_machine_that_is_not_loopback(
    wildcard: str,
) -> None:
    """Bound to every interface, the card names this machine as its network sees it: not
    ``0.0.0.0`` (no destination) and not ``127.0.0.1`` (a peer in another container would reach
    itself). Binding a socket to the advertised host proves it is one of this machine's."""
    url = advertised_url(wildcard, 9009, None)
    host = urlsplit(url).hostname
    assert host is not None and url == f"http://{host}:9009/"
    try:
        assert not ipaddress.ip_address(host).is_loopback
        assert not ipaddress.ip_address(host).is_unspecified
    except ValueError:  # a host name: the last resort when no interface address is known
        assert host == socket.gethostname()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))  # bound, never listening: nothing is exposed


def test_a_specific_host_is_advertised_as_given() -> None:
    assert advertised_url("127.0.0.1", 9009, None) == "http://127.0.0.1:9009/"
    assert advertised_url("::1", 9010, None) == "http://[::1]:9010/"
    assert advertised_url("[::1]", 9010, None) == "http://[::1]:9010/"
    assert advertised_url("0.0.0.0", 9009, "http://green:9009/") == "http://green:9009/"


def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "command",
    [
        ["green_agent"],
        ["skillsbench_agentbeats", "green"],
        ["skillsbench_agentbeats", "purple", "placeholder"],
    ],
    ids=["python-m-green_agent", "green", "purple-placeholder"],
)
def test_a_service_refuses_a_bad_card_url_at_start(command: list[str]) -> None:
    done = _start(*command, "--port", "1", "--card-url", "not-a-url")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "error: --card-url: must be an absolute http(s) URL, got 'not-a-url'"
    ), done.stderr


def test_the_green_agent_refuses_a_bad_worker_url_at_start() -> None:
    done = _start("green_agent", "--port", "1", env={"SKILLSBENCH_WORKER_URL": "worker:9010"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "error: SKILLSBENCH_WORKER_URL: must be an absolute http(s) URL, got 'worker:9010'"
    ), done.stderr
