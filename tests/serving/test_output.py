"""The output-path rule every command shares (``serving/output.py``): missing folders are made
only inside the current folder; elsewhere a missing folder is one error naming it, and nothing
is created (issue #32: ``trials view -o /nonexistent-dir/t.html`` made ``/nonexistent-dir``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.output import OutputPathError, prepare_output_dir, prepare_output_file


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "here"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def test_missing_folders_inside_the_current_folder_are_made(here: Path) -> None:
    assert prepare_output_file(Path("results/deep/NAME.json")) == Path("results/deep/NAME.json")
    assert (here / "results" / "deep").is_dir()
    prepare_output_file(here / "abs" / "x.json")  # absolute, but inside the current folder
    assert (here / "abs").is_dir()
    prepare_output_dir(Path("out/sub"))
    assert (here / "out" / "sub").is_dir()


def test_an_existing_folder_anywhere_is_fine(here: Path, tmp_path: Path) -> None:
    prepare_output_file(tmp_path / "t.html")
    prepare_output_file(Path("t.html"))


@pytest.mark.parametrize("relative", [False, True])
def test_a_missing_folder_outside_the_current_one_is_an_error_and_nothing_is_made(
    here: Path, tmp_path: Path, relative: bool
) -> None:
    target = tmp_path / "gone" / "deeper" / "t.html"
    named = Path("../gone/deeper/t.html") if relative else target
    with pytest.raises(OutputPathError) as raised:
        prepare_output_file(named, "-o")
    first_missing = named.parent.parent
    assert str(raised.value) == (
        f"-o: folder {first_missing} does not exist (create it first: missing folders are made "
        "only inside the current folder)"
    )
    assert not (tmp_path / "gone").exists()


def test_an_output_folder_the_user_named_is_made_when_its_parent_exists(
    here: Path, tmp_path: Path
) -> None:
    prepare_output_dir(tmp_path / "results")
    assert (tmp_path / "results").is_dir()
    with pytest.raises(OutputPathError, match=r"folder .*/nope does not exist"):
        prepare_output_dir(tmp_path / "nope" / "results")
    assert not (tmp_path / "nope").exists()


def test_a_file_where_a_folder_should_be_is_named(here: Path) -> None:
    (here / "plain").write_text("x")
    with pytest.raises(OutputPathError, match=r"--output: plain is not a folder"):
        prepare_output_file(Path("plain/t.html"))
    (here / "adir").mkdir()
    with pytest.raises(OutputPathError, match=r"--output: adir is a folder, not a file"):
        prepare_output_file(Path("adir"))
