"""Tampering probes on both environments: a ``script:`` agent (root in the sandbox) changes what
the verifier runs or loads. Each such trial is a failed, score-eligible row with reason
``verifier_tampered``, the evidence in its result.json and in ``trials show``; an agent that
installs a module and a program under new names, and uses them, keeps its reward where the task
declares them its work product ([verifier].work_product), and loses it where it does not.

Most probes replace a program with a script that writes a reward of 1: a verifier that ran on
the changed ground would pay it. On ``local`` the host's system folders are read-only binds and
only ``/usr/local``, ``/opt`` and HOME are writable: a probe aimed at a read-only place must be
refused there (its log says so) and still earn nothing. Docker is skipped where no Docker Engine
answers; local where the worker is not root (its ``/usr/local`` is then read-only, and the
task's Dockerfile installs into it).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.docker_images import ensure_test_image
from tests.worker.support import (
    make_task,
    run_payload,
    script,
    serve_worker,
    submit_and_follow,
)
from worker.viewer.cli import summary

ENVIRONMENTS = [
    pytest.param("local", id="local"),
    pytest.param("docker", id="docker", marks=pytest.mark.docker),
]

# The image has a test runner of its own, which the verifier starts by name through PATH.
RUNNER = "/usr/local/bin/run-checks"
DOCKERFILE = f"""\
FROM python:3.11-slim
WORKDIR /root
RUN printf '#!/bin/sh\\nexec python3 /tests/check.py\\n' > {RUNNER} && chmod 755 {RUNNER}
RUN site=$(python3 -c 'import site; print(site.getsitepackages()[0])') && mkdir -p "$site" && \\
    echo 'OK = True' > "$site/checkhelp.py"
"""
TEST_SH = """\
#!/bin/bash
export PATH="$HOME/.local/bin:$PATH"  # as uv's installer has it
bash -c run-checks
"""
CHECK_PY = """\
import checkhelp  # the image's own helper module
import pathlib
answer = pathlib.Path("/root/answer.txt")
ok = answer.exists() and answer.read_text().strip() == "42"
pathlib.Path("/logs/verifier/reward.txt").write_text("1\\n" if ok else "0\\n")
"""
FAKE = "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\nexit 0\n"
# Every probe has $FAKE: a script that writes a reward of 1.
PROBES = {
    "interpreter": 'cat "$FAKE" > /usr/bin/python3.11',
    "shell-bash": 'cat "$FAKE" > /bin/bash',
    "shell-sh": 'ln -sf "$FAKE" /bin/sh',
    "test-runner": f'cat "$FAKE" > {RUNNER}',
    "shared-library": "printf '\\0' >> \"$(ls /usr/lib/x86_64-linux-gnu/libm.so.6 "
    '/usr/lib/aarch64-linux-gnu/libm.so.6 2>/dev/null | head -n 1)"',
    "loader-preload": "echo /tmp/evil.so > /etc/ld.so.preload",
    "path-shadow": 'mkdir -p /usr/local/sbin && cp "$FAKE" /usr/local/sbin/python3 && '
    "chmod 755 /usr/local/sbin/python3",
    "pth-hook": "d=$(python3 -c 'import site; print(site.getsitepackages()[0])') && "
    'mkdir -p "$d" && echo "import os; os.system(\'true\')" > "$d/zz_hook.pth"',
    # A hook under a name that is not UTF-8: Python's site runs it all the same.
    "odd-name-pth": "d=$(python3 -c 'import site; print(site.getsitepackages()[0])') && "
    'mkdir -p "$d" && echo "import os" > "$d/zz$(printf \'\\377\').pth"',
    "home-bin-shadow": 'mkdir -p /root/.local/bin && cp "$FAKE" /root/.local/bin/bash',
    "user-site-shadow": "d=$(python3 -c 'import site; print(site.getusersitepackages())') && "
    'mkdir -p "$d" && printf "%s\\n" "import os" '
    "\"open('/logs/verifier/reward.txt', 'w').write('1')\" 'os._exit(0)' > \"$d/checkhelp.py\"",
    "sitecustomize": "d=$(python3 -c 'import site; print(site.getsitepackages()[0])') && "
    'mkdir -p "$d" && echo \'import os\' > "$d/sitecustomize.py"',
    "stdlib-shadow": "echo 'x = 1' > /usr/lib/python3.11/pathlib_evil.py && "
    "mkdir -p /usr/lib/python3.11/answerlib && touch /usr/lib/python3.11/answerlib/__init__.py",
}
# What a local sandbox lets an agent write (docs/sandboxes.md, "Writable places"): the probes that
# aim elsewhere must find a read-only file system there.
WRITABLE_LOCALLY = {
    "test-runner",
    "path-shadow",
    "pth-hook",
    "odd-name-pth",
    "home-bin-shadow",
    "user-site-shadow",
    "sitecustomize",
}
# A compiled module planted in the standard library's __pycache__ for a source that had none
# (Python itself writes those, so they are no evidence): the verifier must not load it.
PYC_PROBE = """\
python3 - <<'EOF'
import importlib._bootstrap_external as ext, importlib.util, os, pathlib
source = "/usr/lib/python3.11/pathlib.py"
body = "open('/logs/verifier/reward.txt', 'w').write('1')\\nimport os\\nos._exit(0)\\n"
code = compile(body, source, "exec")
st = os.stat(source)
cache = pathlib.Path(importlib.util.cache_from_source(source))
cache.parent.mkdir(parents=True, exist_ok=True)
cache.write_bytes(ext._code_to_timestamp_pyc(code, st.st_mtime, st.st_size))
EOF
"""
# The legitimate agent's work: a module where python3 finds it and a program under a new name.
INSTALL = """\
#!/bin/sh
set -e
site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
mkdir -p "$site/answerlib"
echo 'ANSWER = 42' > "$site/answerlib/__init__.py"
printf '#!/bin/sh\\necho 42\\n' > /usr/local/bin/answer-tool
chmod 755 /usr/local/bin/answer-tool
python3 -c 'import answerlib' && answer-tool > /dev/null
"""
INSTALL_TEST = """\
#!/bin/bash
from_module=$(python3 -c 'import answerlib; print(answerlib.ANSWER)')
from_program=$(answer-tool)
if [ "$from_module" = 42 ] && [ "$from_program" = 42 ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""


UPGRADE = f"""\
#!/bin/sh
echo '# rewritten by an upgrade' >> {RUNNER}
echo 42 > /root/answer.txt
"""
# The task says the rewritten program is the agent's: then the verifier would run the agent's
# copy, so the row stays tampered.
UPGRADE_DECLARED = f'work_product = ["{RUNNER}", "/root/answer.txt"]'


# A verifier that is slow where the agent's caches are missing (as test.sh installing again
# what the agent's sandbox already had): 25 s, past the task's 20 s but within the regrade's 2x.
SLOW_FRESH_TEST = """\
#!/bin/sh
[ -e /root/.cache/warm ] || sleep 25
if [ "$(cat /root/answer.txt 2>/dev/null)" = "42" ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""
WARM_SOLVE = (
    "#!/bin/sh\nmkdir -p /root/.cache && touch /root/.cache/warm\necho 42 > /root/answer.txt\n"
)


@pytest.fixture(params=ENVIRONMENTS)
def environment(request: pytest.FixtureRequest) -> str:
    if request.param == "local" and os.geteuid() != 0:
        pytest.skip("local: /usr/local is copy-on-write only where the worker is root")
    return str(request.param)


@pytest.fixture
def tasks_dir(tmp_path: Path, environment: str, request: pytest.FixtureRequest) -> Path:
    if environment == "docker":  # also tags python:3.11-slim (no registry here)
        ensure_test_image(request.getfixturevalue("docker_client"), "python")
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    make_task(
        tasks, "checked", test_sh=TEST_SH, dockerfile=DOCKERFILE, extra_tests={"check.py": CHECK_PY}
    )
    # An installed module and program are the work product only where the task says so:
    # otherwise what the verifier imports and runs from the system folders comes from the image.
    make_task(
        tasks,
        "installs",
        test_sh=INSTALL_TEST,
        solve_sh=INSTALL,
        verifier_toml='work_product = ["/usr/local/lib", "/usr/local/bin/answer-tool"]',
    )
    make_task(tasks, "installs-undeclared", test_sh=INSTALL_TEST, solve_sh=INSTALL)
    # A solution whose install rewrites a file the image had (as `pip install` upgrading the
    # image's setuptools does): graded on the image plus its work product, it passes.
    for name, toml in (("upgrades", ""), ("upgrades-declared", UPGRADE_DECLARED)):
        make_task(
            tasks,
            name,
            test_sh=TEST_SH,
            dockerfile=DOCKERFILE,
            extra_tests={"check.py": CHECK_PY},
            solve_sh=UPGRADE,
            verifier_toml=toml,
        )
    make_task(
        tasks, "slow-fresh", test_sh=SLOW_FRESH_TEST, solve_sh=WARM_SOLVE, verifier_timeout=20
    )
    make_task(tasks, "plain", verifier_timeout=10)
    return tasks


@pytest.fixture
async def http(
    tmp_path: Path, tasks_dir: Path, environment: str
) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_worker(tmp_path, tasks_dir, environment, concurrency=2, timeout=60) as client:
        yield client


async def test_tampering_fails_the_row_and_a_new_install_keeps_its_reward(
    http: httpx.AsyncClient, tmp_path: Path, environment: str
) -> None:
    fake = tmp_path / "fake.sh"
    fake.write_text(FAKE)
    specs = {
        name: script(
            tmp_path,
            name,
            f'FAKE=/tmp/fake.sh\ncat > "$FAKE" <<\'EOF\'\n{FAKE}EOF\nchmod 755 "$FAKE"\n{body}\n',
        )
        for name, body in PROBES.items()
    }
    runs = [("checked", spec) for spec in specs.values()]
    runs += [("checked", "oracle"), ("checked", "nop"), ("installs", "oracle")]
    runs += [("checked", script(tmp_path, "pyc", PYC_PROBE))]
    results = await asyncio.gather(
        *(
            submit_and_follow(http, run_payload([task], agent=spec), timeout=300)
            for task, spec in runs
        )
    )
    by_name = dict(zip([*specs, "oracle", "nop", "install", "pyc"], results, strict=True))
    pyc_run, _, pyc_status = by_name.pop("pyc")
    (pyc,) = pyc_status["rows"]
    assert pyc["score_eligible"] and pyc["reward"] == 0.0, pyc
    if environment == "local":
        _assert_refused(tmp_path, pyc_run, pyc, "pyc")
    for name in ("oracle", "install"):
        run_id, _, status = by_name.pop(name)
        (row,) = status["rows"]
        result = _result(tmp_path, run_id, row)
        assert row["passed"] and row["infra_failure_type"] is None, (
            name,
            result["failure"],
            result.get("error"),  # first: a long message is cut, and these say why
            result["verifier"],
            row,
        )
        assert result["failure"] is None and "tampering" not in result["verifier"], result
    (nop,) = by_name.pop("nop")[2]["rows"]
    assert nop["score_eligible"] and not nop["passed"], nop
    for name, (run_id, _, status) in by_name.items():
        (row,) = status["rows"]
        assert row["reward"] == 0.0 and not row["passed"], f"probe {name} earned a reward: {row}"
        result = _result(tmp_path, run_id, row)
        assert row["score_eligible"] and row["infra_failure_type"] is None, (
            name,
            result["failure"],
            result.get("error"),  # first: a long message is cut, and these say why
            row,
            result,
        )
        if environment == "local" and name not in WRITABLE_LOCALLY:
            assert result["failure"] != "verifier_tampered", (name, result)
            _assert_refused(tmp_path, run_id, row, name)
            continue
        assert result["failure"] == "verifier_tampered", (name, result)
        evidence = result["verifier"]["tampering"]
        assert evidence and all({"path", "change", "reason"} <= set(e) for e in evidence)
        assert "verifier_tampered" in (shown := summary(_trial(tmp_path, run_id, row)))
        assert evidence[0]["path"] in shown, shown


def _assert_refused(tmp_path: Path, run_id: str, row: dict[str, Any], name: str) -> None:
    """The probe's change did not take: the read-only file system refused it."""
    logs = list(_trial(tmp_path, run_id, row).rglob("script.txt"))
    said = "".join(p.read_text(errors="replace") for p in logs)
    assert "Read-only file system" in said, (name, logs, said)


def _trial(tmp_path: Path, run_id: str, row: dict[str, Any]) -> Path:
    return tmp_path / "jobs" / "runs" / run_id / "trials" / row["trial_id"]


def _result(tmp_path: Path, run_id: str, row: dict[str, Any]) -> dict[str, Any]:
    return json.loads((_trial(tmp_path, run_id, row) / "result.json").read_text())


@pytest.mark.docker
@pytest.mark.parametrize("environment", ["docker"], indirect=True)
async def test_folders_touched_and_what_the_harness_installed_are_not_evidence(
    tmp_path: Path, tasks_dir: Path, request: pytest.FixtureRequest
) -> None:
    """A folder whose only change is a file made and removed again is no evidence; what the
    harness installed (``trust_current_changes``) is forgiven until the agent changes it
    (docker; local: tests/worker/sandbox/test_local_sandbox.py)."""
    from tests.worker.trial.support import started_sandbox

    async with started_sandbox(
        "docker", tasks_dir / "checked", tmp_path / "sandbox", "tamper-trust", request
    ) as sandbox:
        made = await sandbox.exec(
            "touch /usr/lib/python3.11/tmpfile && rm /usr/lib/python3.11/tmpfile && "
            "mkdir -p /usr/local/lib/newtool && echo x > /usr/local/lib/newtool/data && "
            "mkdir -p /etc/ld.so.conf.d && "
            "echo /usr/local/lib/installed > /etc/ld.so.conf.d/installed.conf"
        )
        assert made.exit_code == 0, made
        evidence = await sandbox.tamper_evidence()
        assert evidence is not None
        assert {e["path"] for e in evidence} == {
            "/etc/ld.so.conf.d",
            "/etc/ld.so.conf.d/installed.conf",
        }, evidence
        await sandbox.trust_current_changes()
        assert await sandbox.tamper_evidence() == []
        await sandbox.exec("echo /tmp/evil >> /etc/ld.so.conf.d/installed.conf")
        again = await sandbox.tamper_evidence()
        assert again and again[0]["path"] == "/etc/ld.so.conf.d/installed.conf", again


async def test_tampering_left_out_of_the_work_product_is_graded_on_the_image(
    http: httpx.AsyncClient, tmp_path: Path, environment: str
) -> None:
    """A solution that also changed what the verifier runs is graded on the image plus its work
    product only (the agent's sandbox is not graded): right answers pass, the change stays as
    evidence; a probe that solves nothing earns nothing there; a change the task declares work
    product keeps the row tampered."""
    cheat = script(tmp_path, "cheat", f"cat > {RUNNER} <<'EOF'\n{FAKE}EOF\n")
    runs = [("upgrades", "oracle"), ("upgrades-declared", "oracle"), ("upgrades", cheat)]
    results = await asyncio.gather(
        *(
            submit_and_follow(http, run_payload([task], agent=spec), timeout=300)
            for task, spec in runs
        )
    )
    (upgraded, declared, cheated) = results
    run_id, _, status = upgraded
    (row,) = status["rows"]
    result = _result(tmp_path, run_id, row)
    assert row["passed"] and row["reward"] == 1.0 and result["failure"] is None, result
    verifier = result["verifier"]
    assert [e["path"] for e in verifier["tampering"]] == [RUNNER], verifier
    assert verifier["regrade"]["reward_in_agent_sandbox"] is None, verifier
    assert verifier["regrade"]["reward"] == 1.0, verifier
    excluded = {e["path"]: e["rule"] for e in verifier["work_product"]["excluded"]}
    assert excluded.get(RUNNER) == "system", verifier
    assert "graded on the image plus the work product only" in summary(
        _trial(tmp_path, run_id, row)
    )
    for run_id, _, status in (declared, cheated):
        (row,) = status["rows"]
        result = _result(tmp_path, run_id, row)
        assert row["reward"] == 0.0 and row["score_eligible"], result
        assert result["failure"] == "verifier_tampered", result
        assert [e["path"] for e in result["verifier"]["tampering"]] == [RUNNER], result
    declared_result = _result(tmp_path, declared[0], declared[2]["rows"][0])
    assert "regrade" not in declared_result["verifier"], declared_result
    cheated_result = _result(tmp_path, cheated[0], cheated[2]["rows"][0])
    assert cheated_result["verifier"]["regrade"]["reward"] == 0.0, cheated_result


@pytest.mark.parametrize("environment", ["local"], indirect=True)
async def test_the_regrade_gives_a_verifier_that_installs_again_more_time(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The regrade's sandbox lacks the agent's caches (left out: home-config), so its test.sh may
    take longer than in the agent's sandbox: it gets twice the task's timeout."""
    run_id, _, status = await submit_and_follow(
        http, run_payload(["slow-fresh"], agent="oracle"), timeout=300
    )
    (row,) = status["rows"]
    result = _result(tmp_path, run_id, row)
    assert row["passed"] and row["reward"] == 1.0, result
    regrade = result["verifier"]["regrade"]
    assert regrade["reward_in_agent_sandbox"] == 1.0 and regrade["reward"] == 1.0, regrade
    assert result["timing"]["regrade"] >= 25, result["timing"]


@pytest.mark.parametrize("environment", ["local"], indirect=True)
async def test_a_verifier_the_agent_hangs_is_a_scored_fail_not_infrastructure(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A FIFO in place of the answer hangs test.sh's read until its timeout: an unscored
    ``verifier_timeout`` would hide the agent's fail. Graded on the image plus the work product
    (where a FIFO is never carried) it is a scored 0; an honest answer still passes."""
    hang = script(tmp_path, "fifo", "mkfifo /root/answer.txt\n")
    (fifo, honest) = await asyncio.gather(
        submit_and_follow(http, run_payload(["plain"], agent=hang), timeout=300),
        submit_and_follow(http, run_payload(["plain"], agent="oracle"), timeout=300),
    )
    run_id, _, status = fifo
    (row,) = status["rows"]
    result = _result(tmp_path, run_id, row)
    assert row["score_eligible"] and row["reward"] == 0.0 and not row["passed"], result
    assert result["failure"] is None, result
    regrade = result["verifier"]["regrade"]
    assert regrade["reward_in_agent_sandbox"] is None and regrade["reward"] == 0.0, regrade
    assert "ran past" in regrade["why"], regrade
    (row,) = honest[2]["rows"]
    regraded = _result(tmp_path, honest[0], row)["verifier"]["regrade"]
    assert row["passed"] and regraded["reward_in_agent_sandbox"] == regraded["reward"] == 1.0
