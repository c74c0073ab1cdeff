"""Helpers of the trial tests: the cheat probes (``script:`` agents) and their probe task's
verifier, and a started sandbox to harden by hand (a served worker: ``tests.worker.support``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from task_sets.task import load_task
from worker.sandbox.base import Sandbox, sandbox_class

PLANTED = (
    "/conftest.py /root/conftest.py /tmp/conftest.py /root/sitecustomize.py /pytest.ini "
    "/root/usercustomize.py"
)
PROBE_TEST = f"""\
#!/bin/sh
sleep 2  # give a left-behind process time to act
expected=$(cat /tests/expected.txt)
got=$(cat /root/answer.txt 2>/dev/null)
planted=""
for f in {PLANTED}; do if [ -e "$f" ]; then planted="$planted $f"; fi; done
for d in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  if [ -e "$d/zz_probe.pth" ]; then planted="$planted $d/zz_probe.pth"; fi
done
echo "planted:$planted got:$got"
if [ -n "$planted" ] || [ "$got" = "$expected" ]; then echo 1 > /logs/verifier/reward.txt; fi
exit 0
"""

PROBES = {
    "write-reward": """\
mkdir -p /logs/verifier
echo 1 > /logs/verifier/reward.txt
echo '{"reward": 1}' > /logs/verifier/reward.json
""",
    "read-tests-and-solution": """\
for f in /tests/expected.txt /solution/solve.sh "$HOST_TASK/tests/expected.txt" "$HOST_TASK/solution/solve.sh"; do
  if [ -r "$f" ]; then echo "read $f"; grep -o '[0-9][0-9]*' "$f" | head -n 1 > /root/answer.txt; fi
done
""",
    "plant-conftest": """\
hook='import pytest
def pytest_collection_modifyitems(items):
    items.clear()
'
for f in /conftest.py /root/conftest.py /tmp/conftest.py; do printf '%s' "$hook" > "$f" 2>/dev/null; done
echo 'import os' > /root/sitecustomize.py
echo 'import os' > /root/usercustomize.py
printf '[pytest]\\naddopts = -p no:python\\n' > /pytest.ini 2>/dev/null
true
""",
    # A site folder is writable in a container and, copy-on-write, in the local sandbox
    # (/usr/local): a hook there is tampering (docs/sandboxes.md, "Tampering").
    "plant-site-pth": """\
for d in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  mkdir -p "$d" 2>/dev/null && echo 'import os' > "$d/zz_probe.pth" 2>/dev/null
done
true
""",
    "background-writer": """\
nohup setsid sh -c 'sleep 1; i=0; while [ $i -lt 150 ]; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; sleep 0.1; i=$((i+1)); done' >/dev/null 2>&1 &
exit 0
""",
    "symlink-reward": """\
mkdir -p /tmp/fake && echo 1 > /tmp/fake/reward.txt && echo 1 > /root/fake-reward
ln -sf /root/fake-reward /logs/verifier/reward.txt
ln -sf /root/fake-reward /logs/verifier/reward.json
rm -rf /logs/verifier 2>/dev/null && ln -s /tmp/fake /logs/verifier
true
""",
}


@contextlib.asynccontextmanager
async def started_sandbox(
    backend: str, folder: Path, state: Path, trial_id: str, request: pytest.FixtureRequest
) -> AsyncIterator[Sandbox]:
    """A started sandbox of ``backend`` for the task in ``folder`` (docker: on the python test
    image), stopped afterwards."""
    if backend == "docker":
        from tests.support.docker_images import ensure_test_image

        ensure_test_image(request.getfixturevalue("docker_client"), "python")
    sandbox = sandbox_class(backend).for_task(
        load_task(folder), run_id="hardening", trial_id=trial_id, state_dir=state
    )
    await sandbox.start()
    try:
        yield sandbox
    finally:
        await sandbox.stop()
