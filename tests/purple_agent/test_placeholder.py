"""The placeholder participant over real A2A: 1.x in-process, 0.3.x from its own environment."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from purple_agent.placeholder import REPLY, PlaceholderAgent, card_for
from purple_agent.server import build_app, public_url
from tests.purple_agent.support import BridgeClient, serving, spawned
from worker.bridge.protocol import ShellContext

HERE = Path(__file__).parent
CONTEXT = ShellContext(task_id="hello-world", limits={"max_turns": 20}).to_data()


async def test_card_declares_a2a_1_0_and_0_3() -> None:
    app = lambda url: build_app(card_for(url), PlaceholderAgent())  # noqa: E731
    async with serving(app) as url, httpx.AsyncClient() as http:
        card = (await http.get(f"{url}/.well-known/agent-card.json")).json()
    versions = {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]}
    assert versions == {("JSONRPC", "1.0"), ("JSONRPC", "0.3")}
    assert card["url"] == url + "/"  # the 0.3 view needs a top-level url
    assert card["skills"] and card["name"]


async def test_placeholder_answers_politely_without_an_action() -> None:
    app = lambda url: build_app(card_for(url), PlaceholderAgent())  # noqa: E731
    async with serving(app) as url, BridgeClient(url) as bridge:
        bridge.context_id = "trial-0001"  # the bridge may choose the context id itself
        first = await bridge.send("Write hello to hello.txt", CONTEXT)
        context_id = bridge.context_id
        second = await bridge.send("Are you sure?")
    for reply in (first, second):
        assert reply.state == "TASK_STATE_COMPLETED"
        assert reply.text == REPLY
        assert reply.action is None and reply.data == []
    assert context_id == bridge.context_id == "trial-0001"  # one conversation, both turns


def test_public_url() -> None:
    # Bound to every interface: never 127.0.0.1, which a peer elsewhere reaches itself by.
    assert public_url("0.0.0.0", 9010, None) not in (
        "http://127.0.0.1:9010/",
        "http://0.0.0.0:9010/",
    )
    assert public_url("::1", 9010, None) == "http://[::1]:9010/"
    assert public_url("0.0.0.0", 9010, "http://agent:9010/") == "http://agent:9010/"


def test_a2a_0_3_client_reads_card_and_reply(a2a03_python: Path, tmp_path: Path) -> None:
    with spawned("purple_agent.placeholder", {}, tmp_path / "placeholder.log") as agent:
        turns = [{"text": "Write hello to hello.txt", "data": CONTEXT}, {"text": "and now?"}]
        done = subprocess.run(
            [str(a2a03_python), str(HERE / "a2a03_client.py"), agent.url],
            input=json.dumps(turns),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["card"]["url"] == agent.url + "/"
    assert out["card"]["name"] == "SkillsBench placeholder participant"
    assert [r["state"] for r in out["replies"]] == ["completed", "completed"]
    assert all(r["texts"] == [REPLY] and r["data"] == [] for r in out["replies"])
