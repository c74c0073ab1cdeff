"""Reward files: reward.json preferred, reward.txt otherwise, both must agree, [0, 1] only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from worker.verifier import RewardError, read_reward


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
        ({"reward_json": '{"reward": 1}', "reward_txt": "0"}, "says"),
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
