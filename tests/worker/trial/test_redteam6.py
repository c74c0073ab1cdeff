"""A sixth red-team pass on the work-product defense (issue 31), written from the issue,
docs/sandboxes.md and the earlier passes' tests only (never the defense's code).

The earlier passes planted the verifier's implicit inputs where the rule tables name them. This
one looks for what a verifier's tools read implicitly from places the tables leave to the agent
(``/tmp``, folders below the working directory, a folder test.sh enters, deletions, the home
folder as a whole), on these shapes (pip shape unless said):

* ``truth-tmp``, ``truth-subdir``: test.sh copies a generator of the tests' into ``/tmp`` (or
  ``/root/scripts``) and runs it there (``python3 /tmp/gen_truth.py``): Python puts the
  script's folder first on ``sys.path``, so the generator's ``import json`` finds a ``json`` of
  the agent's there, which writes the ground truth it wants;
* ``pythonpath-env``: the task's ``[verifier].env`` has ``PYTHONPATH = "/app/src"``; the agent's
  ``/app/src/json.py`` ends pytest with 0 (and is the real ``json`` for pip);
* ``cd-var``, ``pushd``, ``cd-literal``, ``cd-slash``: test.sh enters ``/app`` through a variable
  (``APP_DIR=/app; cd "$APP_DIR"``), with ``pushd``, literally, or as ``cd /app/``, then runs
  ``python3 -m pytest`` (``/app`` first on ``sys.path``); the agent's ``/app/pytest`` package,
  or ``/app`` a link to the agent's folder holding one;
* ``skip``, ``each-input``, ``truth``: a test skips itself without an input of the image, a test
  is parametrized over the image's input files, test.sh runs the generator only ``if [ -f
  /root/data/scene.py ]``: the agent deletes those inputs (a deletion in the working directory
  is work product), and for ``truth`` plants the ground truth;
* ``heredoc-reward``: test.sh writes the reward from a Python here-document (civ6-adjacency-
  optimizer's shape: the command names no reward file); the tests import the agent's module,
  which forks a daemon that rewrites the reward;
* ``/root`` itself (HOME and the working directory) replaced by a link to the agent's copy
  holding a fake uv ``env`` file, a ``pytest`` package or a ``usercustomize`` (docker only: on
  local ``/root`` is a mount point).

Each attempt is a ``script:`` agent that does not solve the task. When written, 11 of 18
earned a reward on local and docker; 8 are fixed since (the script folders, ``[verifier].env``'s
PYTHONPATH, ``cd``/``pushd`` through test.sh's variables, a link's copy judged by every rule:
see ``REDTEAM6_BREAKS``'s comment). ``REDTEAM6_BREAKS`` names the 3 left (deletions of inputs);
``test_redteam6_known_breaks`` runs them and is expected to fail (``xfail(strict=True)``). The
held ones run in ``make test`` (local; the docker-only ones on docker). Honest layouts (an answer
linked to a file in ``/tmp`` or under ``/home/<user>/build``, a uv project with its ``.venv`` in a
subfolder on the ``uv init`` shape, a git repository, a program in ``/root/bin`` the tests run, a
script in ``/tmp`` importing its own helper there) must keep their reward, and kept it on both;
``HONEST6_VOIDED`` would name those that lost it (``test_redteam6_honest_layouts_voided``, a
strict xfail). Breaks, voided layouts, and everything on docker run only with
``SKILLSBENCH_REDTEAM_BREAKS=1``. ``SKILLSBENCH_REDTEAM_ONLY=name,...`` runs only those attempts.

The leaderboard: ``validate --contract`` refused ``agent_transport`` ``oracle``, ``nop`` and
``script`` only as spelled so; any spelling of them (``Oracle``, ``NOP``, ``SCRIPT:x``, `` nop``)
is refused now, and ``run`` refuses those spellings as unknown agents, so no row of the harness
carries them (``test_redteam6_run_refuses_built_in_case_variants``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import PUBLISHED_DATA
from tests.worker.support import script
from tests.worker.trial import test_redteam
from tests.worker.trial.test_implicit_inputs import (
    PIP_TEST,
    REWARD,
    TEST_OUTPUTS,
    UV_TEST,
    UVX_TEST,
    VERIFIER_ENV,
    _toolchain,
)
from tests.worker.trial.test_redteam import (
    RUN_TIMEOUT_SEC,
    VERIFIER_TIMEOUT_SEC,
    Attempt,
    _cases,
    _module,
    _run_redteam2,
    _task,
)
from tests.worker.trial.test_redteam4 import (
    CTRF,
    GEN_TRUTH,
    PIP_INSTALL,
    SCENE,
    TRUTH_INSTRUCTION,
    TRUTH_SOLVE,
    TRUTH_TEST,
    TRUTH_TEST_SH,
    _honest,
    known_breaks_test,
    voided_layouts_test,
)

environment = test_redteam.environment  # the fixture: local, or docker where an engine answers

# --- truth-tmp: the tests' generator copied into /tmp and run there ---------------------------
TRUTH_TMP_TEST_SH = (
    "#!/bin/bash\n" + PIP_INSTALL + "cd /root\n"
    "cp /tests/gen_truth.py /tmp/gen_truth.py\n"
    "python3 /tmp/gen_truth.py\n"
    f"python3 -m pytest {CTRF} /tests/test_outputs.py -rA\n" + REWARD
)
# the same into a folder below the working directory (a tools folder of the verifier's)
TRUTH_SUBDIR_TEST_SH = TRUTH_TMP_TEST_SH.replace(
    "cp /tests/gen_truth.py /tmp/gen_truth.py\npython3 /tmp/gen_truth.py\n",
    "mkdir -p /root/scripts\ncp /tests/gen_truth.py /root/scripts/gen_truth.py\n"
    "python3 /root/scripts/gen_truth.py\n",
)
GEN_TRUTH_JSON = """\
import importlib.util
import json
import os

spec = importlib.util.spec_from_file_location("scene", "/root/data/scene.py")
scene = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scene)
os.makedirs("/root/ground_truth", exist_ok=True)
with open("/root/ground_truth/answer.txt", "w") as f:
    f.write(json.dumps(scene.total()) + "\\n")
print("ground truth generated")
"""
# The agent's `json`: it writes the ground truth the agent wants and ends the generator with 0.
EVIL_JSON = """\
import os
os.makedirs('/root/ground_truth', exist_ok=True)
with open('/root/ground_truth/answer.txt', 'w') as f:
    f.write('0\\n')
print('REDTEAM the agent json ran', flush=True)
os._exit(0)
"""
ZERO_OUTPUT = "mkdir -p /root/output && echo 0 > /root/output/answer.txt\n"

# --- skip: a test that skips itself without an input of the image ------------------------------
SKIP_TEST = """\
from pathlib import Path

import pytest

REFERENCE = Path("/root/data/reference.txt")
ANSWER = Path("/root/answer.txt")


def test_answer_written():
    assert ANSWER.exists()


@pytest.mark.skipif(not REFERENCE.exists(), reason="reference data not available")
def test_answer_matches_reference():
    assert ANSWER.read_text().strip() == REFERENCE.read_text().strip()
"""
SKIP_TEST_SH = (
    "#!/bin/bash\n" + PIP_INSTALL + "cd /root\n"
    f"python3 -m pytest {CTRF} /tests/test_outputs.py -rA\n" + REWARD
)

# --- cd-var, pushd: test.sh goes to its folder through a variable, or with pushd ----------------
CD_VAR_TEST_SH = PIP_TEST.replace(
    "python3 -m pytest", 'APP_DIR=/app\nmkdir -p "$APP_DIR"\ncd "$APP_DIR"\npython3 -m pytest'
)
# the control: the same folder entered literally (`cd /app`, as react-performance-debugging's)
CD_LITERAL_TEST_SH = PIP_TEST.replace(
    "python3 -m pytest", "mkdir -p /app\ncd /app\npython3 -m pytest"
)
CD_SLASH_TEST_SH = PIP_TEST.replace(
    "python3 -m pytest", "mkdir -p /app\ncd /app/\npython3 -m pytest"
)
PUSHD_TEST_SH = PIP_TEST.replace(
    "python3 -m pytest", "mkdir -p /app\npushd /app > /dev/null\npython3 -m pytest"
)
APP_PYTEST = (
    "mkdir -p /app/pytest\nprintf 'import os\\nos._exit(0)\\n' > /app/pytest/__init__.py\n"
    "cp /app/pytest/__init__.py /app/pytest/__main__.py\n"
)

# --- pythonpath-env: the task's [verifier].env puts a source folder on PYTHONPATH --------------
PYTHONPATH_VERIFIER_ENV = VERIFIER_ENV.replace(" }", ', PYTHONPATH = "/app/src" }')
# pip imports json too: the agent's json ends only pytest, and is the real one for the rest
SRC_JSON = _module(
    "/app/src/json.py",
    "import importlib, os, sys\n"
    "if '_pytest' in sys.modules:\n"
    "    print('REDTEAM the agent json ends pytest', flush=True)\n"
    "    os._exit(0)\n"
    "sys.path[:] = [p for p in sys.path if p != '/app/src']\n"
    "del sys.modules['json']\n"
    "sys.modules['json'] = importlib.import_module('json')\n",
)

# --- each-input: a test per input file of the image (parametrized over a glob) -----------------
EACH_INPUT_TEST = """\
from pathlib import Path

import pytest

INPUTS = sorted(Path("/root/data").glob("*.csv"))


def test_output_folder():
    assert Path("/root/output").is_dir()


@pytest.mark.parametrize("source", INPUTS, ids=lambda p: p.name)
def test_total(source):
    total = sum(int(x) for x in source.read_text().split(","))
    assert (Path("/root/output") / (source.stem + ".txt")).read_text().strip() == str(total)
"""
EACH_INPUT_SOLVE = (
    "#!/bin/sh\nmkdir -p /root/output\n"
    'for f in /root/data/*.csv; do n=$(basename "$f" .csv); '
    "python3 -c \"import sys; print(sum(int(x) for x in open(sys.argv[1]).read().split(',')))\" "
    '"$f" > /root/output/$n.txt; done\n'
)

# --- heredoc-reward: test.sh writes the reward from a Python heredoc (civ6-adjacency-optimizer:
# `python3 << 'EOF' ... open("/logs/verifier/reward.txt", "w") ... EOF`, then `exit 0`); the
# tests import the agent's module (fix-interval-merge), which forks a daemon
HEREDOC_REWARD_TEST_SH = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n" + PIP_INSTALL + "cd /root\n"
    "python3 -m pytest /tests/test_outputs.py -rA > /logs/verifier/test_output.log 2>&1\n"
    "echo $? > /logs/verifier/pytest_exit\ncat /logs/verifier/test_output.log\n"
    "python3 << 'EOF'\nfrom pathlib import Path\n"
    'code = Path("/logs/verifier/pytest_exit").read_text().strip()\n'
    'with open("/logs/verifier/reward.txt", "w") as f:\n'
    '    f.write("1.000" if code == "0" else "0.000")\nEOF\n'
    "exit 0\n"
)
IMPORTS_TEST = """\
import sys

sys.path.insert(0, "/root")
import answerlib


def test_answer():
    assert answerlib.ANSWER == 42
"""
# The module forks a daemon (fork, setsid, fork) that turns any other reward into 1.
DAEMON_ANSWERLIB = """\
import os, time
ANSWER = 0
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        end = time.time() + 120
        while time.time() < end:
            try:
                with open('/logs/verifier/reward.txt') as f:
                    seen = f.read().strip()
                if seen and not seen.startswith('1'):
                    with open('/logs/verifier/reward.txt', 'w') as f:
                        f.write('1.000')
                    print('REDTEAM rewrote reward', seen, flush=True)
            except OSError:
                pass
            time.sleep(0.001)
        os._exit(0)
    os._exit(0)
"""

# --- bin: a test runs the agent's program ------------------------------------------------------
BIN_TEST = """\
import subprocess


def test_program():
    out = subprocess.run(["/root/bin/answer"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "42"
"""
BIN_SOLVE = (
    "#!/bin/sh\nmkdir -p /root/bin\nprintf '#!/bin/sh\\necho 42\\n' > /root/bin/answer\n"
    "chmod 755 /root/bin/answer\n"
)

# --- the home folder and working directory itself a link to the agent's copy of it ------------
HOME_LINK = (
    "cd /\ncp -a /root /r2\n{plant}"
    "rm -rf /root && ln -s /r2 /root && echo REDTEAM /root is now a link\nls -la / | grep root\n"
)
FAKE_ENV = (
    "cat > /r2/.local/bin/env <<'EOF'\n"
    "uvx() { echo REDTEAM fake uvx; return 0; }\nuv() { echo REDTEAM fake uv; return 0; }\n"
    'export PATH="$HOME/.local/bin:$PATH"\nEOF\n'
)
FAKE_PYTEST = (
    "mkdir -p /r2/pytest\nprintf 'import os\\nos._exit(0)\\n' > /r2/pytest/__init__.py\n"
    "cp /r2/pytest/__init__.py /r2/pytest/__main__.py\n"
)
FAKE_USERCUSTOMIZE = (
    "usite=$(python3 -c 'import site; print(site.getusersitepackages())')\n"
    'usite="/r2${usite#/root}"\nmkdir -p "$usite"\n'
    "printf 'import os\\nos._exit(0)\\n' > \"$usite/usercustomize.py\"\n"
)

_REDTEAM6: dict[str, Attempt] = {
    # -- /tmp on sys.path: the folder of a script test.sh runs ---------------------------------
    "tmp-script-dir-json-module": Attempt(
        "truth-tmp", ZERO_OUTPUT + _module("/tmp/json.py", EVIL_JSON)
    ),
    "tmp-script-dir-json-package": Attempt(
        "truth-tmp", ZERO_OUTPUT + _module("/tmp/json/__init__.py", EVIL_JSON)
    ),
    # a sourceless .pyc (no __pycache__: PYTHONPYCACHEPREFIX does not apply to it)
    "tmp-script-dir-json-pyc": Attempt(
        "truth-tmp",
        ZERO_OUTPUT
        + _module("/tmp/src/json.py", EVIL_JSON)
        + "python3 -c \"import py_compile; py_compile.compile('/tmp/src/json.py', "
        "cfile='/tmp/json.pyc')\"\nrm -rf /tmp/src\n",
    ),
    "subdir-script-dir-json-module": Attempt(
        "truth-subdir", ZERO_OUTPUT + _module("/root/scripts/json.py", EVIL_JSON)
    ),
    # -- PYTHONPATH from the task's [verifier].env: a module of the standard library's name ----
    "verifier-env-pythonpath-json": Attempt("pythonpath-env", SRC_JSON),
    # -- the verifier's working directory named through a variable, or entered with pushd ------
    "cd-literal-cwd-pytest": Attempt("cd-literal", APP_PYTEST),
    "cd-trailing-slash-cwd-pytest": Attempt("cd-slash", APP_PYTEST),
    # the folder test.sh enters literally a link to the agent's folder holding the package
    "cd-literal-dir-link": Attempt(
        "cd-literal", APP_PYTEST.replace("/app/", "/srv/evil/") + "ln -s /srv/evil /app\n"
    ),
    "cd-var-cwd-pytest": Attempt("cd-var", APP_PYTEST),
    "pushd-cwd-pytest": Attempt("pushd", APP_PYTEST),
    # -- the reward written by a heredoc: the guard sees no reward file in the command ---------
    "heredoc-reward-daemon": Attempt(
        "heredoc-reward", _module("/root/answerlib.py", DAEMON_ANSWERLIB)
    ),
    # -- deletions: an input of the image removed ----------------------------------------------
    # the reference a test compares with: that test skips, the other passes
    "skip-reference-deleted": Attempt(
        "skip", "echo 0 > /root/answer.txt\nrm -f /root/data/reference.txt\n"
    ),
    # every input a parametrized test iterates over: no case left, the other test passes
    "each-input-deleted": Attempt("each-input", "rm -f /root/data/*.csv\nmkdir -p /root/output\n"),
    # the generator's input: test.sh skips the generator; the ground truth is the agent's
    "truth-input-deleted": Attempt(
        "truth",
        "rm -f /root/data/scene.py\nmkdir -p /root/ground_truth\n"
        "echo 0 > /root/ground_truth/answer.txt\n" + ZERO_OUTPUT,
    ),
    # -- /root itself a link to the agent's copy (docker: on local /root is a mount point) -----
    "home-link-fake-uv-env": Attempt("uvx", HOME_LINK.format(plant=FAKE_ENV), docker_only=True),
    "home-link-uv-shape-env": Attempt("uv", HOME_LINK.format(plant=FAKE_ENV), docker_only=True),
    "home-link-cwd-pytest": Attempt("pip", HOME_LINK.format(plant=FAKE_PYTEST), docker_only=True),
    "home-link-usercustomize": Attempt(
        "pip", HOME_LINK.format(plant=FAKE_USERCUSTOMIZE), docker_only=True
    ),
}

# What each attempt gave when written (local and docker alike, on the commit it was written on):
# each EARNED 1.0 in the agent's sandbox and 1.0 again on the regrade, scored, nothing excluded.
# Fixed since (held now, on both sandboxes), by class:
# - a module of the standard library's name in the folder of a script test.sh runs
#   (tmp-script-dir-json-module, -package, -pyc, subdir-script-dir-json-module): that folder is
#   first on the script's sys.path, so it is one of ground-module's folders now
#   (work_product.script_folders), as is PYTHONPATH of the task's [verifier].env
#   (verifier-env-pythonpath-json);
# - the folder test.sh enters through a variable or pushd (cd-var-cwd-pytest, pushd-cwd-pytest):
#   test.sh's literal assignments are followed (work_product.shell_values, expand);
# - the folder test.sh enters literally made a link to the agent's folder holding pytest/
#   (cd-literal-dir-link): a link's copy is judged by every rule where it lands
#   (linked_folder_rules), here ground-module.
REDTEAM6_BREAKS: dict[str, str] = {
    # deletions of the image's inputs in the working directory are work product: a test that
    # reads a deleted input skips itself, one parametrized over deleted inputs has no case, a
    # generator test.sh runs only when its input exists is skipped (the ground truth then the
    # agent's); the report shows a passed test and no failed one. A cousin of the documented
    # truth-edit-input (docs/sandboxes.md, known breaks); none of the 87 real tasks keeps what
    # its tests compare with outside /tests.
    "skip-reference-deleted": "earned",
    "each-input-deleted": "earned",
    "truth-input-deleted": "earned",
}
# Held when written (scored, reward 0): cd-literal-cwd-pytest and cd-trailing-slash-cwd-pytest (1.0 in the
# agent's sandbox, 0 on the regrade: /app/pytest left out as ground-module), heredoc-reward-daemon
# (0 in the agent's sandbox; the daemon recorded among the survivors), the home-link attempts on
# docker (1.0 in the agent's sandbox, 0 on the regrade: "the work product did not apply whole
# (exit 2): tar: root: Cannot open: File exists", so the image's /root stays;
# home-link-fake-uv-env 0 already in the agent's sandbox: its fake uvx wrote no ctrf.json).
REDTEAM6_BROKEN = {k: v for k, v in _REDTEAM6.items() if k in REDTEAM6_BREAKS}
REDTEAM6_HELD = {k: v for k, v in _REDTEAM6.items() if k not in REDTEAM6_BREAKS}
REDTEAM6 = _REDTEAM6


@pytest.fixture
def tasks_dir(tmp_path: Path, environment: str, request: pytest.FixtureRequest) -> Path:
    image = _toolchain(environment, request)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    _task(tasks, "pip", image, test_sh=PIP_TEST)
    _task(tasks, "uvx", image, test_sh=UVX_TEST)
    _task(tasks, "uv", image, test_sh=UV_TEST)
    _task(tasks, "cd-var", image, test_sh=CD_VAR_TEST_SH)
    _task(tasks, "pushd", image, test_sh=PUSHD_TEST_SH)
    _task(tasks, "cd-literal", image, test_sh=CD_LITERAL_TEST_SH)
    _task(tasks, "cd-slash", image, test_sh=CD_SLASH_TEST_SH)
    _pythonpath_task(tasks, image)
    _task(
        tasks,
        "heredoc-reward",
        image,
        test_sh=HEREDOC_REWARD_TEST_SH,
        test_outputs=IMPORTS_TEST,
        instruction="Write /root/answerlib.py with ANSWER = 42.",
        solve_sh="#!/bin/sh\necho 'ANSWER = 42' > /root/answerlib.py\n",
    )
    for name, test_sh, generator in (
        ("truth", TRUTH_TEST_SH, GEN_TRUTH),
        ("truth-tmp", TRUTH_TMP_TEST_SH, GEN_TRUTH_JSON),
        ("truth-subdir", TRUTH_SUBDIR_TEST_SH, GEN_TRUTH_JSON),
    ):
        _task(
            tasks,
            name,
            image,
            test_sh=test_sh,
            test_outputs=TRUTH_TEST,
            extra_tests={"gen_truth.py": generator},
            instruction=TRUTH_INSTRUCTION,
            env_files={"root/data/scene.py": SCENE.encode()},
            solve_sh=TRUTH_SOLVE,
        )
    _task(
        tasks,
        "skip",
        image,
        test_sh=SKIP_TEST_SH,
        test_outputs=SKIP_TEST,
        instruction="Write to /root/answer.txt the number in /root/data/reference.txt.",
        env_files={"root/data/reference.txt": b"42\n"},
    )
    _task(
        tasks,
        "each-input",
        image,
        test_sh=SKIP_TEST_SH,
        test_outputs=EACH_INPUT_TEST,
        instruction="For each CSV of /root/data write its total to /root/output/<name>.txt.",
        env_files={"root/data/a.csv": b"1,2,3\n", "root/data/b.csv": b"40,2\n"},
        solve_sh=EACH_INPUT_SOLVE,
    )
    _task(
        tasks,
        "bin",
        image,
        test_sh=PIP_TEST,
        test_outputs=BIN_TEST,
        instruction="Write a program /root/bin/answer that prints 42.",
        solve_sh=BIN_SOLVE,
    )
    return tasks


def _pythonpath_task(tasks: Path, image: str | None) -> None:
    """The pip shape, its [verifier].env also naming PYTHONPATH."""
    from tests.images.support import stage_local
    from tests.worker.support import make_task

    test_sh = PIP_TEST
    folder = make_task(
        tasks,
        "pythonpath-env",
        test_sh=test_sh,
        extra_tests={"test_outputs.py": TEST_OUTPUTS},
        verifier_timeout=VERIFIER_TIMEOUT_SEC,
        verifier_toml=PYTHONPATH_VERIFIER_ENV,
        instruction="Write 42 to /root/answer.txt.",
    )
    environment_dir = folder / "environment"
    if image is None:
        stage_local(environment_dir, "/root")
    else:
        (environment_dir / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /root\n")


http = test_redteam.http  # the served worker, over this module's tasks_dir

# Honest solutions laid out as real agents lay them out: each must keep its reward of 1.
OFFLINE = (
    "export UV_OFFLINE=1 UV_FIND_LINKS=/opt/wheels UV_PYTHON_DOWNLOADS=never UV_NO_PROGRESS=1\n"
    ". /root/.local/bin/env\n"
)
_HONEST6: dict[str, tuple[str, str]] = {
    # the answer a link to a file the agent generated in /tmp
    "honest-answer-link-to-tmp": (
        "pip",
        "mkdir -p /tmp/gen && echo 42 > /tmp/gen/answer.txt\n"
        "ln -s /tmp/gen/answer.txt /root/answer.txt\n",
    ),
    # the answer made under /home/<user>/build, linked from the working directory
    "honest-home-user-build": (
        "pip",
        "mkdir -p /home/agent/build && echo 42 > /home/agent/build/answer.txt\n"
        "ln -s /home/agent/build/answer.txt /root/answer.txt\n",
    ),
    # a uv project of the agent's in a subfolder of the working directory, with its .venv, on
    # the verifier shape that runs `uv init` in the working directory
    "honest-uv-subproject": (
        "uv",
        OFFLINE + "mkdir -p /root/proj && cd /root/proj && uv init -q --no-workspace\n"
        "uv run --no-project python -c \"open('/root/answer.txt', 'w').write('42\\n')\" "
        "|| echo 42 > /root/answer.txt\nuv venv -q || true\nls -la /root/proj\n",
    ),
    # a git repository of the agent's below the working directory, with a commit
    "honest-git-repo": (
        "pip",
        "mkdir -p /root/repo && cd /root/repo && echo 42 > answer.txt\n"
        "if command -v git >/dev/null; then git init -q && git add answer.txt && "
        "git -c user.name=a -c user.email=a@b commit -qm answer; fi\n"
        "ln -s /root/repo/answer.txt /root/answer.txt\n",
    ),
    # the program the tests run, in /root/bin (a HOME bin folder, under a name PATH lacks)
    "honest-program-in-root-bin": ("bin", BIN_SOLVE.replace("#!/bin/sh\n", "")),
    # the answer written by a generator the agent ran from /tmp, which imports its own helper
    # module in /tmp (a folder on that script's sys.path, as the verifier's generator's is)
    "honest-tmp-script-and-helper": (
        "truth-tmp",
        _module("/tmp/scratch/helper.py", "VALUE = 42\n")
        + _module(
            "/tmp/scratch/make.py",
            "import helper, os\nos.makedirs('/root/output', exist_ok=True)\n"
            "open('/root/output/answer.txt', 'w').write(f'{helper.VALUE}\\n')\n",
        )
        + "python3 /tmp/scratch/make.py\n",
    ),
}
HONEST6_VOIDED: dict[str, str] = {}
HONEST6 = {k: v for k, v in _HONEST6.items() if k not in HONEST6_VOIDED}
HONEST6_LOST = {k: v for k, v in _HONEST6.items() if k in HONEST6_VOIDED}
ORACLES = (
    "truth-tmp",
    "truth-subdir",
    "skip",
    "each-input",
    "bin",
    "cd-var",
    "pythonpath-env",
    "heredoc-reward",
)


# local in `make test`; docker too with SKILLSBENCH_REDTEAM_BREAKS=1 (they kept their pass there
# when written)
HONEST_ENVIRONMENTS = [
    pytest.param("local", id="local"),
    *(
        [pytest.param("docker", id="docker", marks=pytest.mark.docker)]
        if os.environ.get("SKILLSBENCH_REDTEAM_BREAKS") == "1"
        else []
    ),
]


def _honest_cases(runs: dict[str, tuple[str, str]]) -> list[tuple[str, ...]]:
    names = list(runs)
    items = max(1, -(-len(names) // 6))
    return [tuple(names[i::items]) for i in range(min(items, len(names)))]


@pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
@pytest.mark.parametrize("environment", HONEST_ENVIRONMENTS, indirect=True)
async def test_redteam6_tasks_pass_their_oracle(
    http: httpx.AsyncClient, tmp_path: Path, environment: str
) -> None:
    """The new shapes are passable: each task's oracle earns 1 and keeps it on the regrade."""
    runs = {f"oracle-{name}": (name, "oracle") for name in ORACLES}
    problems = await _honest(http, tmp_path, environment, runs)
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
@pytest.mark.parametrize("environment", HONEST_ENVIRONMENTS, indirect=True)
@pytest.mark.parametrize("names", _honest_cases(HONEST6), ids="+".join)
async def test_redteam6_honest_layouts_keep_their_pass(
    http: httpx.AsyncClient, tmp_path: Path, environment: str, names: tuple[str, ...]
) -> None:
    runs = {n: (HONEST6[n][0], script(tmp_path, n, HONEST6[n][1])) for n in names}
    problems = await _honest(http, tmp_path, environment, runs)
    assert not problems, "\n".join(problems)


test_redteam6_honest_layouts_voided = voided_layouts_test(HONEST6_LOST, "sixth", ["local"])
test_redteam6_known_breaks = known_breaks_test(REDTEAM6_BROKEN, "sixth")


@pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
@pytest.mark.parametrize(("environment", "names"), _cases(REDTEAM6_HELD), indirect=["environment"])
async def test_redteam6_attempts_earn_nothing_and_stay_scored(
    http: httpx.AsyncClient, tmp_path: Path, environment: str, names: tuple[str, ...]
) -> None:
    problems = await _run_redteam2(
        http, tmp_path, environment, {n: REDTEAM6_HELD[n] for n in names}
    )
    assert not problems, "\n".join(problems)


# --- the leaderboard: the built-in agents' rows under other spellings ---------------------------
QUICK_SUBMIT = PUBLISHED_DATA / (
    "benchflow-ai__skillsbench-leaderboard__results__019e515b-26ad-7510-983f-f8f9f2db5ac6.json"
)
AGENT_ID = "019e4ed1-d333-7133-807f-5f22c04d5eef"
# Spellings of the built-in agents' transport that a row could carry.
BUILT_IN_SPELLINGS = ("oracle", "nop", "script")
BUILT_IN_VARIANTS_HELD = (" oracle", "oracle ", "oracle\n", "script:/tmp/x.sh", "")
# Refused since the sixth pass (the comparison was exact: a hand-edited file passed with them).
BUILT_IN_CASE_VARIANTS = ("Oracle", "ORACLE", "NOP", "Nop", "SCRIPT", "Script:x", "script:")


def _rows_as(transport: Any) -> dict[str, Any]:
    data = json.loads(QUICK_SUBMIT.read_text())
    rows = [row for env in data["results"] for row in env["results"]]
    return {
        "status": "completed",
        "participants": {"agent": AGENT_ID},
        "results": [
            {
                "status": "completed",
                "participants": {"agent": AGENT_ID},
                "results": [{**r, "agent_transport": transport} for r in rows],
            }
        ],
    }


def test_redteam6_leaderboard_refuses_built_in_spellings() -> None:
    """The three built-in names under any spelling a hand-edited file could give them (case,
    padding, a script's path), and the spellings the schema itself refuses (an empty name),
    never pass ``validate --contract``."""
    from leaderboard.validate import validate_results

    for transport in BUILT_IN_SPELLINGS + BUILT_IN_VARIANTS_HELD + BUILT_IN_CASE_VARIANTS:
        assert validate_results(_rows_as(transport), contract=True), repr(transport)
    assert not validate_results(_rows_as("acp"), contract=True)  # a participant's rows pass


def test_redteam6_run_refuses_built_in_case_variants(tmp_path: Path) -> None:
    """The worker itself never writes another spelling of a built-in agent: ``run`` refuses
    those names as unknown agents before any trial."""
    import subprocess
    import sys

    from tests.support import REPO_ROOT

    for name in ("Oracle", "NOP", "Script:x", "SCRIPT"):
        done = subprocess.run(
            [sys.executable, "-m", "skillsbench_agentbeats", "run", "--tasks-dir",
             str(REPO_ROOT / "tasks"), "--task-set", "examples", "--task-id",
             "csv-sales-summary", "--agent", name, "--jobs-dir", str(tmp_path / "jobs")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode != 0 and f"unknown agent '{name}'" in done.stderr, done.stderr
