"""Reward files: the verifier's own decide (the lower when reward.json and reward.txt disagree),
one the agent could have supplied never does, [0, 1] only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from worker.trial.tests_report import ctrf_report_name
from worker.trial.verifier import RewardError, read_reward


def _write(folder: Path, **files: str) -> Path:
    for name, text in files.items():
        (folder / name.replace("_", ".")).write_text(text)
    return folder


@pytest.mark.parametrize(
    ("files", "value", "source"),
    [
        ({"reward_txt": "1\n"}, 1.0, "reward.txt"),
        ({"reward_txt": " 0.25 "}, 0.25, "reward.txt"),
        ({"reward_json": '{"reward": 0.5}'}, 0.5, "reward.json"),
        ({"reward_json": "0"}, 0.0, "reward.json"),
        ({"reward_json": '{"reward": 1}', "reward_txt": "1.0"}, 1.0, "reward.json"),
    ],
)
def test_valid_rewards(tmp_path: Path, files: dict[str, str], value: float, source: str) -> None:
    reward = read_reward(_write(tmp_path, **files))
    assert (reward.value, reward.source) == (value, source)


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({}, "neither"),
        ({"reward_txt": ""}, "empty"),
        ({"reward_txt": "passed"}, "one number"),
        ({"reward_txt": "1.5"}, "outside"),
        ({"reward_txt": "-0.1"}, "outside"),
        ({"reward_txt": "nan"}, "outside"),
        ({"reward_json": "{"}, "not JSON"),
        ({"reward_json": '{"score": 1}'}, "no 'reward'"),
        ({"reward_json": '{"reward": true}'}, "number"),
        ({"reward_json": '{"reward": "1"}'}, "number"),
    ],
)
def test_unusable_rewards(tmp_path: Path, files: dict[str, str], reason: str) -> None:
    with pytest.raises(RewardError, match=reason):
        read_reward(_write(tmp_path, **files))


def test_symlinked_reward_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("1")
    folder = tmp_path / "verifier"
    folder.mkdir()
    os.symlink(elsewhere, folder / "reward.txt")
    with pytest.raises(RewardError, match="symlink"):
        read_reward(folder)


@pytest.mark.parametrize(
    ("files", "value", "source"),
    [
        ({"reward_json": '{"reward": 1}', "reward_txt": "0"}, 0.0, "reward.txt"),
        ({"reward_json": '{"reward": 0.25}', "reward_txt": "1"}, 0.25, "reward.json"),
        # a broken file beside a good one: the good one decides, the broken one is noted
        ({"reward_json": "{", "reward_txt": "1"}, 1.0, "reward.txt"),
    ],
)
def test_disagreeing_files_give_the_lower_reward_scored(
    tmp_path: Path, files: dict[str, str], value: float, source: str
) -> None:
    reward = read_reward(_write(tmp_path, **files))
    assert (reward.value, reward.source) == (value, source)
    assert reward.notes, "the disagreement is recorded"


def test_a_reward_file_the_agent_supplied_never_decides(tmp_path: Path) -> None:
    # Real verifiers copy the agent's outputs (cp /root/*.json /logs/verifier/): its
    # reward.json lands beside the verifier's reward.txt.
    folder = _write(tmp_path, reward_json='{"reward": 1}', reward_txt="0")
    reward = read_reward(folder, influenced={"reward.json"})
    assert (reward.value, reward.source) == (0.0, "reward.txt")
    assert any("agent's work product" in note for note in reward.notes)


@pytest.mark.parametrize("planted", ['{"reward": 1}', "{ not json", '{"reward": 7}'])
def test_only_the_agents_reward_file_scores_zero(tmp_path: Path, planted: str) -> None:
    # Neither a planted pass nor a planted broken file: a scored 0, not an unscored row.
    reward = read_reward(_write(tmp_path, reward_json=planted), influenced={"reward.json"})
    assert (reward.value, reward.source) == (0.0, "none")
    assert reward.notes


# -- the tests' own report backs a reward above 0 (worker/trial/tests_report.py) --------------

CTRF_PASS = (
    '{"results": {"tool": {"name": "pytest"}, "summary": {"tests": 3, "passed": 3, "failed": 0}}}'
)


@pytest.mark.parametrize(
    ("script", "name"),
    [
        ("pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA -v\n", "ctrf.json"),
        (
            "uvx --with pytest-json-ctrf==0.3.5 pytest --ctrf=/logs/verifier/ctrf.json /tests",
            "ctrf.json",
        ),
        ('python3 -m pytest --ctrf "/logs/verifier/ctrf-report.json" /tests\n', "ctrf-report.json"),
        ("pytest --ctrf /logs/verifier/ctrf.json /tests | tee /logs/verifier/out.txt", "ctrf.json"),
        ('pytest --ctrf "$ctrf_output" /tests\n', None),  # a variable: not known here
        ("pytest --ctrf ctrf.json /tests\n", None),  # relative to a folder we do not know
        ("pytest --ctrf /tmp/ctrf.json /tests\n", None),  # not in the verifier's logs
        ("pytest --ctrf /logs/verifier/a.json t1\npytest --ctrf /logs/verifier/b.json t2\n", None),
        ("python3 -m pytest /tests -rA\n", None),
    ],
)
def test_the_report_test_sh_asks_for(script: str, name: str | None) -> None:
    assert ctrf_report_name(script) == name


@pytest.mark.parametrize(
    ("report", "reward", "kept"),
    [
        (CTRF_PASS, 1.0, 1.0),
        (None, 1.0, 0.0),  # pytest ended before its session finished
        ("", 1.0, 0.0),
        ("{not json", 1.0, 0.0),
        ('{"results": {"summary": {"tests": 0, "passed": 0, "failed": 0}}}', 1.0, 0.0),
        ('{"results": {"summary": {"tests": 3, "passed": 2, "failed": 1}}}', 1.0, 0.0),
        ('{"results": {"summary": {"tests": 3, "passed": 2, "failed": 1}}}', 0.66, 0.66),
        ('{"results": {"summary": {"tests": 3, "passed": 0, "failed": 3}}}', 0.5, 0.0),
        ('{"results": {"summary": {"tests": "x", "passed": 1}}}', 1.0, 0.0),
    ],
)
def test_a_reward_above_zero_needs_the_report(
    tmp_path: Path, report: str | None, reward: float, kept: float
) -> None:
    (tmp_path / "reward.txt").write_text(f"{reward}\n")
    if report is not None:
        (tmp_path / "ctrf.json").write_text(report)
    got = read_reward(tmp_path, report="ctrf.json")
    assert got.value == kept
    if kept != reward:
        assert got.source == "none" and any("ctrf.json" in note for note in got.notes), got
    # without a report asked for, the reward file decides as before
    assert read_reward(tmp_path).value == reward


def test_a_zero_needs_no_report_and_a_linked_report_backs_nothing(tmp_path: Path) -> None:
    (tmp_path / "reward.txt").write_text("0\n")
    assert read_reward(tmp_path, report="ctrf.json").value == 0.0
    (tmp_path / "reward.txt").write_text("1\n")
    (tmp_path / "real.json").write_text(CTRF_PASS)
    (tmp_path / "ctrf.json").symlink_to(tmp_path / "real.json")
    assert read_reward(tmp_path, report="ctrf.json").value == 0.0
