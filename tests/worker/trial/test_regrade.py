"""The regrade's reading of the exported work product (worker/trial/regrade.py): which of the
agent's modules in the verifier's module folders the tests reach, read from the real archive;
and its links, made content on the fresh sandbox by the real script."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from worker.sandbox.scripts import shell_script
from worker.sandbox.tamper import Change
from worker.trial.regrade import (
    ENV_MARK,
    IMAGE_MODULES_SCRIPT,
    SCRIPT_DIRS_MAX,
    SCRIPTS_MARK,
    archive_links,
    image_facts,
    managed_interpreters,
    module_entries,
    unnamed_paths,
)
from worker.trial.work_product import (
    Ground,
    WorkProduct,
    exclude_unnamed,
    references,
    unnamed_candidates,
    unreached_modules,
)

FILES = {
    "root/solution.py": "from helpers import merge\n",
    "root/helpers.py": "def merge(x):\n    return x\n",
    "root/org/__init__.py": "import os\nos._exit(0)\n",
    "root/org/python/core.py": "PyStringMap = dict\n",
    "root/answer.json": '{"note": "import org"}\n',
    "root/scratch.py": "print('trying things')\n",
    "root/data/table.csv": "a,b\n1,2\n",
    "root/org/results.json": "{}\n",  # found by a test's rglob: stays
}


def _archive(path: Path) -> Path:
    with tarfile.open(path, "w") as tar:
        for folder in ("root/org", "root/org/python", "root/data"):
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, text in FILES.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("root/linked")
        link.type = tarfile.SYMTYPE
        link.linkname = "/srv/elsewhere"
        tar.addfile(link)
    return path


def _product() -> WorkProduct:
    paths = {"/" + name for name in FILES} | {"/root/org", "/root/org/python", "/root/data"}
    return WorkProduct(applied=[Change(p, "added") for p in sorted(paths | {"/root/linked"})])


def test_only_what_the_tests_reach_of_the_agents_modules_stays(tmp_path: Path) -> None:
    ground = Ground(
        workdir="/root",
        named=references("from solution import merge\nopen('/root/answer.json')\n", "t.py"),
    )
    assert ground.named is not None
    product = _product()
    entries = module_entries(_archive(tmp_path / "wp.tar"), product, ground)
    assert entries["/root/org"].importable
    assert not entries["/root/data"].importable  # a folder of data is no module
    assert not entries["/root/answer.json"].code  # an output's words are never read
    assert entries["/root/linked"].importable  # a link may reach code: no trust
    unnamed = unnamed_candidates(product, ground)
    hit = unnamed_paths(entries, ground.named, unnamed)
    assert hit == [
        "/root/linked",
        "/root/org/__init__.py",
        "/root/org/python/core.py",
        "/root/scratch.py",
    ]
    exclude_unnamed(product, hit)
    applied = {c.path for c in product.applied}
    assert {"/root/solution.py", "/root/helpers.py", "/root/answer.json"} <= applied
    assert "/root/data/table.csv" in applied
    # what Python could import of an unreached entry goes; its folders and data stay
    assert {p for p in applied if p.startswith("/root/org")} == {
        "/root/org",
        "/root/org/python",
        "/root/org/results.json",
    }
    assert {e.path for e in product.excluded} == {
        "/root/linked",
        "/root/org/__init__.py",
        "/root/org/python/core.py",
        "/root/scratch.py",
    }
    assert {e.rule for e in product.excluded} == {"unnamed-module"}
    assert product.needs_regrade


def test_code_past_the_reading_budget_names_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import worker.trial.regrade as regrade

    monkeypatch.setattr(regrade, "CODE_TOTAL_MAX", 10)  # only solution.py's first bytes read
    ground = Ground(workdir="/root", named=references("import solution", "t.py"))
    assert ground.named is not None
    entries = module_entries(_archive(tmp_path / "wp.tar"), _product(), ground)
    assert "/root/helpers.py" in unreached_modules(entries, ground.named)


def test_managed_interpreters_are_read_from_the_work_products_environments(tmp_path: Path) -> None:
    configs = {
        # uv venv --python 3.12 on a uv-managed interpreter: to be installed genuine
        "app/lib/.venv/pyvenv.cfg": "home = /root/.local/share/uv/python/"
        "cpython-3.12.12-linux-x86_64-gnu/bin\nversion_info = 3.12.12\n",
        "home/dev/proj/.venv/pyvenv.cfg": "home = /home/dev/.local/share/uv/python/"
        "cpython-3.11-linux-x86_64-gnu/bin\n",
        # the image's interpreter: nothing to install
        "app/sys/.venv/pyvenv.cfg": "home = /usr/bin\n",
        # a key that is no key, and a home outside a home
        "app/odd/.venv/pyvenv.cfg": "home = /root/.local/share/uv/python/$(id)/bin\n",
        "app/tmp/.venv/pyvenv.cfg": "home = /tmp/.local/share/uv/python/cpython-3.9.1-x/bin\n",
        # not applied (left out by a rule): not read
        "root/.venv/pyvenv.cfg": "home = /root/.local/share/uv/python/cpython-3.8.1-x/bin\n",
    }
    archive = tmp_path / "wp.tar"
    with tarfile.open(archive, "w") as tar:
        for name, text in configs.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    product = WorkProduct(
        applied=[Change("/" + name, "added") for name in configs if not name.startswith("root/")]
    )
    assert managed_interpreters(archive, product) == [
        ("/root/.local/share/uv/python", "cpython-3.12.12-linux-x86_64-gnu"),
        ("/home/dev/.local/share/uv/python", "cpython-3.11-linux-x86_64-gnu"),
    ]


# --- links: the work product is content, not aliases (verifier_scripts/links.sh) ------------


def _links_tar(tmp_path: Path, members: dict[str, str | None]) -> Path:
    """A work product tar: ``path: link target`` (None: an empty file)."""
    archive = tmp_path / "wp.tar"
    with tarfile.open(archive, "w") as tar:
        for path, target in members.items():
            info = tarfile.TarInfo(path.lstrip("/"))
            if target is not None:
                info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info, io.BytesIO(b"") if target is None else None)
    return archive


def test_links_made_content_on_the_regrade_but_a_package_managers_own(tmp_path: Path) -> None:
    archive = _links_tar(
        tmp_path,
        {
            "/root/output/answer.txt": "/root/ground_truth/answer.txt",
            "/root/web/node_modules/.bin/next": "../next/dist/bin/next",
            "/app/lib/.venv/pyvenv.cfg": None,
            "/app/lib/.venv/bin/python3": "/usr/bin/python3.12",
            "/app/lib/.venv/bin/answer": "/root/answer.txt",
            "/app/lib/.venv/lib64": "lib",
            "/root/bin/python3": "/usr/bin/python3",  # no pyvenv.cfg beside it: no environment
        },
    )
    assert archive_links(archive) == [
        "/root/output/answer.txt",
        "/app/lib/.venv/bin/answer",
        "/root/bin/python3",
    ]


def _run_links(paths: list[Path], max_kib: int = 1 << 20, max_links: int = 100) -> dict[str, str]:
    script = shell_script("worker.trial.verifier_scripts", "links.sh")
    done = subprocess.run(
        ["/bin/sh", "-c", script, "sh", str(max_kib), str(max_links)],
        input="".join(f"{p}\n" for p in paths),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    said = {}
    for line in done.stdout.splitlines():
        _, what, path = line.split(" ", 2)
        said[path] = what
    return said


def test_a_link_becomes_a_copy_of_what_it_points_at_or_goes(tmp_path: Path) -> None:
    """What the verifier writes or copies later can no longer reach the agent's answer, nor
    the answer the verifier's file."""
    root = tmp_path
    (root / "pred.txt").write_text("0\n")
    (root / "expected.txt").symlink_to(root / "pred.txt")  # cp's destination, into the answer
    (root / "output").mkdir()
    (root / "output" / "answer.txt").symlink_to(root / "truth" / "answer.txt")  # not there yet
    (root / "out2").mkdir()
    (root / "out2" / "x.txt").write_text("x\n")
    (root / "out2" / "inner").symlink_to(root / "pred.txt")
    (root / "dirlink").symlink_to("out2")
    os.mkfifo(root / "fifo")
    (root / "to-fifo").symlink_to(root / "fifo")
    (root / "loop").symlink_to(root / "loop")
    (root / "out2" / "up").symlink_to("..")  # a folder above it: its copy would hold itself
    links = ["expected.txt", "output/answer.txt", "dirlink", "to-fifo", "loop", "out2/up"]
    said = _run_links([root / p for p in links])
    assert said == {
        str(root / "expected.txt"): "copied",
        str(root / "output" / "answer.txt"): "dangling",
        str(root / "dirlink"): "copied",
        str(root / "dirlink" / "inner"): "copied",
        str(root / "to-fifo"): "dropped",
        str(root / "loop"): "dangling",
        str(root / "out2" / "up"): "dropped",
        str(root / "dirlink" / "up"): "dropped",
    }
    assert not (root / "expected.txt").is_symlink()
    (root / "expected.txt").write_text("42\n")  # what `cp /tests/expected.txt` does now
    assert (root / "pred.txt").read_text() == "0\n"
    assert not os.path.lexists(root / "output" / "answer.txt")
    assert (root / "dirlink").is_dir() and not (root / "dirlink").is_symlink()
    assert (root / "dirlink" / "x.txt").read_text() == "x\n"
    assert not (root / "dirlink" / "inner").is_symlink()
    assert not os.path.lexists(root / "to-fifo") and not os.path.lexists(root / "loop")


@pytest.mark.parametrize(("max_kib", "max_links"), [(400, 100), (1 << 20, 1)])
def test_links_past_the_copy_cap_stop_the_laying(
    tmp_path: Path, max_kib: int, max_links: int
) -> None:
    """Past the cap the script stops (exit 3: the regrade gives no pass) rather than spend
    minutes on an agent's thousands of links."""
    (tmp_path / "big").write_bytes(b"x" * (300 << 10))
    (tmp_path / "a").symlink_to(tmp_path / "big")
    (tmp_path / "b").symlink_to(tmp_path / "big")
    with pytest.raises(subprocess.CalledProcessError) as failed:
        _run_links([tmp_path / "a", tmp_path / "b"], max_kib, max_links)
    assert failed.value.returncode == 3
    assert failed.value.stdout.splitlines() == [
        f"skillsbench-link copied {tmp_path / 'a'}",
        f"skillsbench-link too-large {tmp_path / 'b'}",
    ]
    assert not (tmp_path / "a").is_symlink()


def test_the_image_listing_reads_the_images_environment() -> None:
    """The image listing's last part is the image's environment (``env``); a value's own line
    breaks give lines that are no setting, and no module name either."""
    listing = "\n".join(
        [
            "PATH=/app/kona:/usr/bin",
            "yaml",
            "numpy",
            ENV_MARK,
            "PIP_CONSTRAINT=/tmp/constraints.txt",
            "NOTE=two",
            "lines continued",
            "HOME=/root",
        ]
    )
    facts = image_facts(listing)
    assert facts.path_dirs == ("/app/kona", "/usr/bin")
    assert facts.modules == frozenset({"yaml", "numpy"})
    assert facts.env == (
        ("PIP_CONSTRAINT", "/tmp/constraints.txt"),
        ("NOTE", "two"),
        ("HOME", "/root"),
    )
    assert image_facts("PATH=/usr/bin\nyaml").env == ()


def test_the_image_listing_reads_the_folders_of_the_images_scripts() -> None:
    listing = "\n".join(
        ["PATH=/usr/bin", "yaml", SCRIPTS_MARK, "/opt/scene", "/root/data", ENV_MARK, "A=1"]
    )
    facts = image_facts(listing)
    assert facts.script_dirs == ("/opt/scene", "/root/data")
    assert facts.modules == frozenset({"yaml"})  # no folder taken for a module name
    assert facts.env == (("A", "1"),)
    many = [f"/srv/f{i}" for i in range(SCRIPT_DIRS_MAX + 1)]
    assert image_facts("\n".join(["PATH=/usr/bin", SCRIPTS_MARK, *many])).script_dirs is None
    assert image_facts("PATH=/usr/bin\nyaml").script_dirs == ()  # an older listing: none


async def test_the_listing_finds_the_images_scripts_in_a_real_sandbox(tmp_path: Path) -> None:
    """Run in a local sandbox of an image with scripts in a data folder and under /opt: the
    folders of its own scripts, never those inside node_modules or a Python environment."""
    from tests.worker.sandbox.support import make_spec, write_task
    from worker.sandbox import sandbox_class

    dockerfile = (
        "FROM python:3.11-slim\nWORKDIR /root\n"
        "RUN mkdir -p /root/data /opt/scene/deep/er /opt/scene/node_modules/three "
        "/srv/venv/lib/python3.11/site-packages/bokeh && echo 1 > /root/data/object.js && "
        "echo 1 > /opt/scene/deep/er/x.mjs && echo 1 > /opt/scene/node_modules/three/i.js && "
        "echo 1 > /srv/venv/lib/python3.11/site-packages/bokeh/b.js && echo 1 > /srv/a.cjs\n"
    )
    task = write_task(tmp_path, dockerfile, skills=False)
    sandbox = sandbox_class("local")(make_spec(task, tmp_path / "state", "local"))
    await sandbox.start()
    try:
        done = await sandbox.exec(["/bin/sh", "-c", IMAGE_MODULES_SCRIPT], timeout_sec=120)
    finally:
        await sandbox.stop()
    assert done.exit_code == 0, done.stderr
    dirs = image_facts(done.stdout).script_dirs
    assert dirs is not None
    assert {"/root/data", "/opt/scene/deep/er", "/srv"} <= set(dirs), dirs
    assert not any("node_modules" in d or "site-packages" in d for d in dirs), dirs
