"""The a2a bridge end to end: scripted purple agents (real a2a-sdk servers on loopback, 1.x and
0.3) act in the bubblewrap sandbox through the bridge subprocess and the worker's ACP client."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from task_sets.task import load_task
from tests.support import REPO_ROOT, free_port
from tests.worker.support import purple_server, run_trial, served
from worker.agents.a2a import A2AAgent
from worker.core.failures import FailureKind
from worker.sandbox.base import Sandbox


def bridge_events(trial_dir: Path) -> list[dict]:  # type: ignore[type-arg]
    path = trial_dir / "trajectory" / "a2a_trajectory.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("version", ["v1", "v03"])
async def test_exec_purple_passes(
    tmp_path: Path, version: str, request: pytest.FixtureRequest
) -> None:
    python = request.getfixturevalue("a2a03_python") if version == "v03" else None
    log = tmp_path / "purple.jsonl"
    kwargs = {"python": python} if python else {}
    with purple_server("exec", version=version, log=log, **kwargs) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.status == "completed", result.outcome.message
    assert result.outcome.failure is None
    assert result.reward == 1.0, result.verifier
    calls = result.tool_calls()
    assert [(c["kind"], c["title"]) for c in calls] == [
        ("execute", "ls -la"),
        ("execute", "echo 42 > answer.txt && echo wrote >&2"),
        ("read", "read answer.txt"),
    ]
    assert result.outcome.n_tool_calls == 3
    # What the purple agent received: the context on turn 1, then one result per action.
    received = [json.loads(line) for line in log.read_text().splitlines()]
    assert len({r["context_id"] for r in received}) == 1  # one conversation
    context = received[0]["data"][0]
    assert context["protocol"] == "skillsbench-shell/v1"
    assert context["task_id"] == "write-answer"
    assert context["workspace"] == "/root"
    assert context["limits"]["max_turns"] == 100
    # Later turns carry no "protocol" key: readers spot the turn-1 context by it.
    assert all("protocol" not in r["data"][0] for r in received[1:])
    first, second, third = (r["data"][0]["action_result"] for r in received[1:4])
    assert first["exit_code"] == 0 and "answer.txt" not in first["stdout"]
    assert (second["stdout"], second["stderr"].strip()) == ("", "wrote")
    assert third["content"] == "42\n" and third["path"] == "/root/answer.txt"
    kinds = [e["type"] for e in bridge_events(result.trial_dir)]
    assert kinds[:3] == ["user_message", "sandbox_context", "a2a_request"]
    assert kinds.count("terminal_observation") == 2
    text_log = (result.trial_dir / "agent" / "agentbeats_a2a.txt").read_text()
    assert "[agentbeats-a2a]" in text_log


@pytest.mark.parametrize("version", ["v1", "v03"])
async def test_files_only_purple_passes(
    tmp_path: Path, version: str, request: pytest.FixtureRequest
) -> None:
    kwargs = {"python": request.getfixturevalue("a2a03_python")} if version == "v03" else {}
    with purple_server("files", version=version, **kwargs) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0, result.verifier
    assert result.outcome.details["bridge"]["written_files"] == ["/root/answer.txt"]
    assert [c["kind"] for c in result.tool_calls()] == ["edit"]


async def test_binary_files_are_written_byte_for_byte(tmp_path: Path) -> None:
    seen: dict[str, str] = {}

    async def look(box: Sandbox) -> None:
        for name in ("blob.bin", "returned.bin"):
            dump = await box.exec(["sh", "-c", f"od -An -tx1 -v /root/{name} | tr -d ' \\n'"])
            seen[name] = dump.stdout

    with purple_server("binary") as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path, inspect=look)
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0, result.verifier
    assert seen == {name: bytes(range(256)).hex() for name in ("blob.bin", "returned.bin")}
    assert result.outcome.details["bridge"]["refused_files"] == []


async def test_escaping_paths_are_refused_and_nothing_written_outside(tmp_path: Path) -> None:
    seen: dict[str, str] = {}

    async def look(box: Sandbox) -> None:
        listing = await box.exec(
            ["sh", "-c", "ls -A /tmp/outside; test -L /root/escape && echo link"]
        )
        seen["listing"] = listing.stdout
        seen["etc"] = (
            await box.exec(["sh", "-c", "ls /etc/owned 2>&1; head -c 5 /etc/passwd"])
        ).stdout

    with purple_server("escape") as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path, inspect=look)
    assert result.outcome.failure is None, result.outcome.message
    # answer.txt (base64) was the one legitimate file
    assert result.reward == 1.0, result.verifier
    bridge = result.outcome.details["bridge"]
    assert bridge["written_files"] == ["/root/answer.txt"]
    refused = {r["path"]: r["error"] for r in bridge["refused_files"]}
    assert set(refused) == {
        "../../etc/passwd",
        "/etc/passwd",
        "/tmp/outside/direct.txt",
        "escape/pwned.txt",
    }
    assert "'..'" in refused["../../etc/passwd"]
    assert "outside the allowed folders" in refused["/etc/passwd"]
    assert "resolves outside" in refused["escape/pwned.txt"]  # caught in the sandbox: a symlink
    assert seen["listing"] == "link\n"  # /tmp/outside is empty; the planted symlink is there
    assert "No such file" in seen["etc"] and "pwned" not in seen["etc"]
    failed = [
        e
        for e in result.trajectory()
        if e["type"] == "tool_call_update" and e["status"] == "failed"
    ]
    assert len(failed) == 5  # write_file /etc/owned + four refused files


async def test_plain_reply_ends_the_trial(tmp_path: Path) -> None:
    with purple_server("plain") as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.status == "completed"
    assert result.outcome.details["bridge"]["status"] == "plain_reply"
    assert result.reward == 0.0
    messages = [e["text"] for e in result.trajectory() if e["type"] == "agent_message"]
    assert messages == ["I cannot use tools, sorry."]


async def test_silent_purple_is_participant_timeout(tmp_path: Path) -> None:
    with purple_server("silent") as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path, timeout_sec=2)
    assert result.outcome.failure is FailureKind.PARTICIPANT_TIMEOUT, result.outcome.message
    assert result.reward == 0.0  # the verifier still ran


async def test_server_down_is_participant_communication(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is FailureKind.PARTICIPANT_COMMUNICATION, result.outcome.message
    assert result.reward == 0.0
    kinds = [e["type"] for e in bridge_events(result.trial_dir)]
    # A refused connection is retried (worker/bridge/retries.py) before the trial is classified.
    assert kinds == ["user_message", "sandbox_context", *["a2a_retry"] * 3, "a2a_error"]
    assert result.outcome.details["bridge"]["n_retries"] == 3


async def test_failed_task_is_participant_error(tmp_path: Path) -> None:
    with purple_server("fail") as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is FailureKind.PARTICIPANT_ERROR
    assert "model quota exceeded" in (result.outcome.message or "")


async def test_max_turns_stops_the_conversation(tmp_path: Path) -> None:
    agent = A2AAgent("a2a")  # the URL comes from the trial (assessment participant)
    agent.max_turns = 3
    with purple_server("loop") as url:
        result = await run_trial(agent, tmp_path, participant_url=url)
    assert result.outcome.failure is None
    assert result.outcome.details["bridge"]["status"] == "max_turns"
    assert result.outcome.n_tool_calls == 3


async def test_placeholder_participant_scores_zero_without_failure(tmp_path: Path) -> None:
    argv = lambda port: [  # noqa: E731
        sys.executable, "-m", "purple_agent.placeholder", "--host", "127.0.0.1", "--port", str(port)
    ]  # fmt: skip
    with served(argv, {"PATH": "/usr/bin:/bin"}) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is None, result.outcome.message
    assert result.outcome.details["bridge"]["status"] == "plain_reply"
    assert result.reward == 0.0


def test_a2a_spec_needs_an_http_url() -> None:
    with pytest.raises(ValueError, match="need an http"):
        A2AAgent("a2a:ftp://example")


async def test_documented_purple_agent_solves_csv_sales_summary(tmp_path: Path) -> None:
    """The example in docs/participant-protocol.md, run as written, against an example task."""
    repo = REPO_ROOT
    example = repo / "docs" / "examples" / "csv_sales_purple.py"
    assert example.read_text() in (repo / "docs" / "participant-protocol.md").read_text()
    the_task = load_task(repo / "tasks" / "csv-sales-summary")

    async def place_data(box: Sandbox) -> None:  # what the task's Dockerfile COPYs
        await box.upload(the_task.environment_dir / "sales.csv", "/root/sales.csv")

    argv = lambda port: [sys.executable, str(example), str(port)]  # noqa: E731
    with served(argv, {"PATH": "/usr/bin:/bin"}) as url:
        result = await run_trial(
            A2AAgent(f"a2a:{url}"), tmp_path, the_task=the_task, prepare=place_data
        )
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0, result.verifier
    assert [c["kind"] for c in result.tool_calls()] == ["read", "edit"]


async def test_unreadable_reply_is_participant_error(tmp_path: Path) -> None:
    with purple_server("garbage") as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is FailureKind.PARTICIPANT_ERROR, result.outcome.message
    assert result.reward == 0.0
    errors = [e for e in bridge_events(result.trial_dir) if e["type"] == "a2a_error"]
    assert errors and errors[0]["payload"]["failure"] == "participant_error"


async def test_output_limit_command_timeout_and_invalid_action(tmp_path: Path) -> None:
    log = tmp_path / "purple.jsonl"
    with purple_server("limits", log=log) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is None, result.outcome.message
    received = [json.loads(line)["data"][0] for line in log.read_text().splitlines()]
    big, slow, bogus, background = (r["action_result"] for r in received[1:5])
    assert big["truncated"] is True and big["stdout"] == "a" * (64 << 10)
    assert slow["timed_out"] is True and slow["stdout"] == "started\n"
    assert "invalid action" in bogus["error"]
    # A background job holding the output pipe does not keep the command "running".
    assert background["timed_out"] is False and background["stdout"] == "back\n"
    updates = [e for e in result.trajectory() if e["type"] == "tool_call_update"]
    assert [u["status"] for u in updates] == ["completed", "failed", "completed"]


async def test_files_beyond_the_count_limit_are_refused(tmp_path: Path) -> None:
    agent = A2AAgent("a2a")
    agent.max_files = 3
    with purple_server("many") as url:
        result = await run_trial(agent, tmp_path, participant_url=url)
    bridge = result.outcome.details["bridge"]
    assert bridge["written_files"] == ["/root/answer.txt", "/root/out/0.txt", "/root/out/1.txt"]
    assert bridge["refused_files"] == [
        {"path": "out/2.txt", "error": "more than 3 files"},
        {"path": "out/3.txt", "error": "more than 3 files"},
    ]
    assert result.reward == 1.0, result.verifier


async def test_purple_keeping_one_task_open_with_input_required(tmp_path: Path) -> None:
    log = tmp_path / "purple.jsonl"
    with purple_server("ask-exec", log=log) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0, result.verifier
    states = [
        e["payload"]["state"]
        for e in bridge_events(result.trial_dir)
        if e["type"] == "a2a_response"
    ]
    assert states == ["TASK_STATE_INPUT_REQUIRED"] * 3 + ["TASK_STATE_COMPLETED"]
    task_ids = {
        e["payload"]["agent_under_test_receipt"]["id"]
        for e in bridge_events(result.trial_dir)
        if e["type"] == "a2a_response"
    }
    assert len(task_ids) == 1  # every turn continued the same task


def purple_cancels(log: Path) -> tuple[list[str], list[str]]:
    """(context ids the purple agent was messaged in, task ids it was told to cancel)."""
    records = [json.loads(line) for line in log.read_text().splitlines()]
    contexts = [r["context_id"] for r in records if "data" in r]
    return contexts, [r["cancel"] for r in records if "cancel" in r]


def bridge_cancels(trial_dir: Path) -> list[str]:
    return [e["payload"]["result"] for e in bridge_events(trial_dir) if e["type"] == "a2a_cancel"]


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "polled"])
async def test_deadline_cancels_the_purple_task_still_running(
    tmp_path: Path, streaming: bool
) -> None:
    log = tmp_path / "purple.jsonl"
    with purple_server("silent", log=log, streaming=streaming) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path, timeout_sec=2)
    assert result.outcome.failure is FailureKind.PARTICIPANT_TIMEOUT
    contexts, cancelled = purple_cancels(log)
    assert len(contexts) == 1 and len(cancelled) == 1
    assert bridge_cancels(result.trial_dir) == [f"task {cancelled[0]} is now TASK_STATE_CANCELED"]


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "polled"])
async def test_deadline_cancels_the_task_waiting_for_input(tmp_path: Path, streaming: bool) -> None:
    log = tmp_path / "purple.jsonl"
    with purple_server("ask-stall", log=log, streaming=streaming) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path, timeout_sec=3)
    assert result.outcome.failure is FailureKind.PARTICIPANT_TIMEOUT
    [first] = [e for e in bridge_events(result.trial_dir) if e["type"] == "a2a_response"]
    task_id = first["payload"]["agent_under_test_receipt"]["id"]
    assert purple_cancels(log)[1] == [task_id]  # the one task both turns belong to


async def test_cancelled_trial_cancels_the_purple_task(tmp_path: Path) -> None:
    log = tmp_path / "purple.jsonl"
    with purple_server("silent", log=log) as url:
        trial = asyncio.create_task(run_trial(A2AAgent(f"a2a:{url}"), tmp_path, timeout_sec=60))
        for _ in range(200):  # until the purple agent has the task
            if log.exists() and log.read_text():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(1)  # and the bridge has the reply that names the task
        trial.cancel()
        with pytest.raises(asyncio.CancelledError):
            await trial
        contexts, cancelled = purple_cancels(log)
    assert len(contexts) == 1 and len(cancelled) == 1
    assert bridge_cancels(tmp_path / "trial") == [f"task {cancelled[0]} is now TASK_STATE_CANCELED"]


async def test_finished_conversation_sends_no_cancel(tmp_path: Path) -> None:
    log = tmp_path / "purple.jsonl"
    with purple_server("ask-exec", log=log) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.reward == 1.0, result.verifier
    assert purple_cancels(log)[1] == [] and bridge_cancels(result.trial_dir) == []


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "polled"])
@pytest.mark.parametrize("mode", ["ask-exec", "ask-art-exec"])
async def test_each_input_required_turn_is_answered_once(
    tmp_path: Path, streaming: bool, mode: str
) -> None:
    """A continued task comes back as it was until the agent takes up the message: its old
    action must not be taken for the new one, wherever the action is (status message or a
    bare input-required with the action in an artifact)."""
    log = tmp_path / "purple.jsonl"
    with purple_server(mode, log=log, streaming=streaming) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0, result.verifier
    assert [c["title"] for c in result.tool_calls()] == [
        "ls -la",
        "echo 42 > answer.txt && echo wrote >&2",
        "read answer.txt",
    ]
    assert len(purple_cancels(log)[0]) == 4  # context, then one result per action


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "polled"])
async def test_auth_required_is_participant_error_and_the_task_is_cancelled(
    tmp_path: Path, streaming: bool
) -> None:
    """auth-required interrupts the task without ending it: the bridge gives up on it and says so."""
    log = tmp_path / "purple.jsonl"
    with purple_server("auth", log=log, streaming=streaming) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is FailureKind.PARTICIPANT_ERROR
    assert "auth-required: log in first" in (result.outcome.message or "")
    cancelled = purple_cancels(log)[1]
    assert len(cancelled) == 1
    assert bridge_cancels(result.trial_dir) == [f"task {cancelled[0]} is now TASK_STATE_CANCELED"]


def test_streamed_updates_build_this_turns_task_and_ignore_other_tasks() -> None:
    """Status and artifact events fold into the task as an agent's task store folds them; an
    event about another task (no SDK server sends one) cannot replace what was gathered."""
    from a2a.types import (
        Artifact,
        StreamResponse,
        TaskArtifactUpdateEvent,
        TaskState,
        TaskStatus,
        TaskStatusUpdateEvent,
    )

    from worker.bridge.a2a_peer import _apply_update, text_part

    def artifact(task_id: str, text: str, append: bool = False) -> StreamResponse:
        event = TaskArtifactUpdateEvent(
            task_id=task_id, context_id="c", append=append, artifact=Artifact(artifact_id="a")
        )
        event.artifact.parts.append(text_part(text))
        return StreamResponse(artifact_update=event)

    def status(task_id: str, state: int) -> StreamResponse:
        return StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id=task_id, context_id="c", status=TaskStatus(state=state)
            )
        )

    task = _apply_update(None, artifact("t1", "one"))
    task = _apply_update(task, artifact("t1", "two", append=True))
    task = _apply_update(task, artifact("other", "foreign"))
    task = _apply_update(task, status("other", TaskState.TASK_STATE_FAILED))
    task = _apply_update(task, status("t1", TaskState.TASK_STATE_COMPLETED))
    assert task.id == "t1" and task.status.state == TaskState.TASK_STATE_COMPLETED
    [only] = task.artifacts
    assert [part.text for part in only.parts] == ["one", "two"]
    task = _apply_update(task, artifact("t1", "replaced"))
    assert [part.text for part in task.artifacts[0].parts] == ["replaced"]


@pytest.mark.parametrize("streaming", [True, False])
async def test_reply_with_another_requests_id_is_participant_error(
    tmp_path: Path, streaming: bool
) -> None:
    """A purple agent that would solve the task, but whose JSON-RPC replies (streamed events,
    or plain replies and GetTask polls) carry an id that is not the request's: nothing it says
    is read, the trial is a participant error with reward 0."""
    with purple_server("wrong-id-exec", streaming=streaming) as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is FailureKind.PARTICIPANT_ERROR, result.outcome.message
    assert "JSON-RPC reply has id" in (result.outcome.message or "")
    assert result.reward == 0.0
    assert result.tool_calls() == []


async def test_reply_about_another_context_is_participant_error(tmp_path: Path) -> None:
    """From turn 2 on, the purple's replies name a context that is not the conversation's."""
    with purple_server("wrong-context-exec") as url:
        result = await run_trial(A2AAgent(f"a2a:{url}"), tmp_path)
    assert result.outcome.failure is FailureKind.PARTICIPANT_ERROR, result.outcome.message
    assert "replied about another context" in (result.outcome.message or "")
    assert result.reward == 0.0
    assert len(result.tool_calls()) == 1  # the first action only
