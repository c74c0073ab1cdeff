"""The worker's ACP client methods served by a real sandbox (called directly, no transport)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import EnvVariable

from tests.worker.support import make_sandbox, task
from worker.acp.client import SandboxClient
from worker.acp.extensions import STREAMS_KEY, WITHIN_KEY


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[SandboxClient]:
    box = make_sandbox(task(), run_id="r", trial_id="c", state_dir=tmp_path)
    await box.start()
    events: list[dict[str, Any]] = []
    try:
        yield SandboxClient(box, events.append)
    finally:
        await box.stop()


async def test_terminal_exit_code_streams_env_and_cwd(client: SandboxClient) -> None:
    created = await client.create_terminal(
        "s", "sh", ["-c", 'echo "$GREETING from $(pwd)"; echo oops >&2; exit 3'],
        env=[EnvVariable(name="GREETING", value="hello")], cwd="/tmp",
    )  # fmt: skip
    tid = created.terminal_id
    exited = await client.wait_for_terminal_exit("s", tid)
    assert (exited.exit_code, exited.signal) == (3, None)
    out = await client.terminal_output("s", tid, **{STREAMS_KEY: True})
    assert "hello from /tmp\n" in out.output and "oops\n" in out.output
    assert out.exit_status is not None and out.exit_status.exit_code == 3
    assert out.field_meta is not None
    streams = out.field_meta[STREAMS_KEY]
    assert streams["stdout"]["text"] == "hello from /tmp\n"
    assert streams["stderr"]["text"] == "oops\n"
    plain = await client.terminal_output("s", tid)
    assert plain.field_meta is None  # the extension only when asked
    await client.release_terminal("s", tid)
    with pytest.raises(RequestError):
        await client.terminal_output("s", tid)


async def test_output_limit_keeps_the_end(client: SandboxClient) -> None:
    created = await client.create_terminal("s", "seq 1 1000", output_byte_limit=10)
    await client.wait_for_terminal_exit("s", created.terminal_id)
    out = await client.terminal_output("s", created.terminal_id)
    assert out.truncated is True
    assert out.output == "\n999\n1000\n"[-10:]


async def test_kill_a_running_terminal(client: SandboxClient) -> None:
    created = await client.create_terminal("s", "sleep", ["30"])
    tid = created.terminal_id
    running = await client.terminal_output("s", tid)
    assert running.exit_status is None
    await client.kill_terminal("s", tid)
    exited = await asyncio.wait_for(client.wait_for_terminal_exit("s", tid), 10)
    assert exited.signal is not None or exited.exit_code not in (0, None)
    await client.release_terminal("s", tid)


async def test_files_lines_and_containment(client: SandboxClient) -> None:
    await client.write_text_file("s", "/root/notes/a.txt", "one\ntwo\nthree\n")
    whole = await client.read_text_file("s", "/root/notes/a.txt")
    assert whole.content == "one\ntwo\nthree\n"
    part = await client.read_text_file("s", "/root/notes/a.txt", line=2, limit=1)
    assert part.content == "two\n"
    done = await client.create_terminal("s", "ln -s /etc /root/etc-link")
    await client.wait_for_terminal_exit("s", done.terminal_id)
    with pytest.raises(RequestError) as refused:
        await client.read_text_file("s", "/root/etc-link/hostname", **{WITHIN_KEY: ["/root"]})
    assert "resolves outside" in str(refused.value.data)
    with pytest.raises(RequestError) as refused:
        await client.write_text_file("s", "/root/etc-link/x", "x", **{WITHIN_KEY: ["/root"]})
    assert "resolves outside" in str(refused.value.data)
    with pytest.raises(RequestError) as missing:
        await client.read_text_file("s", "/root/missing.txt")
    assert "No such file" in str(missing.value.data)


async def test_a_file_too_large_to_read_whole_is_refused_not_cut(client: SandboxClient) -> None:
    from worker.acp.sandbox_fs import MAX_READ_BYTES

    made = await client.create_terminal("s", f"head -c {MAX_READ_BYTES + 10} /dev/zero > /root/big")
    await client.wait_for_terminal_exit("s", made.terminal_id)
    with pytest.raises(RequestError) as refused:
        await client.read_text_file("s", "/root/big")
    assert "larger than" in str(refused.value.data)


async def test_permission_picks_the_most_permissive_allow(client: SandboxClient) -> None:
    from acp.schema import PermissionOption

    options = [
        PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
        PermissionOption(option_id="once", name="Once", kind="allow_once"),
        PermissionOption(option_id="always", name="Always", kind="allow_always"),
    ]
    answer = await client.request_permission("s", None, options)
    assert answer.outcome.outcome == "selected"
    assert answer.outcome.option_id == "always"  # type: ignore[union-attr]
