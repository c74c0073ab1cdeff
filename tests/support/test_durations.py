"""The suite's longest-first order: figures read from a real pytest JUnit report, and a real
pytest-xdist run that hands out the recorded long tests first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import REPO_ROOT
from tests.support.durations import (
    DURATIONS_FILE,
    RECORD_AT_LEAST_SEC,
    from_junit,
    load,
    longest_first,
    write,
)

MODULE = textwrap.dedent(
    """\
    import time
    import pytest

    def test_quick():
        pass

    @pytest.mark.parametrize("n", [1, 2])
    def test_param(n):
        time.sleep(0.3 * n)

    class TestBox:
        def test_method(self):
            time.sleep(0.2)

    @pytest.mark.xdist_group("pair")
    def test_grouped():
        time.sleep(0.1)

    @pytest.mark.skip(reason="not run")
    def test_skipped():
        pass
    """
)


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "test_mod.py").write_text(MODULE)
    return tmp_path


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(cwd), *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "loadgroup"])
def test_a_junit_report_gives_each_test_id_its_time(tmp_path: Path, xdist: bool) -> None:
    root = _project(tmp_path)
    extra = ["-n", "2", "--dist", "loadgroup"] if xdist else ["-p", "no:xdist"]
    done = _pytest(root, "--junitxml=report.xml", "-q", "pkg/test_mod.py", *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    found = from_junit(root / "report.xml", root=root)
    assert set(found) == {
        "pkg/test_mod.py::test_quick",
        "pkg/test_mod.py::test_param[1]",
        "pkg/test_mod.py::test_param[2]",
        "pkg/test_mod.py::TestBox::test_method",
        "pkg/test_mod.py::test_grouped",  # without xdist's "@pair"
    }, found
    assert found["pkg/test_mod.py::test_param[2]"] >= 0.6
    assert found["pkg/test_mod.py::test_param[2]"] > found["pkg/test_mod.py::test_quick"]


def test_xdist_hands_out_the_recorded_tests_longest_first(tmp_path: Path) -> None:
    root = _project(tmp_path)
    figures = {
        "pkg/test_mod.py::test_param[1]": 9.0,
        "pkg/test_mod.py::TestBox::test_method": 40.0,
        "pkg/test_mod.py::test_grouped": 20.0,
    }
    (root / "durations.json").write_text(json.dumps({"tests": figures}))
    (root / "conftest.py").write_text(
        textwrap.dedent(
            """\
            import pathlib
            import pytest
            from tests.support.durations import load, longest_first

            @pytest.hookimpl(trylast=True)
            def pytest_collection_modifyitems(items):
                known = load(pathlib.Path(__file__).parent / "durations.json")
                tests = []
                for item in items:
                    mark = item.get_closest_marker("xdist_group")
                    group = mark.args[0] if mark else None
                    node = item.nodeid.removesuffix(f"@{group}") if group else item.nodeid
                    tests.append((node, group))
                items[:] = longest_first(items, tests, known)
            """
        )
    )
    # one worker: the order it runs the tests in is the order xdist handed them out
    done = _pytest(root, "-n", "1", "--dist", "loadgroup", "-v", "pkg/test_mod.py")
    assert done.returncode == 0, done.stdout + done.stderr
    ran = [
        line.split()[-1].split("::", 1)[1]
        for line in done.stdout.splitlines()
        if line.startswith("[gw0]") and ("PASSED" in line or "SKIPPED" in line)
    ]
    assert ran[:3] == ["TestBox::test_method", "test_grouped@pair", "test_param[1]"], ran
    assert ran[3:] == ["test_quick", "test_param[2]", "test_skipped"], ran


def test_the_recorded_tests_go_first_longest_first_groups_by_their_whole_time() -> None:
    known = {"a": 1.0, "b": 30.0, "g1": 20.0, "g2": 15.0, "c": 25.0}
    tests = [("q", None), ("a", None), ("g1", "grp"), ("b", None), ("r", None), ("c", None)]
    tests.insert(4, ("g2", "grp"))
    order = longest_first([node for node, _ in tests], tests, known)
    # the group's 35 s outranks b's 30 s; unrecorded q and r keep their order, last
    assert order == ["g1", "g2", "b", "c", "a", "q", "r"]


def test_writing_keeps_only_slow_tests_and_reads_back(tmp_path: Path) -> None:
    target = tmp_path / "durations.json"
    count = write({"slow": RECORD_AT_LEAST_SEC + 1, "quick": RECORD_AT_LEAST_SEC / 2}, target)
    assert count == 1
    assert load(target) == {"slow": round(RECORD_AT_LEAST_SEC + 1, 1)}


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"tests": [1]}'])
def test_an_unreadable_file_means_no_figures(tmp_path: Path, text: str) -> None:
    broken = tmp_path / "durations.json"
    broken.write_text(text)
    assert load(broken) == {}
    assert load(tmp_path / "missing.json") == {}


def test_the_committed_figures_name_tests_of_this_suite() -> None:
    recorded = load(DURATIONS_FILE)
    assert len(recorded) >= 50, "tests/durations.json is missing or nearly empty"
    missing = [node for node in recorded if not (REPO_ROOT / node.split("::")[0]).is_file()]
    # a renamed module leaves stale figures (harmless, but the file should be refreshed)
    assert len(missing) <= len(recorded) // 10, missing[:10]


def test_the_command_reports_a_bad_report_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "report.xml"
    bad.write_text("<testsuites><testsuite")
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.durations", str(bad)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "cannot read the JUnit report" in done.stderr, done.stderr
    before = json.loads(DURATIONS_FILE.read_text())
    assert before["tests"], "the committed figures were lost"
