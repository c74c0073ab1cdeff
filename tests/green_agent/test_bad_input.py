"""The green agent under bad input, over real loopback HTTP: every malformed request is an
InvalidParams error (-32602) naming the problem, never an internal error, a large body is refused
without being read, and the agent serves a valid request afterwards. Finished tasks are kept in
bounded memory."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Task, TaskState, TaskStatus

from green_agent.request import MAX_JSON_DEPTH, MAX_URL_LENGTH
from green_agent.request_guard import MAX_BODY_BYTES
from green_agent.server import build_app
from green_agent.settings import GreenSettings
from green_agent.task_store import BoundedTaskStore
from skillsbench_agentbeats.in_process import serve_app
from tests.green_agent.support import PURPLE_URL, SMOKE, request_text


def _send(text: str, method: str = "message/send") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": method,
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m-1",
                "role": "user",
                "parts": [{"kind": "text", "text": text}],
            }
        },
    }


@pytest.fixture
async def green() -> AsyncIterator[str]:
    async with serve_app(lambda url: build_app(url, GreenSettings())) as url:
        yield url


async def _post(url: str, content: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60) as http:
        return await http.post(
            url, content=content, headers={"content-type": "application/json", **(headers or {})}
        )


async def _still_serves(url: str) -> None:
    """A valid request (here: a valid envelope with a config error) gets its exact answer."""
    answer = (await _post(url, json.dumps(_send(request_text({"task_set": "nope"}))))).json()
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].startswith("config.task_set:")


def _error(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


async def test_a_body_over_the_limit_is_refused_unread(green: str) -> None:
    big = (
        b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"pad":"'
        + b"x" * (MAX_BODY_BYTES + 10)
        + b'"}}'
    )
    response = await _post(green, big)
    assert response.status_code == 413
    assert _error(response)["code"] == -32602
    assert f"over the limit of {MAX_BODY_BYTES} bytes" in _error(response)["message"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b" " * 65536

    response = await _post(green, chunks())
    assert response.status_code == 413 and _error(response)["code"] == -32602
    await _still_serves(green)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":"\xff\xfe"}', "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, f"nests deeper than {MAX_JSON_DEPTH} levels"),
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, "nests deeper"),
    ],
    ids=["not-utf8", "deep-array", "deep-object"],
)
async def test_a_malformed_body_is_invalid_params_not_internal(
    green: str, body: bytes, needle: str
) -> None:
    response = await _post(green, body)
    assert response.status_code == 400
    error = _error(response)
    assert error["code"] == -32602 and needle in error["message"], error
    await _still_serves(green)


DEEP_TEXT = (
    '{"participants":{"agent":"' + PURPLE_URL + '"},"config":' + "[" * 5000 + "]" * 5000 + "}"
)


@pytest.mark.parametrize(
    ("text", "field", "needle"),
    [
        (DEEP_TEXT, "request", "nests deeper"),
        (
            json.dumps({"participants": {"agent": PURPLE_URL}, "config": SMOKE, "extra": 1}),
            "extra",
            "not a request key",
        ),
        (
            json.dumps(
                {"participants": {"agent": PURPLE_URL, "judge": PURPLE_URL}, "config": SMOKE}
            ),
            "participants.judge",
            "not a SkillsBench role",
        ),
        (
            request_text(SMOKE, agent="http://127.0.0.1:9019/" + "a" * MAX_URL_LENGTH),
            "participants.agent",
            f"at most {MAX_URL_LENGTH}",
        ),
        (request_text(SMOKE, agent="http://127.0.0.1:99999/"), "participants.agent", "valid URL"),
        (request_text(SMOKE, agent="http://host/a b"), "participants.agent", "spaces"),
    ],
    ids=["deep-text", "extra-key", "extra-role", "long-url", "bad-port", "space"],
)
async def test_a_malformed_request_names_the_field(
    green: str, text: str, field: str, needle: str
) -> None:
    for method in ("message/send", "message/stream"):
        response = await _post(green, json.dumps(_send(text, method)))
        raw = response.text
        if raw.startswith("data:") or "\ndata:" in raw:
            raw = next(line[5:] for line in raw.splitlines() if line.startswith("data:"))
        error = json.loads(raw)["error"]
        assert error["code"] == -32602, error
        assert error["message"].startswith(field + ":") and needle in error["message"], error
    await _still_serves(green)


def _task(task_id: str, state: int) -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=state))  # type: ignore[arg-type]


async def test_finished_tasks_are_forgotten_by_count_and_age_running_ones_never() -> None:
    now = [0.0]
    store = BoundedTaskStore(max_finished=3, max_age_sec=100.0, clock=lambda: now[0])
    ctx = ServerCallContext()
    await store.save(_task("running", TaskState.TASK_STATE_WORKING), ctx)
    for i in range(5):
        await store.save(_task(f"done-{i}", TaskState.TASK_STATE_COMPLETED), ctx)
    assert store.finished_count == 3
    assert await store.get("done-0", ctx) is None and await store.get("done-1", ctx) is None
    assert (await store.get("done-4", ctx)) is not None
    now[0] = 101.0  # every finished task is now too old; the running one stays
    assert await store.get("done-4", ctx) is None
    assert store.finished_count == 0
    assert (await store.get("running", ctx)) is not None


async def test_many_assessments_leave_a_bounded_store_and_the_newest_result_readable() -> None:
    """Mock-worker assessments through the real app: the store holds at most its bound, and a
    client can still read the result it has just been sent."""
    app_state: dict[str, Any] = {}

    def factory(url: str) -> Any:
        app = build_app(url, GreenSettings())
        app.state.task_store.max_finished = 10
        app_state["store"] = app.state.task_store
        return app

    async with serve_app(factory) as url, httpx.AsyncClient(timeout=120) as http:
        ids = []
        for _ in range(25):
            answer = (await http.post(url, json=_send(request_text(SMOKE)))).json()
            assert answer["result"]["status"]["state"] == "completed", answer
            ids.append(answer["result"]["id"])
        store = app_state["store"]
        assert store.finished_count == 10
        get = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get"}
        newest = (await http.post(url, json={**get, "params": {"id": ids[-1]}})).json()
        assert newest["result"]["status"]["state"] == "completed"
        oldest = (await http.post(url, json={**get, "params": {"id": ids[0]}})).json()
        assert "error" in oldest and "result" not in oldest


_MESSAGE_03 = {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}
INVALID_PARAMS_03 = [
    ("message/send", {"message": _MESSAGE_03}, "params.message.messageId"),  # the TCK's case
    ("message/send", {"": "not_a_dict"}, "params.message"),
    ("message/send", {"message": {"parts": "invalid"}}, "params.message"),
    ("message/send", None, "params"),
    ("message/stream", {"message": _MESSAGE_03}, "params.message.messageId"),
    ("tasks/get", {}, "params.id"),
    ("tasks/get", {"id": 5}, "params.id"),
    ("tasks/cancel", {}, "params.id"),
    ("tasks/resubscribe", {}, "params.id"),
    ("tasks/pushNotificationConfig/set", {}, "params."),
    ("tasks/pushNotificationConfig/get", {}, "params."),
    ("tasks/pushNotificationConfig/list", {}, "params.id"),
    ("tasks/pushNotificationConfig/delete", {}, "params."),
]


@pytest.mark.parametrize("headers", [{"A2A-Version": "0.3"}, {}], ids=["0.3-header", "no-header"])
@pytest.mark.parametrize(("method", "params", "where"), INVALID_PARAMS_03)
async def test_a2a03_invalid_params_are_32602_on_every_method(
    green: str, method: str, params: Any, where: str, headers: dict[str, str]
) -> None:
    """a2a-sdk's 0.3 layer answers -32600 for these (the A2A TCK 0.3 expects -32602)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": "req-9", "method": method}
    if params is not None:
        body["params"] = params
    response = await _post(green, json.dumps(body), headers)
    assert response.status_code == 200
    answer = response.json()
    assert answer["id"] == "req-9"
    assert answer["error"]["code"] == -32602, answer
    assert answer["error"]["message"].startswith(where), answer


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"jsonrpc": "aaa", "method": "message/send", "params": {}}, -32600),
        ({"jsonrpc": "2.0", "params": {}}, -32600),
        ({"jsonrpc": "2.0", "method": "message/ssend", "params": {}}, -32601),
        ({"jsonrpc": "2.0", "method": "message/send", "params": {}, "id": {"bad": 1}}, -32600),
        ({"jsonrpc": "2.0", "method": "message/send", "params": {"": "not_a_dict"}}, -32602),
    ],
    ids=["bad-jsonrpc", "no-method", "unknown-method", "bad-id", "notification-bad-params"],
)
async def test_a_broken_envelope_keeps_its_json_rpc_code(
    green: str, body: dict[str, Any], code: int
) -> None:
    """Only params problems become -32602: the envelope's own errors keep the SDK's answer."""
    response = await _post(green, json.dumps(body), {"A2A-Version": "0.3"})
    assert response.status_code == 200
    assert response.json()["error"]["code"] == code, response.text
    await _still_serves(green)
