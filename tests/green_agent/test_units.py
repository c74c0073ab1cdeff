"""Pure parts of the green agent: progress text, settings, routing, request shape."""

from __future__ import annotations

import inspect
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from green_agent.adapters.http import HttpWorkerAdapter
from green_agent.progress import final_summary, plain_text, row_summary
from green_agent.request import RequestError, parse_request
from green_agent.routing import is_loopback_url, route_participant
from green_agent.selection import select
from green_agent.settings import GreenSettings, load_settings


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@given(st.text())
def test_plain_text_never_parses_as_json(text: str) -> None:
    assert not _parses(plain_text(text))


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), st.lists))
def test_plain_text_of_json_documents(value: object) -> None:
    assert not _parses(plain_text(json.dumps(value)))


@pytest.mark.parametrize("text", ["0", "true", "null", '"quoted"', "[1]", '{"a":1}', " 12 "])
def test_json_looking_text_is_changed(text: str) -> None:
    assert plain_text(text) != text.strip()
    assert not _parses(plain_text(text))


def test_summaries_are_plain_text() -> None:
    row = {"task_id": "t", "score_eligible": True, "passed": True, "reward": 1.0}
    assert "passed" in row_summary(row, 1, 2)
    assert not _parses(row_summary(row, 1, 2))
    assert not _parses(final_summary([row], "completed"))


def test_settings_from_amber_strings() -> None:
    settings = load_settings(
        {
            "SKILLSBENCH_WORKER_SLOT_URL": "http://127.0.0.1:9010",
            "SKILLSBENCH_WORKER_TIMEOUT_SEC": "14400",
            "SKILLSBENCH_WORKER_POLL_INTERVAL_SEC": "1.0",
            "SKILLSBENCH_WORKER_TOKEN": "tok",
        }
    )
    assert settings.effective_worker_url == "http://127.0.0.1:9010"
    assert settings.worker_timeout_sec == 14400.0
    assert "tok" not in repr(settings)
    both = load_settings(
        {"SKILLSBENCH_WORKER_URL": "http://a", "SKILLSBENCH_WORKER_SLOT_URL": "http://b"}
    )
    assert both.effective_worker_url == "http://a"
    assert load_settings({}).effective_worker_url is None


def test_defaults_have_one_owner() -> None:
    defaults = GreenSettings()
    assert load_settings({}) == defaults
    assert (defaults.worker_timeout_sec, defaults.heartbeat_sec) == (14400.0, 30.0)
    params = inspect.signature(HttpWorkerAdapter).parameters
    assert params["timeout_sec"].default == defaults.worker_timeout_sec
    assert params["poll_interval_sec"].default == defaults.worker_poll_interval_sec
    assert params["retry_sec"].default == defaults.worker_retry_sec


def test_settings_trim_and_blank_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(
        {"SKILLSBENCH_WORKER_URL": " http://a ", "SKILLSBENCH_WORKER_RETRY_SEC": "  "}
    )
    assert settings.worker_url == "http://a"
    assert settings.worker_retry_sec == GreenSettings().worker_retry_sec
    # Names are case-sensitive, and only load_settings reads an environment.
    assert load_settings({"skillsbench_worker_url": "http://b"}).worker_url is None
    monkeypatch.setenv("SKILLSBENCH_WORKER_URL", "http://from-env")
    assert GreenSettings().worker_url is None
    assert load_settings().worker_url == "http://from-env"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SKILLSBENCH_WORKER_TIMEOUT_SEC", "soon"),
        ("SKILLSBENCH_WORKER_POLL_INTERVAL_SEC", "0"),
        ("SKILLSBENCH_GREEN_HEARTBEAT_SEC", "300"),
    ],
)
def test_bad_settings_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        load_settings({name: value})


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:9019/", True),
        ("http://localhost:9019", True),
        ("http://[::1]:9019/", True),
        ("http://0.0.0.0:9019/", True),
        ("http://127.8.9.10/", True),
        ("http://10.0.0.5:9019/", False),
        ("https://purple.example.org/a2a", False),
    ],
)
def test_loopback_detection(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback


def test_routing_without_proxy_keeps_the_url() -> None:
    endpoint = route_participant("agent", "http://127.0.0.1:9019/", GreenSettings())
    assert endpoint.url == "http://127.0.0.1:9019/"
    assert endpoint.sandbox_url is None


def test_routing_with_proxies() -> None:
    settings = GreenSettings(
        proxy_url="http://127.0.0.1:8080",
        sandbox_participant_proxy_url="http://172.17.0.1:18081/",
    )
    endpoint = route_participant("agent", "http://localhost:20000", settings)
    assert endpoint.url == "http://127.0.0.1:8080/agent"
    assert endpoint.sandbox_url == "http://172.17.0.1:18081/agent"
    worker_side = GreenSettings(
        proxy_url="http://127.0.0.1:8080", worker_participant_proxy_url="http://gw:8080"
    )
    assert (
        route_participant("agent", "http://127.0.0.1:1/", worker_side).url == "http://gw:8080/agent"
    )


def test_request_roles_other_than_agent_are_refused_by_name() -> None:
    """SkillsBench scores one participant: another role would reach the worker unread."""
    with pytest.raises(RequestError) as info:
        parse_request(
            json.dumps(
                {"participants": {"agent": "http://a:1/", "helper": "http://b:2"}, "config": {}}
            )
        )
    assert info.value.field == "participants.helper"


def test_request_error_names_the_field() -> None:
    with pytest.raises(RequestError) as info:
        parse_request(json.dumps({"participants": {}, "config": {}}))
    assert info.value.field == "participants.agent"


def test_selection_shards_in_order_and_coerces_amber_strings() -> None:
    config = {"task_set": "skillsbench-v1.1", "tasks": "all", "num_shards": "7", "shard_index": "6"}
    selection = select(config)
    whole = select({"task_set": "skillsbench-v1.1", "tasks": "all"})
    assert [t.task_id for t in selection.tasks] == [t.task_id for t in whole.tasks][6::7]
    assert selection.task_set_digest == (
        "sha256:3c9432bb1a4bd1b66ddbc175bb1f43bf546f7de663d1b2aa0327a88bff7ecd39"
    )


def test_selection_keeps_task_ids_order() -> None:
    ids = ["travel-planning", "citation-check", "edit-pdf"]
    selection = select({"task_set": "skillsbench-v1.1", "task_ids": ids})
    assert [t.task_id for t in selection.tasks] == ids


def test_green_with_a_bad_environment_fails_with_one_line() -> None:
    import os
    import subprocess
    import sys

    from tests.support import REPO_ROOT

    env = {**os.environ, "SKILLSBENCH_WORKER_TIMEOUT_SEC": "soon"}
    proc = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "green", "--port", "1"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "SKILLSBENCH_WORKER_TIMEOUT_SEC" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
