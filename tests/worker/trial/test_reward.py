"""Reward files: the verifier's own decide (the lower when reward.json and reward.txt disagree),
one the agent could have supplied never does, [0, 1] only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
