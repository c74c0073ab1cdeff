"""The look at what test.sh installs on the image alone (a module pass's shadow check) runs once
per task, even when several trials of the task pass at once: the others wait for it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.worker.support import make_engine, run_rows
from tests.worker.trial.test_implicit_inputs import MODULE_TEST, UVX_TEST, _task, _toolchain

INSTANCES = 3


@pytest.mark.timeout(900)
async def test_trials_of_a_task_passing_at_once_share_one_image_listing(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    image = _toolchain("local", request)  # skips, naming what this host lacks
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    _task(
        tasks,
        "module-answer",
        image,
        test_sh=UVX_TEST,
        test_outputs=MODULE_TEST,
        solve_sh="#!/bin/sh\necho 'ANSWER = 42' > /root/answerlib.py\n",
    )
    # Tests of its own, unlike any other task's of this process: the look is cached per task
    # content, and a task of test_implicit_inputs run before it on this worker is the same.
    (tasks / "module-answer" / "tests" / "unique.txt").write_text(f"{uuid.uuid4()}\n")
    jobs = tmp_path / "jobs"
    engine = make_engine(jobs, tasks, "local", concurrency=INSTANCES)
    await engine.start()
    try:
        done = await run_rows(
            engine, jobs, ["module-answer"], "oracle", config={"num_instances": INSTANCES}
        )
    finally:
        await engine.close()
    assert len(done) == INSTANCES
    for row, result, _ in done:
        assert row["reward"] == 1.0 and row["passed"], result.get("reason")
        # the answer module was a candidate the shadow check looked at
        excluded = result["verifier"].get("work_product", {}).get("excluded") or []
        assert not [e for e in excluded if "answerlib" in str(e.get("path"))], excluded
    looked = [folder.name for _, _, folder in done if (folder / "image-listing").exists()]
    assert len(looked) == 1, f"trials that ran the image-alone verifier: {looked}"


def test_what_the_tests_install_is_read_again_when_the_task_is_edited(tmp_path: Path) -> None:
    """Per-task facts are keyed by content: a task edited in place under a running worker (a new
    version of the task set in its tasks folder) is read again, and a copy of a task elsewhere
    shares the first reading."""
    from task_sets.task import load_task
    from tests.support import make_task
    from worker.trial import lifecycle

    folder = make_task(tmp_path / "tasks", "edited", test_sh=UVX_TEST)
    before = lifecycle._tests_facts(load_task(folder))
    script = folder / "tests" / "test.sh"
    script.write_text(
        script.read_text().replace("--with pytest==8.4.1", "--with pytest==8.4.1 --with pyyaml")
    )
    after = lifecycle._tests_facts(load_task(folder))
    assert "yaml" in after.installed_modules and "yaml" not in before.installed_modules

    copy = make_task(tmp_path / "copies", "edited", test_sh=script.read_text())
    assert lifecycle._tests_facts(load_task(copy)) is after
