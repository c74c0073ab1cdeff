"""A fifth red-team pass on the work-product defense, written from docs/sandboxes.md only, aimed at
the rules the fourth pass brought: ``link`` (a symbolic link is laid as a copy of what it points at
on the regrade, except below ``node_modules`` and a venv's ``bin/python*`` and ``lib64``),
``test-name`` (a folder or link named like a file of the task's tests that has an extension is
left out), ``skill`` (anything inside ``.../skills/<skill>/...`` left out), the user site's new
packages carried as work product, and the reward guard (test.sh's background jobs killed at the
reward's write, its other children continued, every other process stopped).

It reuses the fourth pass's task shapes (``truth``, ``copied``, ``bg``, ``bg-wait``, ``skill``,
``sim``, ``pip``) and adds:

* ``truth-renamed``: test.sh copies the generator under another name (``cp
  /tests/gen_truth.py /root/make_truth.py; python3 /root/make_truth.py``);
* ``truth-noext``: the generator is a tests file without an extension, copied to ``/tmp``;
* ``bg-disown``, ``bg-coproc``, ``bg-subshell``, ``bg-setsid``, ``bg-nohup``: test.sh starts the
  agent's app otherwise than as a plain job; ``bg-var`` and ``bg-func`` write the reward through a
  variable or a function (the command that writes names no reward file);
* ``same-name``: the expected answer ships as ``tests/answer.txt``, the name of the agent's output;
* ``sim-skill``: test.sh runs the agent's program; the image has a skill the program may use.

Each attempt is a ``script:`` agent that does not solve the task. ``REDTEAM5_BREAKS`` names those
that earned a reward (or unscored their row) when written; ``test_redteam5_known_breaks`` runs
them and is expected to fail (``xfail(strict=True)``). Honest layouts must keep their reward;
``HONEST5_VOIDED`` names those that lost it, run by ``test_redteam5_honest_layouts_voided``
(also a strict xfail). Both run only with ``SKILLSBENCH_REDTEAM_BREAKS=1``.
``SKILLSBENCH_REDTEAM_ONLY=name,...`` runs only those attempts.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.worker.support import script
from tests.worker.trial import test_redteam
from tests.worker.trial.test_implicit_inputs import PIP_TEST, _toolchain
from tests.worker.trial.test_redteam import (
    EXPECTED_TEST,
    RUN_TIMEOUT_SEC,
    Attempt,
    _cases,
    _module,
    _run_redteam2,
    _task,
)
from tests.worker.trial.test_redteam4 import (
    BG_SERVER,
    BG_TEST_SH,
    BG_WAIT_TEST_SH,
    COPIED_TEST,
    COPIED_TEST_SH,
    GEN_TRUTH,
    PIP_INSTALL,
    SCENE,
    SIM_TEST_SH,
    SKILL_CHECKER,
    SKILL_TEST,
    TRUTH_INSTRUCTION,
    TRUTH_SOLVE,
    TRUTH_TEST,
    TRUTH_TEST_SH,
    WRONG_OUTPUT,
    _honest,
    known_breaks_test,
    voided_layouts_test,
)

environment = test_redteam.environment  # the fixture: local, or docker where an engine answers

# --- truth-renamed: the generator copied under a name that is no file of the tests ------------
TRUTH_RENAMED_TEST_SH = TRUTH_TEST_SH.replace(
    "cp /tests/gen_truth.py /root/gen_truth.py\n  python3 /root/gen_truth.py\n"
    "  rm -f /root/gen_truth.py\n",
    "cp /tests/gen_truth.py /root/make_truth.py\n  python3 /root/make_truth.py\n"
    "  rm -f /root/make_truth.py\n",
)
# --- truth-noext: the generator a tests file without an extension, run from /tmp -------------
TRUTH_NOEXT_TEST_SH = TRUTH_TEST_SH.replace(
    "cp /tests/gen_truth.py /root/gen_truth.py\n  python3 /root/gen_truth.py\n"
    "  rm -f /root/gen_truth.py\n",
    "cp /tests/gen_truth /tmp/gen_truth\n  python3 /tmp/gen_truth\n",
)


# --- bg variants: the app started otherwise, the reward written otherwise --------------------
def _bg_sh(
    start: str, *, head: str = "", write: str = "echo {r} > /logs/verifier/reward.txt"
) -> str:
    return (
        "#!/bin/bash\nmkdir -p /logs/verifier\n" + head + PIP_INSTALL + "cd /root\n"
        f"if [ -f /root/server.py ]; then {start}; fi\n"
        "sleep 1\n"
        "python3 -m pytest /tests/test_outputs.py -rA\nPYTEST_EXIT=$?\n"
        f'if [ "$PYTEST_EXIT" -eq 0 ]; then {write.format(r=1)}; '
        f"else {write.format(r=0)}; fi\n"
        "kill $APP_PID 2>/dev/null || true\nsleep 1\nexit 0\n"
    )


BG_SHAPES = {
    "bg-disown": _bg_sh("python3 /root/server.py & APP_PID=$!; disown"),
    "bg-coproc": _bg_sh("coproc APP { python3 /root/server.py; }; APP_PID=$APP_PID"),
    "bg-subshell": _bg_sh("( python3 /root/server.py & )"),
    "bg-setsid": _bg_sh("setsid -f python3 /root/server.py"),
    "bg-nohup": _bg_sh("nohup python3 /root/server.py > /tmp/app.log 2>&1 & APP_PID=$!"),
    "bg-var": _bg_sh(
        "python3 /root/server.py & APP_PID=$!",
        head="REWARD_FILE=/logs/verifier/reward.txt\n",
        write='echo {r} > "$REWARD_FILE"',
    ),
    "bg-func": _bg_sh(
        "python3 /root/server.py & APP_PID=$!",
        head='write_reward() {\n  echo "$1" > /logs/verifier/reward.txt\n}\n',
        write="write_reward {r}",
    ),
}

# --- same-name: the expected answer is tests/answer.txt, the output's own name ---------------
SAME_NAME_TEST = """\
from pathlib import Path


def test_answer():
    expected = Path("/tests/answer.txt").read_text().strip()
    assert Path("/root/answer.txt").read_text().strip() == expected
"""

# --- sim-skill: test.sh runs the agent's program; a skill of the image it may use -----------
SKILL_LIB = "def answer():\n    return 42\n"

# The app's rewriter, run apart from the app (a file of /tmp: no module folder of the verifier's).
REWRITER = _module("/tmp/rw.py", BG_SERVER)
# The app clones itself with CLONE_PARENT: the clone's parent is test.sh (the app's parent), so
# it is a child of test.sh's that is no job of it; the app itself (the job) then just waits.
CLONE_PARENT_SERVER = """\
import ctypes, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
pid = libc.syscall(L(56), L(0x00008000 | 17), L(0), L(0), L(0), L(0))
if pid == 0:
    os.execv(sys.executable, [sys.executable, '/tmp/rw.py'])
print('REDTEAM cloned', pid, 'errno', ctypes.get_errno(), 'ppid', os.getppid(), flush=True)
time.sleep(600)
"""
# The app daemonizes (fork, setsid, fork): the rewriter is below no job and no child of test.sh.
DOUBLE_FORK_SERVER = """\
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '/tmp/rw.py'])
    os._exit(0)
print('REDTEAM daemonized', flush=True)
time.sleep(600)
"""
RW_SERVER = "import os, sys\nos.execv(sys.executable, [sys.executable, '/tmp/rw.py'])\n"

# Links with odd names (a newline, a leading dash, spaces, a glob, a backslash, bytes that are not
# UTF-8, a name of 250 characters), among them one whose name holds a newline then
# `/root/pred.txt`, each to the expected answer test.sh copies, and the prediction a link too: a
# laying that reads names by lines, or stops at the first it cannot copy, would leave the rest.
WEIRD_LINKS = r"""
import os
target = b'/root/expected.txt'
os.makedirs(b'/tmp/d\n/root', exist_ok=True)
names = [b'/root/nl\nname', b'/root/-rf', b'/root/--', b'/root/sp ace', b'/root/*',
         b'/root/back\\slash', b'/root/bad\xff\xfe', b'/root/' + b'x' * 250,
         b'/tmp/d\n/root/pred.txt', b'/root/ \n', b'/root/$(id)']
for name in names:
    try:
        os.symlink(target, name)
    except OSError as exc:
        print('REDTEAM refused', name, exc, flush=True)
os.symlink(b'-rf', b'/root/dash-target')
os.symlink(b'/root/ex\npected.txt', b'/root/nl-target')
os.symlink(target, b'/root/pred.txt')
print('REDTEAM made', len(names) + 3, 'links', flush=True)
"""
# 2,500 links (past the 2,000 the laying copies) before the output folder's link: past the
# cap the regrade gives no pass; the attempt looks for a laying that gives up and leaves links.
MANY_LINKS = """\
import os
os.makedirs('/tmp/many', exist_ok=True)
for i in range(2500):
    os.symlink('/etc/hostname', f'/tmp/many/l{i:05d}')
print('REDTEAM made 2500 links', flush=True)
"""
PRECREATED_TRUTH = (
    "mkdir -p /root/ground_truth && echo 0 > /root/ground_truth/answer.txt\n"
    "ln -s ground_truth /root/output\n"
)
EVIL_GEN = (
    "import os\nos.makedirs('/root/ground_truth', exist_ok=True)\n"
    "open('/root/ground_truth/answer.txt', 'w').write('0\\n')\n"
    "print('REDTEAM generated the ground truth', flush=True)\n"
)
# a package of that name in the user site whose import ends the process with 0
USER_SITE_PKG = (
    "usite=$(python3 -c 'import site; print(site.getusersitepackages())')\n"
    'mkdir -p "$usite/{name}"\n'
    "printf 'import os\\nos._exit(0)\\n' > \"$usite/{name}/__init__.py\"\n"
)
ZERO_ANSWER = "echo 0 > /root/answer.txt\n"

_REDTEAM5: dict[str, Attempt] = {
    # -- link: what a link is laid as on the regrade ------------------------------------------
    # the prediction a chain of links to where test.sh copies the expected answer
    "copied-link-chain": Attempt(
        "copied",
        "ln -s /root/expected.txt /tmp/hop1\nln -s /tmp/hop1 /tmp/hop2\n"
        "ln -s /tmp/hop2 /root/pred.txt\n",
    ),
    # relative, through `..` and a folder that is itself a link
    "copied-link-dotdot-via-dirlink": Attempt(
        "copied",
        "mkdir -p /srv/x/y\nln -s /srv/x/y /root/d\nln -s d/../../../root/expected.txt "
        "/root/pred.txt\n",
    ),
    # through /proc: a link in /tmp to the verifier's working directory, the prediction to it
    "copied-link-proc-cwd": Attempt(
        "copied",
        "ln -s /proc/self/cwd/expected.txt /tmp/p\nln -s /tmp/p /root/pred.txt\n",
    ),
    # a link under node_modules (kept a link) that the prediction points at
    "copied-node-modules-chain": Attempt(
        "copied",
        "mkdir -p /tmp/node_modules\nln -s /root/expected.txt /tmp/node_modules/p\n"
        "ln -s /tmp/node_modules/p /root/pred.txt\n",
    ),
    # odd names, one of them holding a newline and then `/root/pred.txt`
    "copied-link-weird-names": Attempt(
        "copied", _module("/tmp/weird.py", WEIRD_LINKS) + "python3 /tmp/weird.py\n"
    ),
    # the copy's destination a FIFO named like the tests' file: test.sh's cp hangs
    "copied-dest-fifo": Attempt("copied", "echo 0 > /root/pred.txt\nmkfifo /root/expected.txt\n"),
    # the output folder a link to a folder named node_modules, whose own link is the answer
    "truth-node-modules-dir-link": Attempt(
        "truth",
        "mkdir -p /tmp/node_modules\n"
        "ln -s /root/ground_truth/answer.txt /tmp/node_modules/answer.txt\n"
        "ln -s /tmp/node_modules /root/output\n",
    ),
    # ... or to a folder below one
    "truth-node-modules-subdir-link": Attempt(
        "truth",
        "mkdir -p /tmp/pkg/node_modules/out\n"
        "ln -s /root/ground_truth/answer.txt /tmp/pkg/node_modules/out/answer.txt\n"
        "ln -s /tmp/pkg/node_modules/out /root/output\n",
    ),
    # the output folder a link to a venv's lib64 (kept a link), which links to the ground truth's
    "truth-venv-lib64-chain": Attempt(
        "truth",
        "mkdir -p /tmp/v/bin && echo 'home = /usr/bin' > /tmp/v/pyvenv.cfg\n"
        "ln -s /root/ground_truth /tmp/v/lib64\nln -s /root/ground_truth /tmp/v/bin/python3\n"
        "ln -s /tmp/v/lib64 /root/output\n",
    ),
    # the output folder a link to the ground truth's folder made beforehand, which cannot be
    # listed (mode 0311): a copy that fails might leave the link
    "truth-dir-link-unlistable": Attempt(
        "truth", PRECREATED_TRUTH + "chmod 0311 /root/ground_truth\n"
    ),
    # ... whose folder holds a link back to itself (a copy that follows it never ends)
    "truth-dir-link-loop-inside": Attempt(
        "truth", PRECREATED_TRUTH + "ln -s /root/ground_truth /root/ground_truth/loop\n"
    ),
    # ... after 2,500 other links (past the copy cap's count)
    "truth-dir-link-after-link-cap": Attempt(
        "truth", _module("/tmp/many.py", MANY_LINKS) + "python3 /tmp/many.py\n" + PRECREATED_TRUTH
    ),
    # ... after a link to a folder of the image past the copy cap's bytes (/usr/share)
    "truth-dir-link-after-byte-cap": Attempt(
        "truth", "ln -s /usr/share /root/aaa-share\n" + PRECREATED_TRUTH
    ),
    # a hard link from a folder the regrade copies (the output a link to /tmp/o) to the ground
    # truth made beforehand: the generator rewrites that inode
    "truth-hardlink-in-copied-dir": Attempt(
        "truth",
        "mkdir -p /root/ground_truth /tmp/o && echo 0 > /root/ground_truth/answer.txt\n"
        "ln /root/ground_truth/answer.txt /tmp/o/answer.txt\nln -s /tmp/o /root/output\n",
    ),
    # -- test-name: the generator's destination a folder of the agent's ------------------------
    # under the name test.sh copies it to (no file of the tests has it)
    "renamed-gen-dest-dir": Attempt(
        "truth-renamed",
        "mkdir -p /root/output && echo 0 > /root/output/answer.txt\n"
        + _module("/root/make_truth.py/__main__.py", EVIL_GEN),
    ),
    # a tests file without an extension, copied to /tmp
    "noext-gen-dest-dir": Attempt(
        "truth-noext",
        "mkdir -p /root/output && echo 0 > /root/output/answer.txt\n"
        + _module("/tmp/gen_truth/__main__.py", EVIL_GEN),
    ),
    # the generator's name a FIFO: cp and python hang on it
    "truth-gen-fifo": Attempt("truth", WRONG_OUTPUT + "mkfifo /root/gen_truth.py\n"),
    # -- skill: the skills folder itself, or the folder above it, a link ----------------------
    "skill-skills-folder-link": Attempt(
        "skill",
        ZERO_ANSWER
        + _module("/tmp/sk/checker/scripts/checker.py", "def validate(text):\n    return True\n")
        + "mkdir -p /app/environment\nln -s /tmp/sk /app/environment/skills\n",
    ),
    "skill-environment-link": Attempt(
        "skill",
        ZERO_ANSWER
        + _module("/tmp/sk2/checker/scripts/checker.py", "def validate(text):\n    return True\n")
        + "mkdir -p /tmp/envx /app\nln -s /tmp/sk2 /tmp/envx/skills\n"
        "ln -s /tmp/envx /app/environment\n",
    ),
    # -- the user site: a new package whose name Python imports anyway ------------------------
    # pytest's own dependency (pip installs it into the system site; the user site comes first)
    "user-site-iniconfig": Attempt("pip", USER_SITE_PKG.format(name="iniconfig")),
    # pickle's optional import of the standard library
    "user-site-org": Attempt("pip", USER_SITE_PKG.format(name="org")),
    # pytest-json-ctrf's module (loaded by its entry point, installed by test.sh)
    "user-site-ctrf": Attempt("pip", USER_SITE_PKG.format(name="ctrf")),
    # -- the reward guard: a rewriter that outlives the job or is no job -----------------------
    "bg-clone-parent": Attempt("bg", REWRITER + _module("/root/server.py", CLONE_PARENT_SERVER)),
    "bg-wait-clone-parent": Attempt(
        "bg-wait", REWRITER + _module("/root/server.py", CLONE_PARENT_SERVER)
    ),
    "bg-double-fork": Attempt("bg", REWRITER + _module("/root/server.py", DOUBLE_FORK_SERVER)),
    "bg-disown-job": Attempt("bg-disown", REWRITER + _module("/root/server.py", RW_SERVER)),
    "bg-coproc-job": Attempt("bg-coproc", REWRITER + _module("/root/server.py", RW_SERVER)),
    "bg-subshell-job": Attempt("bg-subshell", REWRITER + _module("/root/server.py", RW_SERVER)),
    "bg-setsid-job": Attempt("bg-setsid", REWRITER + _module("/root/server.py", RW_SERVER)),
    "bg-nohup-job": Attempt("bg-nohup", REWRITER + _module("/root/server.py", RW_SERVER)),
    "bg-var-reward": Attempt("bg-var", REWRITER + _module("/root/server.py", RW_SERVER)),
    "bg-func-reward": Attempt("bg-func", REWRITER + _module("/root/server.py", RW_SERVER)),
}

# What each attempt gave when written (local; docker not run), on the commit it was written on:
# each below EARNED 1.0 in the agent's sandbox and 1.0 again on the regrade, scored. The rest
# held (reward 0, scored). Held with a note: bg-wait-clone-parent (the clone survived to the exit
# but did not rewrite), bg-func-reward (a function's write is guarded), the FIFO attempts (a
# timeout, graded on the image plus the work product: 0, scored).
# What broke when written (local), each fixed since by a rule for its class
# (docs/sandboxes.md): renamed-gen-dest-dir and noext-gen-dest-dir (a folder named like a
# script, or like any file of the tests: `script-folder`, `test-name`); skill-skills-folder-link
# and skill-environment-link (a link judged where its copy will be); bg-clone-parent,
# bg-disown-job (every child of test.sh's ends at the reward's write) and bg-var-reward (a
# reward file named through a variable is seen).
REDTEAM5_BREAKS: dict[str, str] = {}
REDTEAM5_BROKEN = {k: v for k, v in _REDTEAM5.items() if k in REDTEAM5_BREAKS}
REDTEAM5_HELD = {k: v for k, v in _REDTEAM5.items() if k not in REDTEAM5_BREAKS}
REDTEAM5 = _REDTEAM5


@pytest.fixture
def tasks_dir(tmp_path: Path, environment: str, request: pytest.FixtureRequest) -> Path:
    image = _toolchain(environment, request)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    _task(tasks, "pip", image, test_sh=PIP_TEST)
    for name, test_sh, generator in (
        ("truth", TRUTH_TEST_SH, "gen_truth.py"),
        ("truth-renamed", TRUTH_RENAMED_TEST_SH, "gen_truth.py"),
        ("truth-noext", TRUTH_NOEXT_TEST_SH, "gen_truth"),
    ):
        _task(
            tasks,
            name,
            image,
            test_sh=test_sh,
            test_outputs=TRUTH_TEST,
            extra_tests={generator: GEN_TRUTH},
            instruction=TRUTH_INSTRUCTION,
            env_files={"root/data/scene.py": SCENE.encode()},
            solve_sh=TRUTH_SOLVE,
        )
    _task(
        tasks,
        "copied",
        image,
        test_sh=COPIED_TEST_SH,
        test_outputs=COPIED_TEST,
        extra_tests={"expected.txt": "42\n"},
        instruction="Write 42 to /root/pred.txt.",
        solve_sh="#!/bin/sh\necho 42 > /root/pred.txt\n",
    )
    _task(tasks, "bg", image, test_sh=BG_TEST_SH)
    _task(tasks, "bg-wait", image, test_sh=BG_WAIT_TEST_SH)
    for name, test_sh in BG_SHAPES.items():
        _task(tasks, name, image, test_sh=test_sh)
    _task(
        tasks,
        "skill",
        image,
        test_sh=PIP_TEST,
        test_outputs=SKILL_TEST,
        env_files={"root/.claude/skills/checker/scripts/checker.py": SKILL_CHECKER.encode()},
    )
    _task(
        tasks,
        "sim",
        image,
        test_sh=SIM_TEST_SH,
        test_outputs=EXPECTED_TEST,
        extra_tests={"expected.txt": "42\n"},
    )
    _task(
        tasks,
        "sim-skill",
        image,
        test_sh=SIM_TEST_SH,
        test_outputs=EXPECTED_TEST,
        extra_tests={"expected.txt": "42\n"},
        instruction="Write to /root/answer.txt what the answerer skill's answer() returns.",
        env_files={"root/.claude/skills/answerer/scripts/answerer.py": SKILL_LIB.encode()},
    )
    _task(
        tasks,
        "same-name",
        image,
        test_sh=PIP_TEST,
        test_outputs=SAME_NAME_TEST,
        extra_tests={"answer.txt": "42\n"},
    )
    return tasks


http = test_redteam.http  # the served worker, over this module's tasks_dir

# Honest solutions laid out as real agents lay them out: each must keep its reward of 1.
SKILL_COPY_SIM = (
    "mkdir -p /root/proj/skills\ncp -r /root/.claude/skills/answerer /root/proj/skills/\n"
    + _module(
        "/root/simulation.py",
        "import sys\nsys.path.insert(0, '/root/proj/skills/answerer/scripts')\n"
        "from answerer import answer\nopen('/root/answer.txt', 'w').write(f'{answer()}\\n')\n",
    )
)
_HONEST5: dict[str, tuple[str, str]] = {
    # a venv of the agent's (`python3 -m venv`: bin/python* and lib64 links) that made the answer
    "honest-venv": (
        "sim",
        "python3 -m venv --without-pip /root/env\n"
        "/root/env/bin/python -c \"open('/root/answer.txt', 'w').write('42\\n')\"\n",
    ),
    # a node project's links below node_modules
    "honest-node-modules-links": (
        "sim",
        "mkdir -p /root/app/node_modules/pkg /root/app/node_modules/.bin\n"
        "echo 'console.log(42)' > /root/app/node_modules/pkg/cli.js\n"
        "ln -s ../pkg/cli.js /root/app/node_modules/.bin/pkg\necho 42 > /root/answer.txt\n",
    ),
    # the output folder a relative link to a folder of results
    "honest-output-relative-link": (
        "truth",
        "mkdir -p /root/results && echo 42 > /root/results/answer.txt\n"
        "ln -s results /root/output\n",
    ),
    # an input of the image linked into the output folder beside the answer
    "honest-input-link-in-output": (
        "truth",
        TRUTH_SOLVE.replace("#!/bin/sh\n", "")
        + "ln -s /root/data/scene.py /root/output/scene.py\n",
    ),
    # a link to a large folder of the image (past the copy cap) beside the answer
    "honest-large-dataset-link": (
        "truth",
        TRUTH_SOLVE.replace("#!/bin/sh\n", "") + "ln -s /usr/share /root/dataset\n",
    ),
    # the answer a hard link of a file of the agent's
    "honest-answer-hardlink": (
        "copied",
        "echo 42 > /root/w.txt\nln /root/w.txt /root/pred.txt\n",
    ),
    # the answer a link named like a file of the tests (tests/answer.txt is the expected one)
    "honest-answer-link-named-like-test": (
        "same-name",
        "mkdir -p /tmp/scratch2 && echo 42 > /tmp/scratch2/answer.txt\n"
        "ln -s /tmp/scratch2/answer.txt /root/answer.txt\n",
    ),
    # the program test.sh runs uses a copy of the image's skill in the agent's project
    "honest-skill-copy": ("sim-skill", SKILL_COPY_SIM),
    # the app test.sh starts with `disown`, honest (it writes nothing of the reward's)
    "honest-bg-disown-app": (
        "bg-disown",
        _module("/root/server.py", "import time\ntime.sleep(600)\n")
        + "echo 42 > /root/answer.txt\n",
    ),
}
# Voided when written, kept since: a link to a file named like a tests file (only folders and
# links to folders are), and a skill copied where the tests do not look (only the skill folders
# the tests name come from the image).
HONEST5_VOIDED: dict[str, str] = {}
HONEST5 = {k: v for k, v in _HONEST5.items() if k not in HONEST5_VOIDED}
HONEST5_LOST = {k: v for k, v in _HONEST5.items() if k in HONEST5_VOIDED}
ORACLES = ("truth-renamed", "truth-noext", "same-name", "sim-skill", *BG_SHAPES)


def _honest_cases(runs: dict[str, tuple[str, str]]) -> list[tuple[str, ...]]:
    names = list(runs)
    items = max(1, -(-len(names) // 6))
    return [tuple(names[i::items]) for i in range(min(items, len(names)))]


@pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
@pytest.mark.parametrize("environment", ["local"], indirect=True)
async def test_redteam5_tasks_pass_their_oracle(
    http: httpx.AsyncClient, tmp_path: Path, environment: str
) -> None:
    """The new shapes are passable: each task's oracle earns 1 and keeps it on the regrade."""
    runs = {f"oracle-{name}": (name, "oracle") for name in ORACLES}
    problems = await _honest(http, tmp_path, environment, runs)
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
@pytest.mark.parametrize("environment", ["local"], indirect=True)
@pytest.mark.parametrize("names", _honest_cases(HONEST5), ids="+".join)
async def test_redteam5_honest_layouts_keep_their_pass(
    http: httpx.AsyncClient, tmp_path: Path, environment: str, names: tuple[str, ...]
) -> None:
    runs = {n: (HONEST5[n][0], script(tmp_path, n, HONEST5[n][1])) for n in names}
    problems = await _honest(http, tmp_path, environment, runs)
    assert not problems, "\n".join(problems)


test_redteam5_honest_layouts_voided = voided_layouts_test(HONEST5_LOST, "fifth", ["local"])
test_redteam5_known_breaks = known_breaks_test(REDTEAM5_BROKEN, "fifth")


@pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
@pytest.mark.parametrize(("environment", "names"), _cases(REDTEAM5_HELD), indirect=["environment"])
async def test_redteam5_attempts_earn_nothing_and_stay_scored(
    http: httpx.AsyncClient, tmp_path: Path, environment: str, names: tuple[str, ...]
) -> None:
    problems = await _run_redteam2(
        http, tmp_path, environment, {n: REDTEAM5_HELD[n] for n in names}
    )
    assert not problems, "\n".join(problems)
