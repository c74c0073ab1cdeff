"""The CLI entry point answers --help for itself and for every sub-command, with the real content.

The top-level listing comes from the ``COMMANDS`` table, so a name in it proves little; what is
checked is that each sub-command (and each of its own sub-commands) resolves to the component's
command object and that its ``--help`` shows that object's usage, help text, options, arguments
and sub-commands.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from skillsbench_agentbeats.cli import COMMANDS, cli


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_top_level_help_lists_every_command_with_its_summary() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith("Usage: ")
    assert "Score AI agents on SkillsBench through AgentBeats." in out
    listed = dict(
        (m.group(1), _flat(m.group(2))) for m in re.finditer(r"^  (\S+)\s+(.+)$", out, re.M)
    )
    for name, (_, _, summary) in COMMANDS.items():
        assert name in listed, f"{name} missing from --help"
        # click may shorten a long summary with "..."; the start must be the table's text.
        assert summary.startswith(listed[name].removesuffix("...")), (name, listed[name])


def _walk(command: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            if not sub.hidden:
                yield from _walk(sub, [*path, name])


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_sub_command_help_shows_its_own_content(name: str) -> None:
    module_name, attr, _ = COMMANDS[name]
    real = getattr(importlib.import_module(module_name), attr)
    assert isinstance(real, click.Command)
    # The lazy group hands out the component's own object, not a stand-in.
    with click.Context(cli) as ctx:
        assert cli.get_command(ctx, name) is real
    runner = CliRunner()
    for path, command in _walk(real, [name]):
        result = runner.invoke(cli, [*path, "--help"], prog_name="skillsbench-agentbeats")
        where = " ".join(path)
        assert result.exit_code == 0, (where, result.output, result.exception)
        out = result.output
        assert out.startswith(f"Usage: skillsbench-agentbeats {where}"), (where, out)
        assert "not available in this build" not in out
        help_text = (command.help or "").split("\b")[0].split("\n\n")[0]
        assert help_text.strip(), f"{where} has no help text"
        # Compared without whitespace: click re-wraps, also after a hyphen.
        assert "".join(help_text.split()) in "".join(out.split()), (where, help_text, out)
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert any(opt in out for opt in param.opts), (where, param.opts)
            elif isinstance(param, click.Argument):
                assert param.make_metavar(ctx=click.Context(command)) in out.splitlines()[0], (
                    where,
                    param.name,
                )
        if isinstance(command, click.Group):
            subs = [n for n, c in command.commands.items() if not c.hidden]
            assert subs, f"{where} is a group without sub-commands"
            for sub in subs:
                assert re.search(rf"^  {re.escape(sub)}\b", out, re.M), (where, sub)


@pytest.mark.parametrize(
    "command", [["worker", "--jobs-dir", "{tmp}/jobs"], ["green"], ["purple", "placeholder"]]
)
def test_a_port_in_use_is_one_error_line_for_every_server(
    command: list[str], tmp_path: object
) -> None:
    """The same error style for the same problem: the port is bound before anything starts."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        args = [a.replace("{tmp}", str(tmp_path)) for a in command]
        done = subprocess.run(
            [sys.executable, "-m", "skillsbench_agentbeats", *args, "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


@pytest.mark.parametrize("command", [["worker"], ["green"], ["purple", "placeholder"]])
def test_a_port_out_of_range_is_a_usage_error(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", *command, "--port", "99999"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: Invalid value for '--port': 99999 is not in the range")
    assert len(done.stderr.splitlines()) == 1
