"""The run store's atomic documents and the agent registry's dispatch."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from worker.agents import registry
from worker.agents.base import Agent, AgentContext, AgentOutcome
from worker.agents.builtin import NopAgent, OracleAgent, ScriptAgent
from worker.agents.registry import resolve_agent, resolver_added
from worker.api import EVENT_END, EVENT_ROW, EVENT_STATUS, RunRequest, RunTask
from worker.core.files import write_atomic
from worker.runs.events import RunEvents, row_event
from worker.runs.records import RunRecord, TrialRecord
from worker.runs.store import RunStore


def _record(run_id: str) -> RunRecord:
    request = RunRequest(
        config={},
        task_set="s",
        task_set_digest="sha256:" + "1" * 64,
        tasks=[RunTask(task_id="t")],
        agent="nop",
    )
    return RunRecord(
        run_id=run_id,
        created_at="2026-11-29T00:00:00.000Z",
        updated_at="2026-11-29T00:00:00.000Z",
        request=request,
        agent="nop",
        trials={"t#0": TrialRecord(key="t#0", task_id="t")},
    )


def test_write_atomic_replaces_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    write_atomic(target, b"one")
    write_atomic(target, b"two", durable=False)
    assert target.read_bytes() == b"two"
    assert os.listdir(tmp_path) == ["doc.json"]


async def test_store_round_trip_and_unreadable_documents(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    runs = [_record("run-a"), _record("run-b")]
    await asyncio.gather(*(store.save(run) for run in runs))
    runs[0].status = "running"
    await store.save(runs[0])
    (tmp_path / "runs" / "run-c").mkdir()
    (tmp_path / "runs" / "run-c" / "run.json").write_text("{torn")
    loaded, problems = store.load_all()
    assert [run.run_id for run in loaded] == ["run-a", "run-b"]
    assert loaded[0].status == "running"
    assert len(problems) == 1 and "run-c" in problems[0]


async def test_trial_changes_are_journal_lines_and_a_full_save_compacts(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    run = _record("run-j")
    run.trials["t#1"] = TrialRecord(key="t#1", task_id="t", instance=1)
    await store.save(run)
    folder = tmp_path / "runs" / "run-j"
    document = (folder / "run.json").read_bytes()
    trial = run.trials["t#0"]
    trial.state = "running"
    run.updated_at = "2026-11-29T00:00:01.000Z"
    await store.save_trial(run, trial)
    run.cancel_requested = True
    await store.save_fields(run, ["cancel_requested"])
    trial.state = "finished"
    trial.row = {"task_id": "t"}
    await store.save_trial(run, trial)
    # O(1) per change: the document is untouched, the journal has one line per change.
    assert (folder / "run.json").read_bytes() == document
    assert len((folder / "journal.jsonl").read_bytes().splitlines()) == 3
    # A kill mid-append leaves a torn last line: skipped.
    with open(folder / "journal.jsonl", "ab") as journal:
        journal.write(b'{"seq":4,"trial":{"key":"t#1","task_id":"t","sta')
    (loaded,), problems = RunStore(tmp_path).load_all()
    assert problems == []
    assert loaded.trials["t#0"].state == "finished" and loaded.trials["t#0"].row == {"task_id": "t"}
    assert loaded.trials["t#1"].state == "queued"
    assert loaded.cancel_requested and loaded.updated_at == "2026-11-29T00:00:01.000Z"
    assert loaded.journal_seq == 3
    # A full save includes every line: the journal goes, and stale lines never apply again.
    await store.save(run)
    assert not (folder / "journal.jsonl").exists()
    (again,), _ = RunStore(tmp_path).load_all()
    assert again.model_dump() == run.model_dump()
    (folder / "journal.jsonl").write_text('{"seq":2,"trial":{"key":"t#0","task_id":"t"}}\n')
    (stale,), _ = RunStore(tmp_path).load_all()
    assert stale.trials["t#0"].state == "finished"


async def test_lines_journaled_during_a_full_save_are_kept(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    run = _record("run-k")
    for index in range(1, 600):  # more trials than one serialization step
        run.trials[f"t#{index}"] = TrialRecord(key=f"t#{index}", task_id="t", instance=index)
    await store.save(run)
    trial = run.trials["t#599"]

    async def change() -> None:
        await asyncio.sleep(0)  # while the save below serializes
        trial.state = "running"
        await store.save_trial(run, trial)

    await asyncio.gather(store.save(run), change())
    (loaded,), _ = RunStore(tmp_path).load_all()
    assert loaded.trials["t#599"].state == "running"


async def test_a_long_journal_is_compacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("worker.runs.store.JOURNAL_COMPACT_MIN_LINES", 3)
    store = RunStore(tmp_path)
    run = _record("run-long")
    await store.save(run)
    journal = tmp_path / "runs" / "run-long" / "journal.jsonl"
    trial = run.trials["t#0"]
    for state in ("running", "queued", "running"):
        trial.state = state  # type: ignore[assignment]
        await store.save_trial(run, trial)
    assert len(journal.read_bytes().splitlines()) == 3
    trial.state = "finished"
    await store.save_trial(run, trial)  # the 4th line: over the limit, a full save compacts
    assert not journal.exists()
    (loaded,), _ = RunStore(tmp_path).load_all()
    assert loaded.trials["t#0"].state == "finished" and loaded.journal_seq == 4


def test_builtin_specs_resolve(tmp_path: Path) -> None:
    assert isinstance(resolve_agent("oracle"), OracleAgent)
    assert isinstance(resolve_agent(" nop "), NopAgent)
    script = tmp_path / "agent.sh"
    script.write_text("true\n")
    agent = resolve_agent(f"script:{script}")
    assert isinstance(agent, ScriptAgent) and agent.kind == "script"
    assert resolve_agent("oracle").needs_solution and not agent.needs_solution


@pytest.mark.parametrize(
    ("spec", "reason"),
    [("", "empty"), ("no-such-agent", "unknown agent"), ("script:", "needs a file"),
     ("script:/no/such/file", "not a file")],
)  # fmt: skip
def test_bad_specs_name_the_problem(spec: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        resolve_agent(spec)


class _Named(Agent):
    kind = "acp"

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        return AgentOutcome()


def _manifest_resolver(spec: str) -> Agent | None:
    return _Named(spec) if spec == "my-manifest-agent" else None


def test_fallback_resolver_hook_for_manifest_names() -> None:
    registry.load_plugins()
    before = registry.resolvers()
    with resolver_added(_manifest_resolver):
        agent = resolve_agent("my-manifest-agent")
        assert isinstance(agent, _Named) and agent.name == "my-manifest-agent"
        with pytest.raises(ValueError):
            resolve_agent("another-unknown-agent")
    # The registration ended with the block: the global registry is as it was.
    assert registry.resolvers() == before
    with pytest.raises(ValueError, match="unknown agent 'my-manifest-agent'"):
        resolve_agent("my-manifest-agent")


def test_scoped_resolver_keeps_one_added_before() -> None:
    registry.add_resolver(_manifest_resolver)
    try:
        with resolver_added(_manifest_resolver):
            pass
        assert _manifest_resolver in registry.resolvers()
    finally:
        registry.remove_resolver(_manifest_resolver)
    assert _manifest_resolver not in registry.resolvers()


async def test_a_row_being_saved_when_a_subscriber_arrives_reaches_it_once(
    tmp_path: Path,
) -> None:
    # The scheduler sets a trial's row, saves it (an await), then publishes it. A subscriber that
    # arrives during the save replays what is stored: it must not replay this row too (task-set
    # check printed "[5/4]": one row twice), and gets it once when it is published.
    store, events = RunStore(tmp_path), RunEvents()
    run = _record("run-e")
    await store.save(run)
    trial = run.trials["t#0"]
    run.hold(trial)
    trial.state, trial.row = "finished", {"task_id": "t", "passed": False}
    saving = asyncio.ensure_future(store.save_trial(run, trial))
    stream = events.stream(run)
    assert (await anext(stream))[0] == EVENT_STATUS  # snapshot taken, subscribed
    await saving
    events.publish(run.run_id, (EVENT_ROW, row_event(run, trial)))
    events.publish(run.run_id, (EVENT_END, {}))
    rest = [event async for event in stream]
    assert [name for name, _ in rest] == [EVENT_ROW, EVENT_END]
    # A subscriber after the publish (and the run's end) replays it, once.
    run.status = "completed"
    late = [name async for name, _ in events.stream(run)]
    assert late.count(EVENT_ROW) == 1
